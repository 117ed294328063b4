package feeds

// Metrics: the feeds' series, collected by prometheus/client_golang when
// scraped (Config.Metrics). The browser sockets' counters are package
// clients' (clients.Sockets.Register). An owned feed (a room's, Own) is
// never a label value: its name is a viewer link.

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	ingestedDesc = prometheus.NewDesc("syncloop_lines_ingested_total",
		"Lines stored in a feed (relays, journal and demo).", []string{"feed"}, nil)
	byCaseDesc = prometheus.NewDesc("syncloop_lines_by_case_total",
		`Lines stored in a feed by the case that logged them ("none": no case).`, []string{"feed", "case"}, nil)
	droppedDesc = prometheus.NewDesc("syncloop_lines_dropped_total",
		"Lines browsers that fell behind by more than the feed's history did not get (a skipped marker told them, unless they were closed first).", []string{"feed"}, nil)
	clientsDesc = prometheus.NewDesc("syncloop_clients",
		"Browsers connected to a feed.", []string{"feed"}, nil)
	feedsDesc = prometheus.NewDesc("syncloop_feeds",
		fmt.Sprintf("Feeds the server holds: at most %d, rooms' included, and at most %d tags' demos.", MaxFeeds, maxTagDemos), nil, nil)
)

// collector reads the feeds' counters when scraped: they are the feeds'
// own (a feed's under its lock), not copies kept up to date.
type collector struct{ s *Service }

// Collector is the feeds' series, for a registry of the caller's
// (Config.Metrics registers it on one).
func (s *Service) Collector() prometheus.Collector { return collector{s} }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{ingestedDesc, byCaseDesc, droppedDesc, clientsDesc, feedsDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	s.mu.Lock()
	feeds := slices.SortedFunc(maps.Values(s.feeds), func(a, b *feed) int { return strings.Compare(a.name, b.name) })
	s.mu.Unlock()
	for _, f := range feeds {
		if _, own, _ := s.feedToken(f.name); own {
			continue
		}
		f.mu.Lock()
		ingested, byCase := f.counts.ingested, maps.Clone(f.counts.byCase)
		f.mu.Unlock()
		st := f.hub.Stats()
		ch <- prometheus.MustNewConstMetric(ingestedDesc, prometheus.CounterValue, float64(ingested), f.name)
		// "none" is there from the start: a series that appears with its
		// first line would lose that line to rate().
		if _, ok := byCase[""]; !ok {
			byCase[""] = 0
		}
		for k, n := range byCase {
			ch <- prometheus.MustNewConstMetric(byCaseDesc, prometheus.CounterValue, float64(n), f.name, cmp.Or(k, "none"))
		}
		ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(st.Dropped), f.name)
		ch <- prometheus.MustNewConstMetric(clientsDesc, prometheus.GaugeValue, float64(st.Subscribers), f.name)
	}
	ch <- prometheus.MustNewConstMetric(feedsDesc, prometheus.GaugeValue, float64(len(feeds)))
}
