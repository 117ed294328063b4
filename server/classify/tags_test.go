package classify

import (
	"path"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/demo"
)

// everyTag is one tag per minor release syncloop serves, from v1.20.0 on.
var everyTag = []string{
	"v1.20.0", "v1.21.0", "v1.22.0", "v1.23.0", "v1.24.0", "v1.25.0", "v1.26.0", "v1.27.0", "v1.28.0",
	"v1.29.0", "v1.30.0", "v1.31.0", "v1.32.0", "v1.33.0", "v1.34.0", "v1.35.0", "v1.36.0", extractor.DefaultTag,
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
// v1.20.0 on, with the extractor, and checks that a line from that site is
// classified to its case: exactly against its own tag's Reading, and by
// message against the default tag's Reading and with no Reading at all.
func TestEveryTag(t *testing.T) {
	def := realReading(t, extractor.DefaultTag)
	tags := everyTag
	if raceEnabled {
		// v1.20 printf, v1.21 structured, v1.25, v1.27 container manager,
		// v1.31 the lab's, v1.36 contextual, the default.
		tags = []string{"v1.20.0", "v1.21.0", "v1.25.0", "v1.27.0", "v1.31.0", "v1.36.0", extractor.DefaultTag}
	}
	for _, tag := range tags {
		t.Run(tag, func(t *testing.T) {
			r := realReading(t, tag)
			own, other, none := New(r, WithClock(clock)), New(def, WithClock(clock)), New(nil, WithClock(clock))
			sites := 0
			for _, cs := range r.Function.Cases {
				for _, ls := range cs.Logs {
					if path.Base(ls.File) != path.Base(r.Function.File) {
						continue
					}
					sites++
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
