package site

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// realSite serves the real Readings of tags (the last is the default),
// loaded before it returns.
func realSite(t testing.TB, tags ...string) *Site {
	t.Helper()
	extractortest.NeedNetwork(t)
	extractortest.Prefetch(tags...)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{}}
	for _, tag := range tags {
		fl.Readings[tag] = extractortest.Reading(t, tag, content.Symbols())
	}
	s, err := New(Config{DefaultTag: tags[len(tags)-1], CacheDir: t.TempDir(), Getenv: func(string) string { return "" }, Load: fl.Load})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tag := range tags {
		if err := s.TagReady(t.Context(), "test", tag); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestDefaultTagView: at the default tag every case has its note, and the
// doc comment's five channels are read.
func TestDefaultTagView(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, extractor.DefaultTag, content.Symbols())
	v, err := newReadingView(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range v.Cases {
		if c.Note.HTML == "" {
			t.Errorf("case %s has no note at %s", c.Key, r.Tag)
		}
	}
	if len(v.Reconcile.Doc) != 5 {
		t.Errorf("doc comment lists %d channels, want the five", len(v.Reconcile.Doc))
	}
}

// TestReconcileAtOlderTag: at an older tag than the default (v1.25.0, as
// the server's TestOtherTags) the doc comment's five channels claim every
// case but those it does not name.
func TestReconcileAtOlderTag(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, "v1.25.0", content.Symbols())
	rv := reconcile(&r.Function)
	claimed := 0
	for _, d := range rv.Doc {
		claimed += len(d.Keys)
	}
	if len(rv.Doc) != 5 || claimed+len(rv.Unnamed) != len(r.Function.Cases) {
		t.Errorf("reconcile: %d doc channels claim %d cases, %d unnamed, of %d", len(rv.Doc), claimed, len(rv.Unnamed), len(r.Function.Cases))
	}
}

func TestAcceptsGzip(t *testing.T) {
	for header, want := range map[string]bool{
		"":                              false,
		"gzip":                          true,
		"gzip, deflate, br":             true,
		"deflate":                       false,
		"GZIP;q=0.5":                    true,
		"gzip;q=0":                      false,
		"gzip; q=0.000":                 false,
		"*":                             true,
		"identity;q=1, *;q=0":           false,
		"br;q=1.0, gzip;q=0.8, *;q=0.1": true,
		"gzip;q=bogus":                  false,
	} {
		if got := acceptsGzip(header); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", header, got, want)
		}
	}
}

// TestReconcile reads doc comments shaped like the kubelet's at old and new
// tags (written here, not copied) against the cases a tag has.
func TestReconcile(t *testing.T) {
	cases := func(keys ...string) []extractor.Case {
		var cs []extractor.Case
		for _, k := range keys {
			ch := k + "Ch"
			if k == "liveness" || k == "readiness" || k == "startup" || k == "container" {
				ch = "kl." + k + "Manager.Updates()"
			}
			cs = append(cs, extractor.Case{Key: k, Channel: ch})
		}
		return cs
	}
	tests := []struct {
		name    string
		doc     string
		cases   []extractor.Case
		doc2key map[string]string // doc channel -> its keys, joined
		unnamed []string
	}{
		{
			name: "old: star bullets, liveness manager",
			doc: "Reads channels.\n\nthe channels are handled as follows:\n\n" +
				"* configCh: hand pods over\n*   plegCh: sync one pod\n* syncCh: sync due pods\n" +
				"* housekeepingCh: clean up\n* liveness manager: sync pods whose\n                    probes failed\n",
			cases:   cases("config", "pleg", "sync", "liveness", "housekeeping"),
			doc2key: map[string]string{"configCh": "config", "plegCh": "pleg", "syncCh": "sync", "housekeepingCh": "housekeeping", "liveness manager": "liveness"},
		},
		{
			name: "new: dash bullets, health manager, an extra case",
			doc: "Arguments:\n1.  configCh: not a bullet\n\nthe channels are handled as follows:\n\n" +
				"  - configCh: hand pods over\n  - plegCh: sync one pod\n  - syncCh: sync due pods\n" +
				"  - housekeepingCh: clean up\n  - health manager: sync pods whose\n    probes failed\n",
			cases:   cases("config", "pleg", "sync", "liveness", "readiness", "startup", "container", "housekeeping"),
			doc2key: map[string]string{"configCh": "config", "plegCh": "pleg", "syncCh": "sync", "housekeepingCh": "housekeeping", "health manager": "liveness readiness startup"},
			unnamed: []string{"container"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rv := reconcile(&extractor.Function{Doc: tt.doc, Cases: tt.cases})
			got := map[string]string{}
			for _, d := range rv.Doc {
				got[d.Name] = strings.Join(d.Keys, " ")
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.doc2key) {
				t.Errorf("doc channels %v, want %v", got, tt.doc2key)
			}
			var unnamed []string
			for _, c := range rv.Unnamed {
				unnamed = append(unnamed, c.Key)
			}
			if fmt.Sprint(unnamed) != fmt.Sprint(tt.unnamed) && len(unnamed)+len(tt.unnamed) > 0 {
				t.Errorf("unnamed %v, want %v", unnamed, tt.unnamed)
			}
			if last := rv.Doc[len(rv.Doc)-1]; !strings.HasSuffix(last.Says, "probes failed") {
				t.Errorf("continuation line lost: %q", last.Says)
			}
		})
	}
}

