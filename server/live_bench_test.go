package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/relay"
)

// BenchmarkFanout is one feed at 5,000 lines/s through the real ingest
// handler to N browsers on real loopback websockets through the real feed
// handler, for 3 s. It reports the latency from the relay's send to each
// browser's receipt (p50, p99), the lines browsers did not get, and the
// process's peak RSS and heap (browsers included: they run in this process).
// clients=1 is the baseline the 200-client figures are read against.
//
//	go test -run '^$' -bench Fanout -benchtime 1x -count 3 ./server/
func BenchmarkFanout(b *testing.B) {
	for _, clients := range []int{1, 200} {
		b.Run(fmt.Sprint("clients=", clients), func(b *testing.B) {
			for range b.N {
				r := runFanout(b, clients, 5000, 3*time.Second)
				b.ReportMetric(r.p50.Seconds()*1000, "p50-ms")
				b.ReportMetric(r.p99.Seconds()*1000, "p99-ms")
				b.ReportMetric(float64(r.lost), "lost-lines")
				b.ReportMetric(float64(r.skippedMarkers), "skipped-markers")
				b.ReportMetric(float64(r.rssPeak)/(1<<20), "rss-peak-MB")
				b.ReportMetric(float64(r.heap)/(1<<20), "heap-MB")
			}
		})
	}
}

type fanoutResult struct {
	p50, p99       time.Duration
	lost           int // lines sent that some browser never got, summed over browsers
	skippedMarkers int
	rssPeak, heap  uint64
}

// latency histogram: 100 µs buckets up to 5 s.
const (
	bucketWidth = 100 * time.Microsecond
	buckets     = int(5 * time.Second / bucketWidth)
)

func runFanout(b *testing.B, clients, perSecond int, dur time.Duration) fanoutResult {
	b.Helper()
	l, ts := newLiveServer(b, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), dur+60*time.Second)
	defer cancel()

	type client struct {
		hist    []uint32
		got     int
		skipped int
		markers int
	}
	cs := make([]*client, clients)
	var wg sync.WaitGroup
	ready := make(chan struct{}, clients)
	for i := range cs {
		c := &client{hist: make([]uint32, buckets+1)}
		cs[i] = c
		conn, _, err := websocket.Dial(ctx, wsURL(ts, "/feeds/bench/ws"), nil)
		if err != nil {
			b.Fatalf("client %d: %v", i, err)
		}
		conn.SetReadLimit(8 << 20)
		wg.Go(func() {
			defer conn.CloseNow()
			ready <- struct{}{}
			for {
				_, data, err := conn.Read(ctx)
				if err != nil {
					return
				}
				now := time.Now().UnixNano()
				for part := range bytes.SplitSeq(data, []byte{'\n'}) {
					if bytes.HasPrefix(part, []byte(`{"skipped":`)) {
						n, _ := strconv.Atoi(string(bytes.TrimSuffix(part[len(`{"skipped":`):], []byte("}"))))
						c.skipped += n
						c.markers++
						continue
					}
					i := bytes.Index(part, []byte(" t="))
					if i < 0 {
						continue
					}
					rest := part[i+3:]
					j := bytes.IndexByte(rest, ' ')
					sent, err := strconv.ParseInt(string(rest[:max(j, 0)]), 10, 64)
					if err != nil {
						continue
					}
					c.got++
					c.hist[min(int(time.Duration(now-sent)/bucketWidth), buckets)]++
				}
			}
		})
	}
	for range clients {
		<-ready
	}

	in, _, err := websocket.Dial(ctx, wsURL(ts, "/feeds/bench/ingest"), &websocket.DialOptions{
		HTTPHeader: map[string][]string{"Authorization": {"Bearer " + testToken}},
	})
	if err != nil {
		b.Fatal(err)
	}
	defer in.CloseNow()
	go func() { // acks: read and dropped; ends when in closes
		for {
			if _, _, err := in.Read(ctx); err != nil {
				return
			}
		}
	}()

	b.ResetTimer()
	const tick = 10 * time.Millisecond
	per := perSecond * int(tick) / int(time.Second)
	total := 0
	t := time.NewTicker(tick)
	end := time.Now().Add(dur)
	for now := range t.C {
		if now.After(end) {
			break
		}
		batch := make([]relay.Line, per)
		sent := time.Now().UnixNano()
		for k := range batch {
			total++
			batch[k] = relay.Line{ID: strconv.Itoa(total), Raw: fmt.Sprintf(
				`I1130 01:02:03.123456    4242 kubelet.go:2500] "SyncLoop (PLEG): event for pod" pod="default/probe-me-%d" event={"ID":"8d8a","Type":"ContainerStarted"} t=%d n=%d`,
				total%50, sent, total)}
		}
		msg, _ := json.Marshal(map[string]any{"lines": batch})
		if err := in.Write(ctx, websocket.MessageText, msg); err != nil {
			b.Fatal(err)
		}
	}
	t.Stop()

	// Wait until every browser has every line, or has been told it skipped some.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		done := l.feeds["bench"].hub.Stats().Next-1 == uint64(total)
		if done {
			// reading c.got races with the readers; settle by time instead
			time.Sleep(500 * time.Millisecond)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
	b.StopTimer()
	cancel()
	wg.Wait()

	var r fanoutResult
	merged := make([]uint64, buckets+1)
	var count uint64
	for _, c := range cs {
		r.lost += total - c.got
		r.skippedMarkers += c.markers
		for i, n := range c.hist {
			merged[i] += uint64(n)
			count += uint64(n)
		}
	}
	pct := func(p float64) time.Duration {
		want := uint64(p * float64(count))
		var acc uint64
		for i, n := range merged {
			acc += n
			if acc >= want && n > 0 {
				return time.Duration(i+1) * bucketWidth
			}
		}
		return 0
	}
	r.p50, r.p99 = pct(0.50), pct(0.99)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.heap = ms.HeapInuse
	r.rssPeak = procStatus("VmHWM")
	b.Logf("%d clients, %d lines at %d/s: p50 %v p99 %v, lost %d (skipped markers %d), peak RSS %d MB, heap %d MB",
		clients, total, perSecond, r.p50, r.p99, r.lost, r.skippedMarkers, r.rssPeak>>20, r.heap>>20)
	return r
}

// procStatus reads a size in bytes from /proc/self/status (0 elsewhere).
func procStatus(key string) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			f := strings.Fields(v)
			if n, err := strconv.ParseUint(f[0], 10, 64); err == nil && len(f) > 1 && f[1] == "kB" {
				return n << 10
			}
		}
	}
	return 0
}
