package server

import (
	"bufio"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/syncloop/syncloop/server/internal/testclock"
)

// The pages stop reconnecting on a permanent refusal's close code: a room
// page whose room expired while its sockets were down says so, and opens
// no more sockets (before: room.js compared reason strings and retried an
// expired room for ever, and so did the live pane).
func TestBrowserStopsOnRefusal(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	clock := testclock.New(time.Now())
	s, _ := newRoomServer(t, "", func(c *Config) { c.RoomTTL = time.Hour }, roomClock(clock))
	var (
		sockets atomic.Int32
		mu      sync.Mutex
		conns   []net.Conn // the sockets' connections, to drop them
	)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/ws") {
			sockets.Add(1)
			w = hijackRecorder{w, func(c net.Conn) { mu.Lock(); conns = append(conns, c); mu.Unlock() }}
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	id, _ := createRoom(t, ts)
	if err := chromedp.Do(browser, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#room")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, browser, "the live pane connected", `document.querySelector('.live-conn')?.dataset.state === 'up'`)
	waitFor(t, browser, "the reader in the room", `document.querySelectorAll('[data-room-people] li').length === 1`)
	// The room expires: its reader, though present, is counted as use only
	// every 30 s (FlushEvery), and the clock has moved an hour.
	clock.Add(time.Hour + time.Second)
	mu.Lock() // the network drops: both pages reconnect, and are refused
	for _, c := range conns {
		c.Close()
	}
	mu.Unlock()
	waitFor(t, browser, "the room says it expired", `document.querySelector('[data-room-role]').textContent === 'this room expired'`)
	waitFor(t, browser, "the live pane says it expired", `document.querySelector('.live-conn').textContent === 'the room expired'`)
	n := sockets.Load()
	time.Sleep(3 * time.Second) // sleep: several backoffs' worth, in which a page that retried would open a socket
	if more := sockets.Load() - n; more != 0 {
		t.Errorf("%d more sockets opened after the refusals", more)
	}
}

// hijackRecorder hands each connection it hijacks to keep.
type hijackRecorder struct {
	http.ResponseWriter
	keep func(net.Conn)
}

func (h hijackRecorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err == nil {
		h.keep(c)
	}
	return c, rw, err
}
