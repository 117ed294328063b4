package feeds

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// benchLines are n journal lines as -v=4 gives them: one in four at a
// case's log site (config, naming a pod), the rest cadvisor's noise.
func benchLines(n int) []relay.Line {
	out := make([]relay.Line, n)
	for i := range out {
		raw := fmt.Sprintf(`I1130 01:02:03.000000    1234 fs.go:100] "readlink /proc/1/fd/%d: permission denied"`, i)
		if i%4 == 0 {
			raw = klogAdd(i, fmt.Sprintf("default/p%d", i%7))
		}
		out[i] = relay.Line{ID: fmt.Sprint("run-", i+1), Raw: raw}
	}
	return out
}

// BenchmarkDeliver is what a replica does with each stored group of 100
// lines (classify, encode for browsers, the hub, the record of what
// fired), against the cost of the record alone (BenchmarkFiredAdd, over
// the same lines, classified): their ratio is the record's share of
// delivery. Ingest also publishes to JetStream, so its share of ingest is
// smaller still.
//
//	go test -run '^$' -bench 'Deliver|FiredAdd' -count 6 ./server/feeds/
func BenchmarkDeliver(b *testing.B) {
	l, _ := newLiveServer(b, Config{})
	f, err := l.feed("bench")
	if err != nil {
		b.Fatal(err)
	}
	lines := benchLines(100)
	b.ReportAllocs()
	b.ResetTimer()
	seq := uint64(1)
	for range b.N {
		f.mu.Lock()
		f.deliverLocked(seq, seq, lines, false)
		f.mu.Unlock()
		seq += uint64(len(lines))
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

func BenchmarkFiredAdd(b *testing.B) {
	lines := benchLines(100)
	cls := classify.New(nil).Stream()
	classified := make([]classify.Line, len(lines))
	for i, in := range lines {
		classified[i] = cls.ClassifyString(in.Raw)
	}
	var r firedRecord
	b.ReportAllocs()
	b.ResetTimer()
	seq := uint64(1)
	for range b.N {
		for i := range classified {
			r.add(seq+uint64(i), seq, &classified[i], lines[i].Raw)
		}
		seq += uint64(len(lines))
		if r.sincePr >= pruneEvery && seq > 1<<20 { // a feed's retention, pruned as the feed does
			r.sincePr = 0
			r.dropBefore(seq - 1<<20)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
}

// BenchmarkCaseLines is a case's lines read back from the stream (GET
// /feeds/{feed}/fired/config/lines) on a feed of 10,000 stored lines, a
// quarter of them config's: all of them, and the last 1,000 (what the
// pane asks for).
//
//	go test -run '^$' -bench CaseLines -count 6 ./server/feeds/
func BenchmarkCaseLines(b *testing.B) {
	_, ts := newLiveServer(b, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	in := dialIngestTB(b, ctx, ts, "bench")
	all := benchLines(10000)
	for i := 0; i < len(all); i += 500 {
		wstest.Send(b, ctx, in, all[i:i+500]...)
	}
	for _, q := range []string{"", "?limit=1000"} {
		b.Run("query="+q, func(b *testing.B) {
			for range b.N {
				resp, err := http.Get(ts.URL + "/feeds/bench/fired/config/lines" + q)
				if err != nil {
					b.Fatal(err)
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || n == 0 {
					b.Fatalf("%s, %d bytes", resp.Status, n)
				}
			}
		})
	}
}

// dialIngestTB is dialIngest for benchmarks.
func dialIngestTB(tb testing.TB, ctx context.Context, ts *httptest.Server, feed string) *websocket.Conn {
	tb.Helper()
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}},
	})
	if err != nil {
		tb.Fatalf("dial ingest: %v", err)
	}
	tb.Cleanup(func() { c.CloseNow() })
	return c
}
