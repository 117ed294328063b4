package rooms

// The rooms' gauges, registered on ServiceConfig.Metrics. Their names are
// the ones /metrics has always had. A room's id (its viewer link) is never
// a label.

import "github.com/prometheus/client_golang/prometheus"

var (
	roomsDesc     = prometheus.NewDesc("syncloop_rooms", "Pair-reading rooms held (not expired).", nil, nil)
	readersDesc   = prometheus.NewDesc("syncloop_room_readers", "Readers connected to rooms.", nil, nil)
	followersDesc = prometheus.NewDesc("syncloop_room_followers", "Readers in rooms following their driver.", nil, nil)
)

// collector reads the gauges from the service when scraped (Counts).
type collector struct{ rs *Service }

func (rs *Service) collector() prometheus.Collector { return collector{rs} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- roomsDesc
	ch <- readersDesc
	ch <- followersDesc
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	held, readers, followers := c.rs.Counts()
	ch <- prometheus.MustNewConstMetric(roomsDesc, prometheus.GaugeValue, float64(held))
	ch <- prometheus.MustNewConstMetric(readersDesc, prometheus.GaugeValue, float64(readers))
	ch <- prometheus.MustNewConstMetric(followersDesc, prometheus.GaugeValue, float64(followers))
}
