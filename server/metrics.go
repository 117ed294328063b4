package server

// GET /metrics: one Prometheus registry, made by Build, with which each
// part registers its own collectors; this file adds the rooms' gauges.

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/rooms"
)

// handleMetrics serves the registry in Prometheus's exposition formats.
func (s *Server) handleMetrics() http.Handler {
	return promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{
		ErrorLog:      promLog{s.log},
		ErrorHandling: promhttp.ContinueOnError, // one failing collector does not hide the others
	})
}

// promLog logs promhttp's errors (a collector that failed) as warnings.
type promLog struct{ log *slog.Logger }

func (l promLog) Println(v ...any) {
	l.log.Warn("metrics: " + strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}

// registerServerMetrics registers what no part registers itself yet: the
// rooms' gauges, and the feeds' own exposition.
//
// Until the rooms register their gauges (rooms.ServiceConfig.Metrics) and
// the feeds theirs (feeds.Config.Metrics), they are read here, so no series
// is lost; the branches that convert those packages delete this.
func registerServerMetrics(reg *prometheus.Registry, d *Deps) error {
	if err := reg.Register(roomGauges{d}); err != nil {
		return err
	}
	d.Metrics = prometheus.Gatherers{reg, feedsExposition{d.Feeds}}
	return nil
}

var (
	roomsDesc     = prometheus.NewDesc("syncloop_rooms", "Pair-reading rooms held (not expired).", nil, nil)
	readersDesc   = prometheus.NewDesc("syncloop_room_readers", "Readers connected to rooms.", nil, nil)
	followersDesc = prometheus.NewDesc("syncloop_room_followers", "Readers in rooms following their driver.", nil, nil)
)

// roomGauges reads the rooms' three gauges from one rooms.Service.Counts.
type roomGauges struct{ d *Deps }

func (roomGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- roomsDesc
	ch <- readersDesc
	ch <- followersDesc
}

func (g roomGauges) Collect(ch chan<- prometheus.Metric) {
	held, readers, followers := g.d.Rooms.Counts()
	ch <- prometheus.MustNewConstMetric(roomsDesc, prometheus.GaugeValue, float64(held))
	ch <- prometheus.MustNewConstMetric(readersDesc, prometheus.GaugeValue, float64(readers))
	ch <- prometheus.MustNewConstMetric(followersDesc, prometheus.GaugeValue, float64(followers))
}

// feedsExposition gathers the feeds' metrics from their own text
// exposition (feeds.Service.HandleMetrics), leaving out the socket
// counters (package clients registers those) and room feeds' series
// (their names are viewer links).
type feedsExposition struct{ l *feeds.Service }

func (f feedsExposition) Gather() ([]*dto.MetricFamily, error) {
	rec := httptest.NewRecorder()
	f.l.HandleMetrics().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(rec.Body)
	if err != nil {
		return nil, err
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for name, fam := range fams {
		if strings.HasPrefix(name, "syncloop_sockets_") {
			continue
		}
		kept := fam.Metric[:0]
		for _, m := range fam.Metric {
			if !roomFeed(m) {
				kept = append(kept, m)
			}
		}
		fam.Metric = kept
		out = append(out, fam)
	}
	return out, nil
}

// roomFeed reports whether m is a series of a room's feed.
func roomFeed(m *dto.Metric) bool {
	for _, lp := range m.GetLabel() {
		if lp.GetName() == "feed" && strings.HasPrefix(lp.GetValue(), rooms.FeedPrefix) {
			return true
		}
	}
	return false
}
