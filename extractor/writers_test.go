package extractor_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// writerTags are the tags whose derived writers are pinned by golden files:
// the oldest served, the one the container manager's case arrived in, the
// default tag (the newest stable one syncloop serves: extractor.DefaultTag,
// as server/classify's sweep also takes it), and the newest tag the module
// proxy lists, a pre-release the site serves when asked for it.
var writerTags = []string{"v1.20.0", "v1.31.0", extractor.DefaultTag, "v1.38.0-beta.0"}

// renderWriters is the derived writers of every case as the golden files
// hold them: one line per site, "file:line func [note]".
func renderWriters(r *extractor.Reading) string {
	var b strings.Builder
	for _, c := range r.Function.Cases {
		fmt.Fprintf(&b, "case %s (%s)\n", c.Key, c.Channel)
		for _, part := range []struct {
			name  string
			sites []extractor.Site
		}{{"made", c.Made}, {"writer", c.Writers}, {"upstream", c.Upstream}, {"goroutine", c.Goroutine}} {
			for _, s := range part.sites {
				fmt.Fprintf(&b, "  %-9s %s:%d %s", part.name, s.File, s.Line, s.Func)
				if s.Note != "" {
					fmt.Fprintf(&b, " [%s]", s.Note)
				}
				b.WriteString("\n")
			}
		}
	}
	return b.String()
}

// TestWritersGolden compares the derived writers of every case at each tag
// with testdata/writers/TAG.txt. Each golden file was checked against the
// sends found by reading the code at the tag (grep for "<- " on the
// channel's field names, then reading each hit's function); HOW.md says,
// case by case, how, and which sends on other channels were left out on
// purpose. -update rewrites the files; review the diff against HOW.md.
func TestWritersGolden(t *testing.T) {
	extractortest.NeedNetwork(t)
	extractortest.Prefetch(writerTags...)
	for _, tag := range writerTags {
		t.Run(tag, func(t *testing.T) {
			r := extractortest.Reading(t, tag, nil)
			got := renderWriters(r)
			golden := filepath.Join("testdata", "writers", tag+".txt")
			if updating() {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("derived writers at %s differ from %s:\n%s", tag, golden, lineDiff(string(want), got))
			}
			for _, c := range r.Function.Cases {
				for _, s := range append(append(c.Made, c.Writers...), c.Goroutine...) {
					if want := extractor.UpstreamURL(tag, s.File, s.Line, s.Line); s.Upstream != want {
						t.Errorf("%s: upstream %s, want %s", c.Key, s.Upstream, want)
					}
					if s.Code == "" {
						t.Errorf("%s: %s:%d has no code", c.Key, s.File, s.Line)
					}
				}
			}
		})
	}
}

