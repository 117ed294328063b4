package feeds

// Where a journal line's time goes, from journald to the page, in four
// stages, each a histogram on /metrics (syncloop_line_stage_seconds) and,
// for a reader who asks, in the pane (live.js "Timing"):
//
//	journald  the entry's __REALTIME_TIMESTAMP → the relay read it (relay.Line.Age)
//	relay     the relay read it → this server received it (Line.Read → Line.Recv)
//	server    received → written to a browser's socket (hub.Entry.At → sendLines)
//	page      written → the page had it (the page says: POST /feeds/{feed}/timing)
//
// A browser message carries each line's stamps ("lat": age, read, recv)
// and its own send time ({"sent":µs,"since":µs}: since is when the
// browser's socket opened; a line received before it is history, which
// waited for the browser, not for the server), so the page can split a
// line's time itself. Stages across two machines (relay → server, server → page)
// count their clocks' difference too: on a cluster with NTP, milliseconds.
// The server stage is observed once per browser message (its oldest
// line), not per line per browser: at 50 feeds × 10 browsers × 1,000
// lines/s a per-line observation would cost more than the send.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/relay"
)

var stageBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// latency is the feeds' four stage histograms.
type latency struct {
	vec                           *prometheus.HistogramVec
	journald, relay, server, page prometheus.Observer
}

func newLatency() *latency {
	vec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "syncloop_line_stage_seconds",
		Help: "Where a journal line's time goes: journald (its realtime stamp to the relay's read), relay (read to this server's receipt), " +
			"server (receipt to a browser socket's write, once per message) and page (the write to the page, as pages say).",
		Buckets: stageBuckets,
	}, []string{"stage"})
	return &latency{vec: vec,
		journald: vec.WithLabelValues("journald"), relay: vec.WithLabelValues("relay"),
		server: vec.WithLabelValues("server"), page: vec.WithLabelValues("page")}
}

func micros(us int64) float64 { return float64(us) / 1e6 }

// arrived stamps lines with their receipt (now) and observes the stages
// before it: journald's (when the line says its age) and the relay's
// (when it says when it was read; a relay whose clock is ahead reads as 0).
func (l *latency) arrived(lines []relay.Line, now time.Time) {
	recv := now.UnixMicro()
	for i := range lines {
		in := &lines[i]
		in.Recv = recv
		if in.Age > 0 {
			l.journald.Observe(micros(in.Age))
		}
		if in.Read > 0 {
			l.relay.Observe(micros(max(0, recv-in.Read)))
		}
	}
}

// sent observes the server stage of a browser message whose oldest line
// was received at recv (0: none was from a journal).
func (l *latency) sent(recv int64, now time.Time) {
	if recv > 0 {
		l.server.Observe(micros(max(0, now.UnixMicro()-recv)))
	}
}

// maxTimings is how many page samples one POST /feeds/{feed}/timing may
// carry; a sample over maxPageStage is dropped (a page asleep in a
// background tab, or a clock far off).
const (
	maxTimings   = 200
	maxPageStage = time.Minute
)

// timingEvery is how often one client's page may say its timings: a page
// sends at most one a minute (live.js).
const timingEvery = 20 * time.Second

// HandleTiming answers POST /feeds/{feed}/timing {"page":[µs,…]}: a page's
// own measure of the last stage (its socket's message written → had),
// which only it can take. One client (Config.Identify) is heard once per
// timingEvery; more gets 429.
func (s *Service) HandleTiming() http.Handler {
	var mu sync.Mutex
	last := map[string]time.Time{}
	client := s.cfg.Identify
	if client == nil {
		client = clients.Identify{}.Client
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now, who := time.Now(), client(r)
		mu.Lock()
		if len(last) > 10000 { // forget who posted long ago
			for k, t := range last {
				if now.Sub(t) > timingEvery {
					delete(last, k)
				}
			}
		}
		early := now.Sub(last[who]) < timingEvery
		if !early {
			last[who] = now
		}
		mu.Unlock()
		if early {
			w.Header().Set("Retry-After", "20")
			httperr.Text(w, httperr.New(http.StatusTooManyRequests, "a page says its timings once a minute: this one is early"))
			return
		}
		var body struct {
			Page []int64 `json:"page"`
		}
		dec := json.NewDecoder(io.LimitReader(r.Body, 8<<10))
		if err := dec.Decode(&body); err != nil || len(body.Page) > maxTimings {
			if err == nil {
				err = errors.New("too many samples")
			}
			httperr.Text(w, httperr.New(http.StatusBadRequest, `want {"page":[µs,…]}, at most 200 samples: `+err.Error()))
			return
		}
		for _, us := range body.Page {
			if us >= 0 && us < maxPageStage.Microseconds() {
				s.lat.page.Observe(micros(us))
			}
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
