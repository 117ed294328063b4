package feeds

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/loadtest"
)

// BenchmarkFanout is one feed at 5,000 lines/s through the real ingest
// handler to N browsers on real loopback websockets through the real feed
// handler, for 3 s, driven by the load tool (server/loadtest) in this
// process. It reports the latency from the relay's send to each browser's
// receipt (p50, p99), the lines browsers did not get, and the process's
// peak RSS and heap (browsers included: they run in this process).
// clients=1 is the baseline the 200-client figures are read against.
//
//	go test -run '^$' -bench Fanout -benchtime 1x -count 3 ./server/feeds/
func BenchmarkFanout(b *testing.B) {
	for _, readers := range []int{1, 200} {
		b.Run(fmt.Sprint("clients=", readers), func(b *testing.B) {
			for range b.N {
				_, ts := newLiveServer(b, Config{Sockets: clients.NewSockets(1<<20, 0)}) // every reader comes from 127.0.0.1
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				b.ResetTimer()
				r, err := loadtest.Run(ctx, loadtest.Options{
					Servers: []string{ts.URL}, Token: testToken, PIDs: []int{os.Getpid()},
					Rooms: 1, Readers: readers, Rate: 5000, Duration: 3 * time.Second,
					Sites: []extractor.LogSite{{File: "pkg/kubelet/kubelet.go", Line: 2500, Message: "SyncLoop (PLEG): event for pod"}},
				})
				b.StopTimer()
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				var out strings.Builder
				r.Print(&out)
				b.Logf("\n%s", out.String())
				b.ReportMetric(r.P50.Seconds()*1000, "p50-ms")
				b.ReportMetric(r.P99.Seconds()*1000, "p99-ms")
				b.ReportMetric(float64(r.Lost), "lost-lines")
				b.ReportMetric(float64(r.Skipped), "skipped-lines")
				b.ReportMetric(float64(r.RSSPeak)/(1<<20), "rss-peak-MB")
				b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "heap-MB")
			}
		})
	}
}
