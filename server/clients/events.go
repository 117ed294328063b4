package clients

import (
	"errors"
	"net/http"
	"os"
	"time"
)

// Events writes one server-sent event stream (text/event-stream), the
// way the notes' and the class's streams both do (after Dozzle's sse.go):
// the headers and a flush at once, so the page knows the stream is open;
// each event flushed as it is written; a ping comment every PingEvery, so
// that a proxy keeps an idle stream open and a dead peer shows; and a
// write deadline on every write, PingEvery long. A client that stops
// reading (a tab frozen, a laptop shut, a network gone) fills the
// connection's buffers; the next write then fails within the deadline,
// and the handler returns and gives its slot back (Sockets.Release),
// where without one it would hold it until TCP gave up.
//
// An Events is its handler's: one goroutine writes to it.
type Events struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	deadline time.Duration
	pings    *time.Ticker
	socks    *Sockets
}

// Events starts an event stream on w: it writes the headers (200,
// text/event-stream, never cached nor buffered by a proxy) and flushes
// them. The caller calls Close when the stream ends. The error is the
// flush's: the client is gone already.
func (b *Sockets) Events(w http.ResponseWriter) (*Events, error) {
	e := &Events{w: w, rc: http.NewResponseController(w), deadline: b.pingEvery,
		pings: time.NewTicker(b.pingEvery), socks: b}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass each event on as it comes
	return e, e.write(func() error { w.WriteHeader(http.StatusOK); return nil })
}

// Pings ticks when the stream is due a Ping.
func (e *Events) Pings() <-chan time.Time { return e.pings.C }

// Ping writes a comment line, which EventSource ignores.
func (e *Events) Ping() error { return e.Write([]byte(": ping\n\n")) }

// Send writes one event named event with data, one line (JSON).
func (e *Events) Send(event string, data []byte) error {
	return e.write(func() error {
		for _, p := range [][]byte{[]byte("event: "), []byte(event), []byte("\ndata: "), data, []byte("\n\n")} {
			if _, err := e.w.Write(p); err != nil {
				return err
			}
		}
		return nil
	})
}

// Write writes msg, whole events already in the stream's format (one
// rendered once for many streams).
func (e *Events) Write(msg []byte) error {
	return e.write(func() error { _, err := e.w.Write(msg); return err })
}

// Close stops the pings.
func (e *Events) Close() { e.pings.Stop() }

// write runs put and flushes under the write deadline, then lifts it: a
// stream idle between events is not a stream stuck. A write past its
// deadline counts as a socket that did not answer (Sockets.Unanswered).
func (e *Events) write(put func() error) error {
	// A ResponseWriter without deadlines (a test's recorder) still
	// streams; one over a connection always has them.
	_ = e.rc.SetWriteDeadline(time.Now().Add(e.deadline))
	err := put()
	if err == nil {
		err = e.rc.Flush()
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		e.socks.unanswered.Add(1)
		return err
	}
	if err == nil {
		_ = e.rc.SetWriteDeadline(time.Time{})
	}
	return err
}
