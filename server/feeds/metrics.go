package feeds

// Metrics: the feeds' counters and gauges for /metrics.

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
)

func (l *Service) HandleMetrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		feeds := slices.SortedFunc(maps.Values(l.feeds), func(a, b *feed) int { return strings.Compare(a.name, b.name) })
		l.mu.Unlock()
		type row struct {
			name             string
			ingested         uint64
			byCase           map[string]uint64
			dropped, clients uint64
		}
		rows := make([]row, 0, len(feeds))
		for _, f := range feeds {
			f.mu.Lock()
			rw := row{name: f.name, ingested: f.ingested, byCase: maps.Clone(f.byCase)}
			f.mu.Unlock()
			st := f.hub.Stats()
			rw.dropped, rw.clients = st.Dropped, uint64(st.Subscribers)
			rows = append(rows, rw)
		}
		var b strings.Builder
		metric := func(name, help, typ string, each func(rw row)) {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
			for _, rw := range rows {
				each(rw)
			}
		}
		metric("syncloop_lines_ingested_total", "Lines stored in a feed (relays, journal and demo).", "counter", func(rw row) {
			fmt.Fprintf(&b, "syncloop_lines_ingested_total{feed=%s} %d\n", promQuote(rw.name), rw.ingested)
		})
		metric("syncloop_lines_by_case_total", "Lines stored in a feed by the case that logged them (\"none\": no case).", "counter", func(rw row) {
			for _, k := range slices.Sorted(maps.Keys(rw.byCase)) {
				c := k
				if c == "" {
					c = "none"
				}
				fmt.Fprintf(&b, "syncloop_lines_by_case_total{feed=%s,case=%s} %d\n", promQuote(rw.name), promQuote(c), rw.byCase[k])
			}
		})
		metric("syncloop_lines_dropped_total", "Lines browsers that fell behind by more than the feed's history did not get (a skipped marker told them, unless they were closed first).", "counter", func(rw row) {
			fmt.Fprintf(&b, "syncloop_lines_dropped_total{feed=%s} %d\n", promQuote(rw.name), rw.dropped)
		})
		metric("syncloop_clients", "Browsers connected to a feed.", "gauge", func(rw row) {
			fmt.Fprintf(&b, "syncloop_clients{feed=%s} %d\n", promQuote(rw.name), rw.clients)
		})
		fmt.Fprintf(&b, "# HELP syncloop_feeds Feeds the server holds: at most %d, rooms' included, and at most %d tags' demos.\n# TYPE syncloop_feeds gauge\nsyncloop_feeds %d\n", MaxFeeds, maxTagDemos, len(feeds))
		fmt.Fprintf(&b, "# HELP syncloop_sockets_refused_total Browser sockets refused because their client held --sockets-per-client already.\n# TYPE syncloop_sockets_refused_total counter\nsyncloop_sockets_refused_total %d\n", l.sockets.Refused())
		fmt.Fprintf(&b, "# HELP syncloop_sockets_unanswered_total Browser sockets closed because they did not answer a ping (half-open connections).\n# TYPE syncloop_sockets_unanswered_total counter\nsyncloop_sockets_unanswered_total %d\n", l.sockets.Unanswered())
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		io.WriteString(w, b.String())
	})
}

// promQuote quotes a label value as the Prometheus text format wants.
func promQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}
