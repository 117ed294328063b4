package loadtest

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server"
	"github.com/syncloop/syncloop/server/classify"
)

// startServer runs the real site in this process on a loopback port.
func startServer(t *testing.T) string {
	t.Helper()
	srv, err := server.Open(server.Config{
		CacheDir:    t.TempDir(),
		Getenv:      func(string) string { return "" },
		IngestToken: "load-token",
		DemoPeriod:  -1,
		Load: func(context.Context, extractor.Options) (*extractor.Reading, error) {
			return nil, errors.New("this test reads no Kubernetes source")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() { srv.Close(); hs.Close() })
	return hs.URL
}

var sites = []extractor.LogSite{
	{File: "pkg/kubelet/kubelet.go", Line: 2529, Message: "SyncLoop ADD"},
	{File: "pkg/kubelet/kubelet.go", Line: 2613, Message: "SyncLoop (PLEG): event for pod"},
}

// TestSmoke is the load test in small: 3 feeds × 5 readers × 200 lines/s
// for 3 s, with klog lines and with journald entries. Counts are asserted;
// timings are only logged, as a shared machine makes them noisy.
func TestSmoke(t *testing.T) {
	for _, journal := range []bool{false, true} {
		t.Run(map[bool]string{false: "klog", true: "journal"}[journal], func(t *testing.T) { testSmoke(t, journal) })
	}
}

func testSmoke(t *testing.T, journal bool) {
	base := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var log strings.Builder
	res, err := Run(ctx, Options{
		Servers: []string{base}, Token: "load-token",
		Rooms: 3, Readers: 5, Rate: 200, Duration: 3 * time.Second,
		PIDs: []int{os.Getpid()}, Sites: sites, Log: &log, Journal: journal,
	})
	t.Log(log.String())
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res.Print(&out)
	t.Log("\n" + out.String())

	const perFeed = 600
	if res.Sent != 3*perFeed || res.Acked != res.Sent {
		t.Errorf("sent %d, acked %d: want %d each", res.Sent, res.Acked, 3*perFeed)
	}
	if res.Expected != 15*perFeed {
		t.Errorf("expected %d deliveries, want %d", res.Expected, 15*perFeed)
	}
	if res.Delivered+res.Skipped+res.Lost != res.Expected {
		t.Errorf("delivered %d + skipped %d + lost %d != expected %d", res.Delivered, res.Skipped, res.Lost, res.Expected)
	}
	if res.LostKeptUp != 0 || res.Duplicated != 0 || res.Dropped != 0 {
		t.Errorf("lost by readers that kept up %d, duplicated %d, connections dropped %d: want 0", res.LostKeptUp, res.Duplicated, res.Dropped)
	}
	if res.KeptUp+int(min(res.Skipped, 15)) < 15 || res.KeptUp == 0 {
		t.Errorf("%d of 15 readers kept up with %d skipped", res.KeptUp, res.Skipped)
	}
	if res.P50 <= 0 || res.P99 < res.P50 || res.Max < res.P99 {
		t.Errorf("latency p50 %v p99 %v max %v: want 0 < p50 ≤ p99 ≤ max", res.P50, res.P99, res.Max)
	}
	if res.RSSPeak <= 0 || res.ServerCPU <= 0 {
		t.Errorf("RSS %d, CPU %v: /proc not read", res.RSSPeak, res.ServerCPU)
	}
	if err := res.Check(0, 0); err != nil {
		t.Error(err)
	}
}

// A journald entry is what journalctl -o json prints: valid JSON, read by
// the classifier as such, its MESSAGE the kubelet's line with the marker.
func TestJournalEntry(t *testing.T) {
	in := &ingester{run: "r1", feed: "f", room: 3, sites: sites, journal: true}
	now := time.Date(2026, 11, 30, 3, 4, 5, 600000000, time.UTC)
	raw := in.line(7, now)
	var e map[string]string
	if err := json.Unmarshal([]byte(raw), &e); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if e["__REALTIME_TIMESTAMP"] != strconv.FormatInt(now.UnixMicro(), 10) || !strings.HasSuffix(e["MESSAGE"], " lt=r1:7:"+strconv.FormatInt(now.UnixNano(), 10)) || len(raw) < 1000 {
		t.Fatalf("entry (%d bytes): %s", len(raw), raw)
	}
	l := classify.New(nil).Stream().ClassifyString(raw)
	if l.Format != classify.FormatJournalJSON || l.Text != e["MESSAGE"] || l.Case != "pleg" || l.Host != "load-3" {
		t.Fatalf("classified as %+v", l)
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8080", true},
		{"http://127.9.9.9:1", true},
		{"http://[::1]:8080", true},
		{"http://localhost:8080", true},
		{"https://127.0.0.1", true},
		{"http://10.0.0.1:8080", false},
		{"http://example.com", false},
		{"http://localhost.example.com", false},
		{"http://127.0.0.1.nip.io", false},
		{"ws://127.0.0.1:8080", false},
		{"127.0.0.1:8080", false},
		{"", false},
	} {
		err := CheckLoopback(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckLoopback(%q) = %v, want ok=%v", tc.url, err, tc.ok)
		}
	}
	if _, err := Run(context.Background(), Options{Servers: []string{"http://192.0.2.1:80"}, Token: "x", Rooms: 1, Readers: 1, Rate: 1, Duration: time.Second}); err == nil || !strings.Contains(err.Error(), "not on loopback") {
		t.Errorf("Run on a non-loopback server: %v", err)
	}
}

func TestHistogram(t *testing.T) {
	var h hist
	for i := 1; i <= 1000; i++ {
		h.add(time.Duration(i) * time.Millisecond)
	}
	for _, tc := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 500 * time.Millisecond}, {0.99, 990 * time.Millisecond}, {1, time.Second}} {
		got := h.quantile(tc.q)
		if d := got - tc.want; d < -tc.want/30 || d > tc.want/30 {
			t.Errorf("quantile(%v) = %v, want %v ± 3%%", tc.q, got, tc.want)
		}
	}
	if h.max != time.Second {
		t.Errorf("max %v", h.max)
	}
	// Every bucket's middle maps back to the bucket.
	for i := range histBuckets - 1 {
		if j := histIndex(histValue(i)); j != i {
			t.Fatalf("bucket %d: middle %d maps to %d", i, histValue(i), j)
		}
	}
}