// BenchmarkCompareVsReadingPage measures the compare page of two cached
// tags (v1.35.4 → v1.36.3: every case changed, the most work a compare
// does), a whole request through the router, against rendering the newer
// tag's reading page (index.html, which the server does when the list of
// readable tags changes), interleaved in one run. It reports the median
// of each (target for the compare: under 50 ms).
func BenchmarkCompareVsReadingPage(b *testing.B) {
	s := realSite(b, "v1.35.4", "v1.36.3")
	st := s.state("v1.36.3")
	tags, _ := s.readableTags()
	path := "/k8s/compare/v1.35.4...v1.36.3"
	rt := chi.NewRouter()
	rt.Method("GET", "/k8s/compare/{range}", s.Compare())
	if w := get(rt, path); w.Code != 200 {
		b.Fatalf("%s: %d", path, w.Code)
	}
	var cmp, page []time.Duration
	for b.Loop() {
		t0 := time.Now()
		w := get(rt, path)
		t1 := time.Now()
		_, err := s.execute("index.html", pageData{Title: "x", Page: pageIndex, Tag: st.tag, Tags: tags, DefaultTag: s.cfg.DefaultTag, V: st.view})
		t2 := time.Now()
		if w.Code != 200 || err != nil {
			b.Fatal(w.Code, err)
		}
		cmp, page = append(cmp, t1.Sub(t0)), append(page, t2.Sub(t1))
	}
	reportMedians(b, "compare-ms", cmp, "reading-page-ms", page)
}

// reportMedians reports the medians of two interleaved series of timings,
// in ms, and the first's over the second's as "ratio" (ns/op means
// nothing here).
func reportMedians(b *testing.B, aUnit string, a []time.Duration, bUnit string, bs []time.Duration) {
	median := func(d []time.Duration) time.Duration {
		slices.Sort(d)
		return d[len(d)/2]
	}
	ma, mb := median(a), median(bs)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(ma.Microseconds())/1000, aUnit)
	b.ReportMetric(float64(mb.Microseconds())/1000, bUnit)
	b.ReportMetric(float64(ma)/float64(mb), "ratio")
}

// BenchmarkHighlightOnce: the reading's function is shown twice (with its
// controls, and without on the compare page). Lexing it once and rendering
// it twice, against lexing it for each, interleaved in one run; it reports
// the median of each and their ratio.
func BenchmarkHighlightOnce(b *testing.B) {
	extractortest.NeedNetwork(b)
	r := extractortest.Reading(b, extractor.DefaultTag, content.Symbols())
	f := &r.Function
	var once, twice []time.Duration
	for b.Loop() {
		t0 := time.Now()
		toks, err := tokenise(f.Text)
		if err != nil {
			b.Fatal(err)
		}
		toks.render(f.DocStart, r.Defs.Loop)
		toks.render(f.DocStart, nil)
		t1 := time.Now()
		if _, err := highlightRefs(f.Text, f.DocStart, r.Defs.Loop); err != nil {
			b.Fatal(err)
		}
		if _, err := highlightRefs(f.Text, f.DocStart, nil); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		once, twice = append(once, t1.Sub(t0)), append(twice, t2.Sub(t1))
	}
	reportMedians(b, "once-ms", once, "twice-ms", twice)
}
