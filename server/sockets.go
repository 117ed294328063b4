package server

// What browser sockets (feed sockets, live.go; room sockets, package rooms)
// share: the close codes of permanent refusals, a cap on the sockets one
// client holds open, and the pings that find half-open connections.

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/rooms"
)

// Websocket close codes for permanent refusals, in the 4000-4999 range the
// websocket protocol leaves to applications: 4000 plus the HTTP status that
// says the same. A browser that sees one stops reconnecting (static/live.js,
// static/room.js) and says why; any other close (1001 going away, 1006 a
// dropped connection, 1008 too slow) is worth another try.
const (
	// CloseFeedGone: the feed socket's feed was let go (its room expired).
	CloseFeedGone websocket.StatusCode = 4404
	// CloseRoomGone: the room expired.
	CloseRoomGone = rooms.CloseGone
	// CloseRoomFull: the room holds as many readers as it may (serve --max-readers).
	CloseRoomFull = rooms.CloseFull
)

// DefaultSocketsPerClient is Config.SocketsPerClient's default: a reader's
// tabs (a reading page holds one socket, a room page two), or a small class
// behind one NAT address, fit well within it.
const DefaultSocketsPerClient = 64

// DefaultPingEvery is Config.PingEvery's default: under the minute after
// which common proxies drop an idle connection.
const DefaultPingEvery = 25 * time.Second

// browserSockets is shared by the feed and room sockets of one server.
type browserSockets struct {
	max       int
	pingEvery time.Duration

	refused    atomic.Uint64 // sockets refused over a client's cap
	unanswered atomic.Uint64 // sockets closed for not answering a ping

	mu   sync.Mutex
	open map[string]int // by client address
}

func newBrowserSockets(max int, pingEvery time.Duration) *browserSockets {
	if max <= 0 {
		max = DefaultSocketsPerClient
	}
	if pingEvery <= 0 {
		pingEvery = DefaultPingEvery
	}
	return &browserSockets{max: max, pingEvery: pingEvery, open: map[string]int{}}
}

// acquire counts one more open socket for client; when it holds max
// already, it answers the request with 429 (before any upgrade) and
// returns false. The caller releases what it acquired.
func (b *browserSockets) acquire(w http.ResponseWriter, client string) bool {
	b.mu.Lock()
	ok := b.open[client] < b.max
	if ok {
		b.open[client]++
	}
	b.mu.Unlock()
	if !ok {
		b.refused.Add(1)
		w.Header().Set("Retry-After", "30")
		http.Error(w, fmt.Sprintf("too many open connections from your address (at most %d, serve --sockets-per-client): close some tabs", b.max), http.StatusTooManyRequests)
	}
	return ok
}

func (b *browserSockets) release(client string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.open[client]--; b.open[client] <= 0 {
		delete(b.open, client)
	}
}

// keepAlive pings conn every pingEvery until the returned stop is called,
// and closes a connection whose peer does not answer within as long: a
// half-open connection (a laptop shut, a network gone) would otherwise
// hold its feed subscription or its place in a room for good. Pongs are
// read by the connection's reader, so one must be running (CloseRead, or
// the handler's read loop). stop waits for the pinger to end.
func (b *browserSockets) keepAlive(conn *websocket.Conn) (stop func()) {
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
