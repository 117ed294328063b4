package feeds

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/demo"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// testReading is a real Reading committed for the classifier's tests.
func testReading(t testing.TB, tag string) *extractor.Reading {
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

// readingsServer is a live side whose site knows the committed Readings;
// loaded says which tags were asked to load (LoadTag).
func readingsServer(t *testing.T, defaultTag string) (*Service, func() []string) {
	t.Helper()
	rs := map[string]*extractor.Reading{}
	for _, tag := range []string{"v1.20.0", "v1.25.0", "v1.31.0", "v1.37.2"} {
		rs[tag] = testReading(t, tag)
	}
	var mu sync.Mutex
	var loaded []string
	b, err := broker.Open(t.Context(), broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{IngestToken: testToken, DemoPeriod: -1, DefaultTag: defaultTag,
		KnownReadings: func() []*extractor.Reading {
			var out []*extractor.Reading
			for _, r := range rs {
				out = append(out, r)
			}
			return out
		},
		LoadTag: func(tag string) { mu.Lock(); loaded = append(loaded, tag); mu.Unlock() },
	}
	l, err := New(cfg, b, func(tag string) *extractor.Reading { return rs[tag] })
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	l.closeBroker = true
	t.Cleanup(l.Close)
	return l, func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(loaded) }
}

// siteLines are klog lines from every info log site of r's cases, n times
// over, and how many each case got.
func siteLines(r *extractor.Reading, n int, prefix string) ([]relay.Line, map[string]int) {
	var out []relay.Line
	count := map[string]int{}
	at := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	for k := range n {
		seen := map[int]bool{}
		for _, c := range r.Function.Cases {
			for _, ls := range c.Logs {
				// A line shared by several cases (the probe helper's) is
				// logged once per case it serves, with its probe.
				if ls.Severity != "info" || (seen[ls.Line] && !slices.Contains([]string{"liveness", "readiness", "startup"}, c.Key)) {
					continue
				}
				seen[ls.Line] = true
				out = append(out, relay.Line{ID: fmt.Sprintf("%s%d", prefix, len(out)+1), Raw: string(demo.SiteLine(ls, c.Key, at.Add(time.Duration(k)*time.Second)))})
				count[c.Key]++
			}
		}
	}
	return out, count
}

// TestFiredVersionFromLogSites: a journal without its start-up line, from
// a kubelet at v1.31.0, read by a server at v1.37.2: its log sites tell
// v1.31.0; the feed reads at it from then on, and the record of what fired
// is classified anew at it, so every case's count is its lines'.
func TestFiredVersionFromLogSites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, loaded := readingsServer(t, "v1.37.2")
	ts := serveLive(t, l)
	ls, want := siteLines(testReading(t, "v1.31.0"), 3, "a")
	in := dialIngest(t, ctx, ts, "lab")
	wstest.Send(t, ctx, in, ls...)

	var rec FiredRecord
	if !testwait.Until(10*time.Second, func() bool {
		rec = getFired(t, ctx, ts, "lab")
		return rec.VersionFrom != nil && rec.ReadAt == "v1.31.0" && firedCounts(rec).equal(want)
	}) {
		t.Fatalf("record %+v; want read at v1.31.0 from log sites, counts %v", rec, want)
	}
	if *rec.KubeletVersion != "v1.31.0" || *rec.VersionFrom != "log sites" {
		t.Fatalf("version %v from %v", *rec.KubeletVersion, *rec.VersionFrom)
	}
	if !slices.Contains(loaded(), "v1.31.0") {
		t.Errorf("v1.31.0's Reading was not asked for: %v", loaded())
	}
	b := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	m, err := b.next(ctx)
	if err != nil || m.Hello == nil || m.Hello.Tag != "v1.31.0" || m.Hello.VersionFrom != "log sites" || m.Hello.VersionLink != "/k8s/v1.31.0/" {
		t.Fatalf("hello %+v, %v", m.Hello, err)
	}
}

// TestFiredVersionGuessedLater: a journal sent at once, before the site
// had loaded the Reading of its kubelet's tag, is told its version from
// its stored lines once the site has it.
func TestFiredVersionGuessedLater(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, _ := readingsServer(t, "v1.37.2")
	all := l.cfg.KnownReadings
	var mu sync.Mutex
	known := 1 // the default tag's only
	l.cfg.KnownReadings = func() []*extractor.Reading {
		mu.Lock()
		defer mu.Unlock()
		rs := all()
		slices.SortFunc(rs, func(a, b *extractor.Reading) int { return -strings.Compare(a.Tag, b.Tag) })
		return rs[:known]
	}
	l.sitesMu.Lock()
	l.sites = nil
	l.sitesMu.Unlock()
	ts := serveLive(t, l)
	ls, want := siteLines(testReading(t, "v1.31.0"), 3, "a")
	wstest.Send(t, ctx, dialIngest(t, ctx, ts, "lab"), ls...)
	if rec := getFired(t, ctx, ts, "lab"); rec.KubeletVersion != nil {
		t.Fatalf("a version told with v1.37.2's log sites alone: %v", *rec.KubeletVersion)
	}
	mu.Lock()
	known = 4
	mu.Unlock()
	l.sitesMu.Lock()
	l.sitesAt = time.Time{} // as sitesEvery later
	l.sitesMu.Unlock()
	var rec FiredRecord
	if !testwait.Until(10*time.Second, func() bool {
		rec = getFired(t, ctx, ts, "lab")
		return rec.VersionFrom != nil && *rec.VersionFrom == "log sites" && rec.ReadAt == "v1.31.0" && firedCounts(rec).equal(want)
	}) {
		t.Fatalf("record %+v; want v1.31.0 from log sites, counts %v", rec, want)
	}
}

type counts map[string]int

func (c counts) equal(o map[string]int) bool {
	if len(c) != len(o) {
		return false
	}
	for k, v := range c {
		if o[k] != v {
			return false
		}
	}
	return true
}

func firedCounts(rec FiredRecord) counts {
	c := counts{}
	for k, v := range rec.Cases {
		c[k] = v.Count
	}
	return c
}

// TestFiredPreReleaseVersion: a start-up line naming a pre-release is a
// version like any other: the feed reads at it and links to it.
func TestFiredPreReleaseVersion(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, loaded := readingsServer(t, "v1.37.2")
	ts := serveLive(t, l)
	in := dialIngest(t, ctx, ts, "lab")
	wstest.Send(t, ctx, in, relay.Line{ID: "v", Raw: `I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion="v1.38.0-beta.0"`})
	rec := getFired(t, ctx, ts, "lab")
	if rec.KubeletVersion == nil || *rec.KubeletVersion != "v1.38.0-beta.0" || *rec.VersionFrom != "start-up line" || rec.ReadAt != "v1.38.0-beta.0" {
		t.Fatalf("record %+v", rec)
	}
	if !slices.Contains(loaded(), "v1.38.0-beta.0") {
		t.Errorf("v1.38.0-beta.0's Reading was not asked for: %v", loaded())
	}
	b := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	m, err := b.next(ctx)
	if err != nil || m.Hello == nil || m.Hello.VersionLink != "/k8s/v1.38.0-beta.0/" || m.Hello.VersionTag != "v1.38.0-beta.0" {
		t.Fatalf("hello %+v, %v", m.Hello, err)
	}
}
