package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
)

// smallBuffers accepts connections with the smallest send buffer the
// kernel gives, so that a client that stops reading stalls the server's
// writes after a few kilobytes instead of a few megabytes.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(1)
	}
	return c, err
}

// stallingServer serves s on a listener of smallBuffers.
func stallingServer(t *testing.T, s *Server) *httptest.Server {
	ts := httptest.NewUnstartedServer(s)
	ts.Listener = smallBuffers{ts.Listener}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts
}

// stalledStream opens the event stream at u (with header h) on a
// connection that takes the response's head and then reads no more,
// with the smallest receive buffer: a client whose tab froze, or whose
// network went.
func stalledStream(t *testing.T, u string, h http.Header) net.Conn {
	t.Helper()
	pu, _ := url.Parse(u)
	c, err := net.Dial("tcp", pu.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(1)
	req, _ := http.NewRequest("GET", u, nil)
	req.Header = h
	if err := req.Write(c); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(c, 16), req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%s: %d %s", u, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return c
}

// streamCode is the status a new event stream at u gets, its body closed.
func streamCode(t *testing.T, u string, h http.Header) int {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), "GET", u, nil)
	req.Header = h
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestNoteEventsDropAStalledClient: a page that stops reading a room's
// note events while notes are written holds its stream, and its place
// in --sockets-per-client, only until a write to it misses its deadline
// (the ping period): then the stream ends and the client may open another.
func TestNoteEventsDropAStalledClient(t *testing.T) {
	const every = 200 * time.Millisecond
	s, ts := newRoomServer(t, t.TempDir(), func(c *Config) { c.SocketsPerClient, c.PingEvery = 1, every })
	stalling := stallingServer(t, s)
	id, _ := createRoom(t, ts)
	events := stalling.URL + "/rooms/" + id + "/notes/events"
	stalledStream(t, events, http.Header{})
	if code := streamCode(t, events, http.Header{}); code != http.StatusTooManyRequests {
		t.Fatalf("a second stream beside the stalled one: %d, want 429 (one socket per client)", code)
	}
	// Notes of 7 KB each (a note holds 8): a few fill what the connection buffers.
	text := strings.Repeat("the pod worker syncs one pod at a time. ", 175)
	written := 0
	testwait.For(t, 20*time.Second, "the stalled stream dropped", func() bool {
		if written < 30 {
			putNote(t, ts, id, fmt.Sprintf("writer.stalled%02d", written), text)
			written++
		}
		return s.sockets.Unanswered() > 0
	})
	testwait.For(t, 10*time.Second, "a new stream once the stalled one is dropped", func() bool {
		return streamCode(t, events, http.Header{}) == http.StatusOK
	})
}

// TestClassEventsDropAStalledClient: an instructor's page that stops
// reading the class's stream holds it, and its place in
// --sockets-per-client, only until a write misses its deadline: then the
// stream ends and the instructor may open another.
func TestClassEventsDropAStalledClient(t *testing.T) {
	// Pings every millisecond fill a stalled connection's few kilobytes
	// within a second or so.
	const every = time.Millisecond
	s, ts := newRoomServer(t, t.TempDir(), func(c *Config) { c.SocketsPerClient, c.PingEvery = 1, every })
	stalling := stallingServer(t, s)
	class, key := createClass(t, ts, url.Values{"name": {"Stalled"}, "budget": {"2"}})
	events := stalling.URL + "/classes/" + class + "/events"
	h := http.Header{"Authorization": {"Bearer " + key}}
	stalledStream(t, events, h)
	testwait.For(t, 20*time.Second, "the stalled stream dropped", func() bool { return s.sockets.Unanswered() > 0 })
	testwait.For(t, 10*time.Second, "a new stream once the stalled one is dropped", func() bool {
		return streamCode(t, events, h) == http.StatusOK
	})
}