// lineDiff lists the lines only in want (-) and only in got (+).
func lineDiff(want, got string) string {
	in := func(s string) map[string]bool {
		m := map[string]bool{}
		for l := range strings.Lines(s) {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	for l := range strings.Lines(want) {
		if !g[l] {
			b.WriteString("- " + l)
		}
	}
	for l := range strings.Lines(got) {
		if !w[l] {
			b.WriteString("+ " + l)
		}
	}
	return b.String()
}

// TestWritersThroughInterface: the probe cases' channel comes out of
// kl.livenessManager.Updates(), a method of the results.Manager interface;
// the derivation names the implementation it went through and finds the
// send in (*manager).Set, run by each probe worker's goroutine.
func TestWritersThroughInterface(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, extractor.DefaultTag, nil)
	c, ok := r.Function.CaseByKey("liveness")
	if !ok {
		t.Fatal("no liveness case")
	}
	if len(c.Made) != 1 || !strings.Contains(c.Made[0].Note, "via Manager implemented by pkg/kubelet/prober/results.(*manager)") {
		t.Errorf("made = %+v, want one make reached via the results.Manager implementation", c.Made)
	}
	if len(c.Writers) != 1 || c.Writers[0].Func != "pkg/kubelet/prober/results.(*manager).Set" {
		t.Errorf("writers = %+v, want (*manager).Set", c.Writers)
	}
	if len(c.Goroutine) == 0 || !strings.HasPrefix(c.Goroutine[0].Code, "go w.run(") {
		t.Errorf("goroutine = %+v, want the probe worker's go w.run(…)", c.Goroutine)
	}
	// The PLEG at v1.31.0: two implementations of PodLifecycleEventGenerator
	// write the one channel; the evented one only under its feature gate.
	r = extractortest.Reading(t, "v1.31.0", nil)
	c, _ = r.Function.CaseByKey("pleg")
	gated := map[string]string{}
	for _, w := range c.Writers {
		gated[w.Func] = w.Note
	}
	if n, ok := gated["pkg/kubelet/pleg.(*EventedPLEG).sendPodLifecycleEvent"]; !ok || !strings.Contains(n, "feature gate EventedPLEG") {
		t.Errorf("v1.31.0 pleg writers %+v: want the EventedPLEG's send, marked feature-gated", c.Writers)
	}
	if n, ok := gated["pkg/kubelet/pleg.(*GenericPLEG).Relist"]; !ok || strings.Contains(n, "feature gate") {
		t.Errorf("v1.31.0 pleg writers %+v: want the GenericPLEG's send, not gated (it runs with the gate on or off)", c.Writers)
	}
}

// TestWritersTicker: a ticker case is made by time.NewTicker and has no
// send in the module: the runtime writes it.
func TestWritersTicker(t *testing.T) {
	extractortest.NeedNetwork(t)
	for _, tag := range writerTags {
		r := extractortest.Reading(t, tag, nil)
		for _, key := range []string{"sync", "housekeeping"} {
			c, ok := r.Function.CaseByKey(key)
			if !ok {
				t.Fatalf("%s: no %s case", tag, key)
			}
			if len(c.Made) != 1 || !strings.Contains(c.Made[0].Code, "time.NewTicker(") || !strings.Contains(c.Made[0].Note, "ticker") {
				t.Errorf("%s %s: made = %+v, want the ticker", tag, key, c.Made)
			}
			if len(c.Writers) != 0 {
				t.Errorf("%s %s: writers = %+v, want none in the module", tag, key, c.Writers)
			}
		}
	}
}

// TestDerivationAtEveryMinor holds what the golden files pin at four tags to
// every minor's newest version (extractortest.NewestPatches): config's
// file, http and apiserver sources are upstream of the mux; each probe case
// has one goroutine of its own, the go statement starting its worker; a
// probe case's upstream calls are a subset of startup's (the worker type's
// branches the case never takes are not claimed); and a send marked
// unreachable is only ever podStorage's Sync.
func TestDerivationAtEveryMinor(t *testing.T) {
	extractortest.NeedNetwork(t)
	tags := extractortest.NewestPatches(t, 20)
	extractortest.Prefetch(tags...)
	for _, tag := range tags {
		r := extractortest.Reading(t, tag, nil)
		t.Run(tag, func(t *testing.T) {
			checkConfigSources(t, r)
			checkProbeCases(t, r)
		})
	}
}

func checkConfigSources(t *testing.T, r *extractor.Reading) {
	c, ok := r.Function.CaseByKey("config")
	if !ok {
		t.Fatal("no config case")
	}
	fed := map[string]bool{}
	for _, s := range c.Upstream {
		if strings.Contains(s.Note, "feeds (*") {
			fed[filepath.Base(s.File)] = true
		}
	}
	for _, f := range []string{"file.go", "http.go", "apiserver.go"} {
		if !fed[f] {
			t.Errorf("config: no upstream send from the %s source", f)
		}
	}
	for _, w := range c.Writers {
		if strings.Contains(w.Note, "unreachable") && !strings.HasSuffix(strings.ToLower(w.Func), "podstorage).sync") {
			t.Errorf("config: %s marked unreachable", w.Func)
		}
	}
}

func checkProbeCases(t *testing.T, r *extractor.Reading) {
	feeders := map[string]map[string]bool{}
	goLines := map[int]string{}
	for _, key := range []string{"liveness", "readiness", "startup"} {
		c, ok := r.Function.CaseByKey(key)
		if !ok {
			continue
		}
		if len(c.Goroutine) != 1 || !strings.HasSuffix(c.Goroutine[0].File, "prober_manager.go") {
			t.Errorf("%s: goroutines %v, want its own go w.run in prober_manager.go", key, c.Goroutine)
			continue
		}
		if other, dup := goLines[c.Goroutine[0].Line]; dup {
			t.Errorf("%s and %s share the goroutine at line %d", key, other, c.Goroutine[0].Line)
		}
		goLines[c.Goroutine[0].Line] = key
		feeders[key] = map[string]bool{}
		for _, s := range c.Upstream {
			feeders[key][s.File+":"+strconv.Itoa(s.Line)] = true
		}
	}
	for _, key := range []string{"liveness", "readiness"} {
		for site := range feeders[key] {
			if feeders["startup"] != nil && !feeders["startup"][site] {
				t.Errorf("%s claims %s, which startup's worker does not", key, site)
			}
		}
	}
}
