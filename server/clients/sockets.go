package clients

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncloop/syncloop/server/httperr"
)

// DefaultSocketsPerClient is Config.SocketsPerClient's default: a reader's
// tabs (a reading page holds one socket, a room page two), or a small class
// behind one NAT address, fit well within it.
const DefaultSocketsPerClient = 64

// DefaultPingEvery is Config.PingEvery's default: under the minute after
// which common proxies drop an idle connection.
const DefaultPingEvery = 25 * time.Second

// Sockets counts the browser sockets (feed sockets, package feeds; room
// sockets, package rooms; event streams, Events) each client holds open,
// and pings them. One is shared by all the sockets of one server.
type Sockets struct {
	max       int
	pingEvery time.Duration

	refused    atomic.Uint64 // sockets refused over a client's cap
	unanswered atomic.Uint64 // sockets closed for not answering a ping, streams for not taking a write

	mu   sync.Mutex
	open map[string]int // by client address
}

// NewSockets caps each client at max open sockets (0 means
// DefaultSocketsPerClient) and pings every pingEvery (0 means
// DefaultPingEvery).
func NewSockets(max int, pingEvery time.Duration) *Sockets {
	if max <= 0 {
		max = DefaultSocketsPerClient
	}
	if pingEvery <= 0 {
		pingEvery = DefaultPingEvery
	}
	return &Sockets{max: max, pingEvery: pingEvery, open: map[string]int{}}
}

// Acquire counts one more open socket for client; when it holds max
// already, it answers the request with 429 (before any upgrade) and
// returns false. The caller releases what it acquired.
func (b *Sockets) Acquire(w http.ResponseWriter, client string) bool {
	b.mu.Lock()
	ok := b.open[client] < b.max
	if ok {
		b.open[client]++
	}
	b.mu.Unlock()
	if !ok {
		b.refused.Add(1)
		w.Header().Set("Retry-After", "30")
		httperr.Text(w, httperr.New(http.StatusTooManyRequests, fmt.Sprintf("too many open connections from your address (at most %d, serve --sockets-per-client): close some tabs", b.max)))
	}
	return ok
}

// Release counts one socket of client fewer.
func (b *Sockets) Release(client string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open[client]--; b.open[client] <= 0 {
		delete(b.open, client)
	}
}

// KeepAlive pings conn every pingEvery until the returned stop is called,
// and closes a connection whose peer does not answer within as long: a
// half-open connection (a laptop shut, a network gone) would otherwise
// hold its feed subscription or its place in a room for good. Pongs are
// read by the connection's reader, so one must be running (CloseRead, or
// the handler's read loop). stop waits for the pinger to end.
func (b *Sockets) KeepAlive(conn *websocket.Conn) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(b.pingEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			pctx, pcancel := context.WithTimeout(ctx, b.pingEvery)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil {
				if ctx.Err() == nil && pctx.Err() != nil {
					// No close frame: a peer that does not answer pings
					// does not read one either.
					b.unanswered.Add(1)
					conn.CloseNow()
				}
				return
			}
		}
	}()
	return func() { cancel(); <-done }
}

// Refused counts the sockets refused over a client's cap.
func (b *Sockets) Refused() uint64 { return b.refused.Load() }

// Unanswered counts the sockets closed for not answering a ping, and the
// event streams ended for not taking a write within its deadline.
func (b *Sockets) Unanswered() uint64 { return b.unanswered.Load() }

// Register registers the sockets' counters (syncloop_sockets_refused_total,
// syncloop_sockets_unanswered_total) with r.
func (b *Sockets) Register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "syncloop_sockets_refused_total",
			Help: "Browser sockets refused because their client held --sockets-per-client already."},
			func() float64 { return float64(b.Refused()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "syncloop_sockets_unanswered_total",
			Help: "Browser sockets closed because they did not answer a ping, and event streams ended because a write missed its deadline (half-open connections)."},
			func() float64 { return float64(b.Unanswered()) }),
	} {
		if err := r.Register(c); err != nil {
			return fmt.Errorf("sockets' metrics: %w", err)
		}
	}
	return nil
}
