package demo

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/classify"
)

// fixtureReading is a Reading written for the classify tests (cases and log
// sites only), checked there against the extractor's.
func fixtureReading(t *testing.T, tag string) *extractor.Reading {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "classify", "testdata", "reading-"+tag+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r extractor.Reading
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// extracted is the extractor's Reading of tag from the module cache; the
// test is skipped when the zip is absent, except under CI, which fetches it.
func extracted(t *testing.T, tag string) *extractor.Reading {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "cache", "download", "k8s.io", "kubernetes", "@v", tag+".zip")
	if _, err := os.Stat(p); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("%s not in the module cache; `go mod download k8s.io/kubernetes@%s` or CI=true", tag, tag)
		}
		cmd := exec.Command("go", "mod", "download", "k8s.io/kubernetes@"+tag)
		cmd.Dir = t.TempDir()
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	z, err := zip.OpenReader(p)
	if err != nil {
		t.Fatal(err)
	}
	defer z.Close()
	sub, err := fs.Sub(z, extractor.Module+"@"+tag)
	if err != nil {
		t.Fatal(err)
	}
	r, err := extractor.Extract(sub, tag, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// run plays the feed for the given scenario time, stamping lines with a
// clock that advances by the feed's own delays.
func run(f *Feed, d time.Duration, each func(line []byte, key string, at time.Time)) {
	now := time.Date(2026, 11, 30, 2, 3, 4, 123456000, time.UTC)
	end := now.Add(d)
	for now.Before(end) {
		line, key, wait := f.next(now)
		each(line, key, now)
		now = now.Add(wait)
	}
}

// TestDemoClassifiesExactly feeds every demo line to the classifier with
// the same Reading: each must land exactly on the case of the log site it
// was made from, and noise on none.
func TestDemoClassifiesExactly(t *testing.T) {
	for _, tt := range []struct {
		tag       string
		reading   func(*testing.T, string) *extractor.Reading
		wantCases []string
	}{
		{"v1.37.2", fixtureReading, []string{"config", "container", "housekeeping", "liveness", "pleg", "readiness", "startup", "sync"}},
		{"v1.31.0", fixtureReading, []string{"config", "container", "housekeeping", "liveness", "pleg", "readiness", "startup", "sync"}},
		{"v1.25.0", fixtureReading, []string{"config", "housekeeping", "liveness", "pleg", "readiness", "startup", "sync"}},
		{"v1.20.0", fixtureReading, []string{"config", "housekeeping", "liveness", "pleg", "sync"}},
		{"v1.21.0", extracted, []string{"config", "housekeeping", "liveness", "pleg", "readiness", "startup", "sync"}},
		{"v1.36.0", extracted, []string{"config", "container", "housekeeping", "liveness", "pleg", "readiness", "startup", "sync"}},
	} {
		t.Run(tt.tag, func(t *testing.T) {
			r := tt.reading(t, tt.tag)
			c := classify.New(r, classify.WithClock(func() time.Time { return time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC) }))
			seen := map[string]int{}
			lines := 0
			var lastHK time.Time
			run(New(r, 42), 3*time.Minute, func(line []byte, key string, at time.Time) {
				lines++
				// The clock advanced by the feed's waits must keep the
				// scenario's rhythm: housekeeping every 2 s exactly.
				if bytes.Contains(line, []byte("SyncLoop (housekeeping)")) && !bytes.Contains(line, []byte("end")) {
					if !lastHK.IsZero() && at.Sub(lastHK) != 2*time.Second {
						t.Errorf("housekeeping %v after the last one, want 2s", at.Sub(lastHK))
					}
					lastHK = at
				}
				l := c.Classify(line)
				if l.Format != classify.FormatKlog || !l.Time.Equal(at.Truncate(time.Microsecond)) {
					t.Errorf("%s: format %q time %v, want klog at %v", line, l.Format, l.Time, at)
				}
				if l.Case != key || key != "" && l.Match != classify.MatchExact {
					t.Errorf("%s\n  classified %q (%s), made from %q", line, l.Case, l.Match, key)
				}
				if key != "" && !slices.Equal(l.Pods, []string{"default/probe-me"}) && !strings.Contains(l.Message, "housekeeping") {
					t.Errorf("%s: pods %q", line, l.Pods)
				}
				seen[l.Case]++
			})
			var got []string
			for k := range seen {
				if k != "" {
					got = append(got, k)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.wantCases) {
				t.Errorf("cases seen %q, want %q (counts %v)", got, tt.wantCases, seen)
			}
			if seen[""] == 0 || seen[""] > lines*3/4 {
				t.Errorf("%d of %d lines are noise", seen[""], lines)
			}
			// Housekeeping every 2 s: about 90 starts in 3 minutes.
			if n := seen["housekeeping"]; n < 80 {
				t.Errorf("%d housekeeping lines in 3 minutes", n)
			}
		})
	}
}

func TestDemoDeterministic(t *testing.T) {
	r := fixtureReading(t, "v1.37.2")
	play := func(seed int64) []byte {
		var b bytes.Buffer
		run(New(r, seed), time.Minute, func(line []byte, _ string, _ time.Time) {
			b.Write(line)
			b.WriteByte('\n')
		})
		return b.Bytes()
	}
	a, b := play(7), play(7)
	if !bytes.Equal(a, b) {
		t.Error("two feeds with seed 7 differ")
	}
	if bytes.Equal(a, play(8)) {
		t.Error("seeds 7 and 8 give the same feed")
	}
}

func TestDemoScenario(t *testing.T) {
	r := fixtureReading(t, "v1.37.2")
	var seq []string
	var ats []time.Duration
	start := time.Date(2026, 11, 30, 2, 3, 4, 123456000, time.UTC)
	run(New(r, 1), 40*time.Second, func(line []byte, key string, at time.Time) {
		if key == "" {
			return
		}
		msg := string(line[bytes.IndexByte(line, ']')+2:])
		seq = append(seq, msg)
		ats = append(ats, at.Sub(start))
	})
	idx := func(prefix string) int {
		return slices.IndexFunc(seq, func(s string) bool { return strings.HasPrefix(s, prefix) })
	}
	add, startup, started, live, died := idx(`"SyncLoop ADD"`), idx(`"SyncLoop (probe)" probe="startup" status="unhealthy"`),
		idx(`"SyncLoop (probe)" probe="startup" status="started"`), idx(`"SyncLoop (probe)" probe="liveness"`),
		idx(`"SyncLoop (PLEG): event for pod" pod="default/probe-me" event={"ID":`)
	if add < 0 || startup < add || started < startup || live < started || died < 0 {
		t.Fatalf("scenario order: add %d startup %d started %d liveness %d pleg %d\n%s", add, startup, started, live, died, strings.Join(seq, "\n"))
	}
	if ats[live] < 9*time.Second || ats[live] > 13*time.Second {
		t.Errorf("first liveness failure at %v, want about 11 s", ats[live])
	}
	n := 0
	for _, s := range seq {
		if strings.HasPrefix(s, `"SyncLoop ADD"`) {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d ADD lines, want 1", n)
	}
	hk := idx(`"SyncLoop (housekeeping)"`)
	if hk < 0 || !strings.HasPrefix(seq[hk+1], `"SyncLoop (housekeeping) end" duration=`) && !strings.HasPrefix(seq[hk+2], `"SyncLoop (housekeeping) end"`) {
		t.Errorf("housekeeping without its end line")
	}
}

func TestDemoNoReading(t *testing.T) {
	f := New(nil, 1)
	c := classify.New(nil)
	for range 200 {
		line, wait := f.Next(time.Now())
		if len(line) == 0 || wait < 0 || wait > 5*time.Second {
			t.Fatalf("line %q wait %v", line, wait)
		}
		if l := c.Classify(line); l.Case != "" {
			t.Errorf("%s: case %q without a Reading", line, l.Case)
		}
	}
}

func TestSprintf(t *testing.T) {
	for _, tt := range []struct {
		format string
		args   []arg
		want   string
	}{
		{`SyncLoop (ADD, %q): %q`, []arg{{s: "api"}, {s: "p_ns(u)"}}, `SyncLoop (ADD, "api"): "p_ns(u)"`},
		{`SyncLoop (SYNC): %d pods; %s`, []arg{{s: "1", raw: true}, {s: "p_ns(u)", raw: true}}, `SyncLoop (SYNC): 1 pods; p_ns(u)`},
		{`SyncLoop (PLEG): %q, event: %#v`, []arg{{s: "p"}, {s: "&e{}", raw: true}}, `SyncLoop (PLEG): "p", event: &e{}`},
		{`100%% %v %v`, []arg{{s: "a"}}, `100% a ?`},
		{`trailing %`, nil, `trailing %`},
	} {
		if got := sprintf(tt.format, tt.args); got != tt.want {
			t.Errorf("sprintf(%q) = %q, want %q", tt.format, got, tt.want)
		}
	}
}
