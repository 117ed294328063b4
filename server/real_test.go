package server

import (
	"fmt"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// realReading is the real Reading of the default tag, with the notes'
// symbols resolved, shared by the tests of the process.
func realReading(t testing.TB) *extractor.Reading {
	t.Helper()
	extractortest.NeedNetwork(t)
	return extractortest.Reading(t, extractor.DefaultTag, content.Symbols())
}

// serveReal serves Reading r over HTTP from a server tuned by tune (nil:
// the defaults), once r's tag has loaded.
func serveReal(t testing.TB, r *extractor.Reading, tune func(*Config)) *httptest.Server {
	t.Helper()
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	cfg := Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }}
	if tune != nil {
		tune(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// newRealServer serves the real Reading of the default tag.
func newRealServer(t testing.TB) *Server {
	t.Helper()
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	return s
}

// TestDefaultTagIsComplete: at the default tag every symbol a note links
// to resolves and the page shows no placeholder (every case's note:
// site.TestDefaultTagView).
func TestDefaultTagIsComplete(t *testing.T) {
	t.Parallel()
	r := realReading(t)
	for _, sym := range content.Symbols() {
		if s, ok := r.Symbols[sym]; !ok || !s.Found {
			t.Errorf("sym:%s does not resolve at %s", sym, r.Tag)
		}
	}
	s := newRealServer(t)
	body := get(t, s, "/k8s/"+r.Tag+"/").Body.String()
	if strings.Contains(body, "No note yet") {
		t.Error("the default tag's page shows a \"no note yet\" placeholder")
	}
	// The worksheet names every case's writer (derived from the source at the tag).
	ws := get(t, s, "/k8s/"+r.Tag+"/worksheet.md").Body.String()
	for _, c := range r.Function.Cases {
		if !strings.Contains(ws, "- **"+c.Key+"** (") {
			t.Errorf("the worksheet has no line for case %s", c.Key)
		}
	}
	if strings.Contains(ws, "written by ____") {
		t.Errorf("the default tag's worksheet leaves a writer blank:\n%s", ws)
	}
	for _, c := range r.Function.Cases {
		if !strings.Contains(body, `id="case-`+c.Key+`"`) {
			t.Errorf("no block for case %s", c.Key)
		}
	}
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`id="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		if seen[m[1]] {
			t.Errorf("id %q appears twice", m[1])
		}
		seen[m[1]] = true
	}
	for n := r.Function.DocStart; n <= r.Function.End; n++ {
		if !seen[fmt.Sprintf("L%d", n)] {
			t.Errorf("line %d has no id", n)
		}
	}
}

// TestOtherTags renders an older tag than the default: every case gets a
// block, the doc comment's channels map to cases, and a note whose case is
// absent (container before v1.31.0) is listed, not hidden. (One tag only:
// TestReconcile covers the older doc comment's wording.)
func TestOtherTags(t *testing.T) {
	t.Parallel()
	tags := []string{"v1.25.0"}
	for _, tag := range tags {
		t.Run(tag, func(t *testing.T) {
			extractortest.NeedNetwork(t)
			r := extractortest.Reading(t, tag, content.Symbols())
			fl := &fixture.Loader{Readings: map[string]*extractor.Reading{tag: r}}
			s, err := Open(Config{DefaultTag: tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			waitLoaded(t, s, tag)
			w := get(t, s, "/k8s/"+tag+"/")
			if w.Code != 200 {
				t.Fatalf("%d: %.300s", w.Code, w.Body)
			}
			body := w.Body.String()
			if n := strings.Count(body, `<section class="seg case"`); n != len(r.Function.Cases) {
				t.Errorf("%d case blocks, want %d", n, len(r.Function.Cases))
			}
			_, hasContainer := r.Function.CaseByKey("container")
			if listed := strings.Contains(body, `id="absent-container"`); listed == hasContainer {
				t.Errorf("container case present %v, listed as not at this tag %v", hasContainer, listed)
			}
		})
	}
}
