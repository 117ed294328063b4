package server

// serve --quiz: a course's server serves no page with the site's notes
// or answers, rooms or not; the same pages of a server without it have
// them (so that the test tests).

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

func TestQuizServer(t *testing.T) {
	t.Parallel()
	// The fixture's cases with a writer each, as an extracted tag's have.
	r := *fixture.Reading(t)
	r.Function.Cases = slices.Clone(r.Function.Cases)
	for i := range r.Function.Cases {
		r.Function.Cases[i].Writers = []extractor.Site{{Func: "pkg/kubelet/config.(*podStorage).Merge", File: "pkg/kubelet/config/config.go", Line: 42}}
	}
	other := r
	other.Tag = "v1.31.0"
	withWriters := func(c *Config) {
		c.Load = (&fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: &r, other.Tag: &other}}).Load
	}
	ps, plain := newRoomServer(t, "", withWriters)
	qs, quiz := newRoomServer(t, "", func(c *Config) { withWriters(c); c.Quiz = true })
	base := "/k8s/" + fixture.Tag + "/"
	for _, s := range []*Server{ps, qs} {
		s.site.Load("v1.31.0") // for the compare
		waitLoaded(t, s, "v1.31.0")
	}

	// What the site's answers look like in a page, and where they are.
	answers := []struct{ page, mark string }{
		{base, `class="prose note"`},
		{base, `class="written-by"`},
		{base, `class="answer-key"`},
		{base + "pod-workers", `class="prose note-wide"`},
		{base, `class="second-reading"`}, // it says where the two sets are
		{"/k8s/compare/v1.31.0..." + fixture.Tag, `<summary>Note: `},
	}
	for _, a := range answers {
		code, body := httpGet(t, plain.URL+a.page)
		if code != 200 || !strings.Contains(body, a.mark) {
			t.Fatalf("without --quiz, %s: %d, %q missing: the test would test nothing", a.page, code, a.mark)
		}
		code, body = httpGet(t, quiz.URL+a.page)
		if code != 200 || strings.Contains(body, a.mark) {
			t.Errorf("with --quiz, %s: %d, holds %q", a.page, code, a.mark)
		}
	}
	if _, body := httpGet(t, quiz.URL+base); !strings.Contains(body, "hides the site's notes") {
		t.Error("with --quiz the reading page does not say why the notes are missing")
	}

	for _, p := range []string{"answer-key.md", "worksheet.md"} {
		if code, body := httpGet(t, plain.URL+base+p); code != 200 || !strings.Contains(body, "pkg/") {
			t.Fatalf("without --quiz, %s: %d", p, code)
		}
		code, body := httpGet(t, quiz.URL+base+p)
		if code != http.StatusForbidden || !strings.Contains(body, "This course hides the answer key") || strings.Contains(body, "pkg/kubelet/pleg") {
			t.Errorf("with --quiz, %s: %d %.300q; want 403 and a page saying the course hides it", p, code, body)
		}
	}

	// reading.json keeps the source, not who writes each channel nor
	// where the two sets are.
	writers := func(ts string) (cases, writers, sets int) {
		_, body := httpGet(t, ts+base+"reading.json")
		var r struct {
			Function struct {
				Cases []struct {
					Writers, Made, Upstream []json.RawMessage
				}
			}
			TwoSets []json.RawMessage `json:"two_sets"`
		}
		if err := json.Unmarshal([]byte(body), &r); err != nil {
			t.Fatal(err)
		}
		for _, c := range r.Function.Cases {
			writers += len(c.Writers) + len(c.Made) + len(c.Upstream)
		}
		return len(r.Function.Cases), writers, len(r.TwoSets)
	}
	if c, w, s := writers(plain.URL); c == 0 || w == 0 || s == 0 {
		t.Fatalf("without --quiz reading.json has %d cases, %d writers, %d set decls", c, w, s)
	}
	if c, w, s := writers(quiz.URL); c == 0 || w != 0 || s != 0 {
		t.Errorf("with --quiz reading.json has %d cases, %d writers, %d set decls; want the cases and none of the rest", c, w, s)
	}

	// A room's pages, of no class, hide them too.
	room, _ := createRoom(t, quiz)
	code, body := httpGet(t, quiz.URL+"/rooms/"+room)
	if code != 200 || strings.Contains(body, `class="prose note"`) || strings.Contains(body, `class="answer-key"`) || !strings.Contains(body, "data-hide-notes") {
		t.Errorf("with --quiz, a room's page: %d, notes or answer key shown, or not marked hidden", code)
	}
}
