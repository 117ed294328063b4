package feeds

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/syncloop/syncloop/server/internal/wstest"
)

// TestMetricsRegistry: the feeds register their series on the registry
// given (Config.Metrics), with the counts of what was stored and who
// watches; a feed granted a token of its own is never a label value;
// Close takes the series away again.
func TestMetricsRegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	l, ts := newLiveServer(t, Config{Metrics: reg})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	in := dialIngest(t, ctx, ts, "lab")
	wstest.Send(t, ctx, in, lines("a", 1, 3)...)
	b := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	b.lines(ctx, 3)
	l.Own("room-", func(string) (Owned, error) { return Owned{Token: "tok"}, nil })
	if _, err := l.feed("room-secret"); err != nil {
		t.Fatal(err)
	}

	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range families {
		for _, m := range mf.GetMetric() {
			got[series(mf.GetName(), m)] = value(m)
		}
	}
	for name, want := range map[string]float64{
		`syncloop_lines_ingested_total{feed="lab"}`:                3,
		`syncloop_lines_by_case_total{case="none",feed="lab"}`:     3,
		`syncloop_lines_dropped_total{feed="lab"}`:                 0,
		`syncloop_clients{feed="lab"}`:                             1,
		`syncloop_lines_ingested_total{feed="default"}`:            0,
		`syncloop_lines_by_case_total{case="none",feed="default"}`: 0,
		`syncloop_feeds`: 3, // default, lab, and the room's, which is counted, not named
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v), want %v", name, v, ok, want)
		}
	}
	for name := range got {
		if strings.HasPrefix(name, "syncloop_sockets_") {
			t.Errorf("%s: the sockets' counters are package clients', not the feeds'", name)
		}
		if strings.Contains(name, "room-secret") {
			t.Errorf("a feed with a token of its own is a label value: %s", name)
		}
	}

	in.CloseNow() // else Close waits for the relay and the browser to answer its close
	b.c.CloseNow()
	l.Close()
	if families, err := reg.Gather(); err != nil || len(families) != 0 {
		t.Errorf("after Close: %d families (%v), want none", len(families), err)
	}
}

// series is a sample's name and labels as the text format writes them
// (labels sorted by name).
func series(name string, m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return name
	}
	var parts []string
	for _, lp := range m.GetLabel() {
		parts = append(parts, lp.GetName()+`="`+lp.GetValue()+`"`)
	}
	return name + "{" + strings.Join(parts, ",") + "}"
}

func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	}
	return -1
}
