package classify

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/semver"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/demo"
)

// sweepTags are the tags TestEveryTag reads: v1.N.0 for every minor from
// extractor.MinTag's to the default tag's (the newest syncloop serves), and
// the default tag itself, the Reading the others are also classified against.
func sweepTags(tb testing.TB) []string {
	minor := func(tag string) int {
		_, m, _ := strings.Cut(semver.MajorMinor(tag), ".")
		n, err := strconv.Atoi(m)
		if err != nil {
			tb.Fatalf("tag %s: %v", tag, err)
		}
		return n
	}
	var tags []string
	for m := minor(extractor.MinTag); m <= minor(extractor.DefaultTag); m++ {
		tags = append(tags, fmt.Sprintf("v1.%d.0", m))
	}
	if !slices.Contains(tags, extractor.DefaultTag) {
		tags = append(tags, extractor.DefaultTag)
	}
	return tags
}

// realReading is the Reading of tag, extracted from its real module zip.
func realReading(t testing.TB, tag string) *extractor.Reading {
	t.Helper()
	extractortest.NeedNetwork(t)
	return extractortest.Reading(t, tag, nil)
}

// siteLine is a klog text line as the kubelet at the Reading's tag would
// print it from log site ls of case key.
func siteLine(ls extractor.LogSite, key string) string {
	return string(demo.SiteLine(ls, key, time.Date(2026, 11, 30, 1, 2, 3, 123456000, time.UTC)))
}

// TestEveryTag reads every log site of every case at every minor tag from
// v1.20.0 on (sweepTags), with the extractor, and checks that a line from
// that site is classified to its case: exactly against its own tag's
// Reading, and by message against the default tag's Reading and with no
// Reading at all. It is what keeps the hand-typed table (table.go) true.
func TestEveryTag(t *testing.T) {
	extractortest.NeedNetwork(t)
	tags := sweepTags(t)
	extractortest.Prefetch(tags...)
	def := realReading(t, extractor.DefaultTag)
	var mu sync.Mutex
	used := map[*rule][]string{}       // the tags at which a rule matched a log site
	t.Run("tags", func(t *testing.T) { // returns when its parallel subtests are done
		for _, tag := range tags {
			t.Run(tag, func(t *testing.T) {
				t.Parallel() // extractions are independent and CPU-bound: -parallel (GOMAXPROCS) at once
				r := realReading(t, tag)
				own, other, none := New(r, WithClock(clock)), New(def, WithClock(clock)), New(nil, WithClock(clock))
				sites := 0
				for _, cs := range r.Function.Cases {
					for _, ls := range cs.Logs {
						if path.Base(ls.File) != path.Base(r.Function.File) {
							continue
						}
						sites++
						if rl := builtinRule(ls.Message, true); rl != nil {
							mu.Lock()
							used[rl] = append(used[rl], tag)
							mu.Unlock()
						}
						line := siteLine(ls, cs.Key)
						if l := own.Classify([]byte(line)); l.Case != cs.Key || l.Match != MatchExact || l.SourceLine != ls.Line {
							t.Errorf("own tag: %s\n  case %q match %q source line %d; want %q exact %d", line, l.Case, l.Match, l.SourceLine, cs.Key, ls.Line)
						}
						if l := other.Classify([]byte(line)); l.Case != cs.Key {
							t.Errorf("against %s: %s\n  case %q match %q; want %q", def.Tag, line, l.Case, l.Match, cs.Key)
						}
						if l := none.Classify([]byte(line)); l.Case != cs.Key || l.Match != MatchMessage {
							t.Errorf("no Reading: %s\n  case %q match %q; want %q by message", line, l.Case, l.Match, cs.Key)
						}
					}
				}
				if len(r.Function.Cases) < 5 || sites < 10 {
					t.Errorf("%d cases, %d log sites: the extractor found too little", len(r.Function.Cases), sites)
				}
			})
		}
	})
	if t.Failed() {
		return
	}
	// A rule no log site at any tag matches is a guess, not a reading of
	// the source.
	for i := range builtin {
		if rl := &builtin[i]; len(used[rl]) == 0 {
			t.Errorf("table rule %q (case %q) matches no log site in kubelet.go at %s–%s", rl.prefix, rl.key, tags[0], tags[len(tags)-1])
		}
	}
}

// TestFixtureReadings checks the hand-made Readings in testdata against the
// extractor's, so the tests that use them test the real thing.
func TestFixtureReadings(t *testing.T) {
	for _, tag := range []string{"v1.20.0", "v1.25.0", "v1.31.0", "v1.37.2"} {
		t.Run(tag, func(t *testing.T) {
			want, got := realReading(t, tag), readingFor(t, tag)
			if len(got.Function.Cases) != len(want.Function.Cases) {
				t.Fatalf("%d cases, extractor %d", len(got.Function.Cases), len(want.Function.Cases))
			}
			for i, c := range got.Function.Cases {
				w := want.Function.Cases[i]
				if c.Key != w.Key || c.Start != w.Start || c.End != w.End || len(c.Logs) != len(w.Logs) {
					t.Errorf("case %s %d-%d %d logs; extractor %s %d-%d %d logs", c.Key, c.Start, c.End, len(c.Logs), w.Key, w.Start, w.End, len(w.Logs))
					continue
				}
				for j, l := range c.Logs {
					if wl := w.Logs[j]; l.Line != wl.Line || l.Message != wl.Message || l.Style != wl.Style || l.Verbosity != wl.Verbosity || l.Severity != wl.Severity {
						t.Errorf("case %s log %d: %+v; extractor %+v", c.Key, j, l, wl)
					}
				}
			}
		})
	}
}
