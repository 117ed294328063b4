package feeds

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// stageCounts is how many observations each stage of
// syncloop_line_stage_seconds has, and their sums in seconds.
func stageCounts(t *testing.T, reg *prometheus.Registry) (count map[string]uint64, sum map[string]float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	count, sum = map[string]uint64{}, map[string]float64{}
	for _, mf := range families {
		if mf.GetName() != "syncloop_line_stage_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			stage := labelOf(m, "stage")
			count[stage] = m.GetHistogram().GetSampleCount()
			sum[stage] = m.GetHistogram().GetSampleSum()
		}
	}
	return count, sum
}

func labelOf(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// TestLineStages (issue 40): a line's time is split into its stages.
// A relay's line says when it was read and how long journald held it;
// the server histograms those (journald, relay) and its own (server) on
// /metrics, and tells the browser each line's stamps and the message's
// send time, from which the page takes the last stage and says it
// (POST /feeds/{feed}/timing: page), once per client per timingEvery.
func TestLineStages(t *testing.T) {
	reg := prometheus.NewRegistry()
	_, ts := newLiveServer(t, Config{Metrics: reg, Identify: func(r *http.Request) string { return r.Header.Get("X-Test-Client") }})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "lab")
	wstest.Send(t, ctx, in, relay.Line{ID: "v", Raw: `I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion="v1.31.0"`})
	b := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	b.lines(ctx, 1)                                // the version line, as history: the browser is subscribed
	read := time.Now().Add(-30 * time.Millisecond) // the relay read it 30 ms ago
	msg := relay.AppendBatch(nil, []relay.Line{
		{ID: "j1", Raw: `I1130 01:02:03.000000    1234 kubelet.go:1] "one"`, Read: read.UnixMicro(), Age: 250_000},
		{ID: "j2", Raw: `I1130 01:02:03.000000    1234 kubelet.go:1] "two"`}, // an older relay's: no stamps
	})
	if err := in.Write(ctx, websocket.MessageText, msg); err != nil {
		t.Fatal(err)
	}
	var lat struct{ Age, Read, Recv int64 }
	var sent int64 // the send time of the message that carried line one
	for sent == 0 {
		_, data, err := b.c.Read(ctx)
		if err != nil {
			t.Fatalf("browser: %v", err)
		}
		carried := false
		for _, part := range strings.Split(string(data), "\n") {
			var m struct {
				Sent int64 `json:"sent"`
				Lat  *struct {
					Age, Read, Recv int64
				} `json:"lat"`
				Line *struct{ Raw string } `json:"line"`
			}
			if err := json.Unmarshal([]byte(part), &m); err != nil {
				t.Fatalf("a browser message that is no JSON: %q", part)
			}
			if m.Line != nil && strings.Contains(m.Line.Raw, `"one"`) {
				if m.Lat == nil {
					t.Fatalf("the relay's stamped line reached the browser without its stamps: %s", part)
				}
				lat, carried = *m.Lat, true
			}
			if m.Sent != 0 && carried {
				sent = m.Sent
			}
		}
	}
	if lat.Age != 250_000 || lat.Read != read.UnixMicro() || lat.Recv < lat.Read || sent < lat.Recv {
		t.Fatalf("stamps age %d read %d recv %d, message sent %d: want the relay's, then receipt, then send, in order", lat.Age, lat.Read, lat.Recv, sent)
	}
	testwait.For(t, 10*time.Second, "the server stage observed", func() bool {
		n, _ := stageCounts(t, reg)
		return n["server"] >= 1
	})
	n, sum := stageCounts(t, reg)
	if n["journald"] != 1 || sum["journald"] != 0.25 {
		t.Errorf("journald stage: %d observations summing %.3f s, want the one stamped line's 0.25 s", n["journald"], sum["journald"])
	}
	if n["relay"] != 1 || sum["relay"] < 0.03 || sum["relay"] > 5 {
		t.Errorf("relay stage: %d observations summing %.3f s, want one of 30 ms or more", n["relay"], sum["relay"])
	}

	post := func(client, body string) int {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/feeds/lab/timing", strings.NewReader(body))
		req.Header.Set("X-Test-Client", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("a", `{"page":[1200,3400,-5,999999999999]}`); code != http.StatusNoContent {
		t.Fatalf("a page's timings: %d", code)
	}
	if code := post("a", `{"page":[1]}`); code != http.StatusTooManyRequests {
		t.Errorf("the same client again at once: %d, want 429", code)
	}
	if code := post("b", `{"page":"soon"}`); code != http.StatusBadRequest {
		t.Errorf("a body that is no list of µs: %d, want 400", code)
	}
	if code := post("c", `{"page":[`+strings.Repeat("1,", maxTimings)+`1]}`); code != http.StatusBadRequest {
		t.Errorf("%d samples: %d, want 400", maxTimings+1, code)
	}
	n, sum = stageCounts(t, reg)
	if n["page"] != 2 || sum["page"] < 0.0045 || sum["page"] > 0.0047 {
		t.Errorf("page stage: %d observations summing %.4f s, want the two samples in range (1.2 ms, 3.4 ms)", n["page"], sum["page"])
	}
}