func TestReaderTake(t *testing.T) {
	r := &reader{run: "abc", total: 3, seen: make([]uint64, 1)}
	m := []byte("lt=abc:")
	now := time.Unix(100, 0).UnixNano()
	sent := time.Unix(100, 0).Add(-5 * time.Millisecond).UnixNano()
	for _, part := range []string{
		`{"hello":{"feed":"x"}}`,
		`{"seq":7,"line":{"raw":"I1130 x.go:1] \"m\" lt=abc:1:` + itoa(sent) + `"}}`,
		`{"seq":8,"line":{"raw":"I1130 x.go:1] \"m\" lt=abc:1:` + itoa(sent) + `"}}`, // a duplicate
		`{"seq":9,"line":{"raw":"lt=zzz:2:1"}}`,                                      // another run's
		`{"seq":10,"line":{"raw":"lt=abc:4:1"}}`,                                     // out of range
		`{"skipped":2}`,
	} {
		r.take([]byte(part), m, now)
	}
	if r.distinct != 1 || r.dups != 1 || r.skipped != 2 || !r.complete() {
		t.Errorf("distinct %d dups %d skipped %d complete %v: want 1 1 2 true", r.distinct, r.dups, r.skipped, r.complete())
	}
	if r.lat.max != 5*time.Millisecond {
		t.Errorf("latency %v, want 5ms", r.lat.max)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
