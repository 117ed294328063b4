package clients

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// pipeListener hands an http.Server the server ends of net.Pipes: a
// connection with no buffer at all, so a client that stops reading blocks
// the server's next write, as full socket buffers do; and one that runs
// on synctest's clock.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	select {
	case <-l.done:
	default:
		close(l.done)
	}
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 80} }

// dial is a client's end of a new connection to the server.
func (l *pipeListener) dial() net.Conn {
	server, client := net.Pipe()
	l.conns <- server
	return client
}

// eventServer serves one event stream per request, as the notes' and the
// class's handlers do: a slot of socks held for the stream's life, pings
// while nothing else is sent. Each stream's end is sent on ended once its
// slot is given back.
func eventServer(t *testing.T, socks *Sockets, ended chan<- error) (*pipeListener, func()) {
	ln := newPipeListener()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !socks.Acquire(w, "client") {
			return
		}
		err := func() error {
			defer socks.Release("client")
			ev, err := socks.Events(w)
			if err != nil {
				return err
			}
			defer ev.Close()
			if err := ev.Send("snapshot", []byte(`{"n":1}`)); err != nil {
				return err
			}
			for {
				select {
				case <-r.Context().Done():
					return r.Context().Err()
				case <-ev.Pings():
					if err := ev.Ping(); err != nil {
						return err
					}
				}
			}
		}()
		ended <- err
	})}
	go srv.Serve(ln)
	return ln, func() { srv.Close() }
}

// openStream sends a GET on a new connection and reads the response's
// head; the body is the caller's to read, or not.
func openStream(t *testing.T, ln *pipeListener) (net.Conn, *bufio.Reader) {
	t.Helper()
	c := ln.dial()
	if _, err := io.WriteString(c, "GET /events HTTP/1.1\r\nHost: example\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" ||
		resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("stream's head: %d %v", resp.StatusCode, resp.Header)
	}
	return c, bufio.NewReader(resp.Body)
}

// TestEventsDropsAClientThatStopsReading: a client that stops reading an
// event stream (its connection takes no more bytes) is dropped at the
// first write past the deadline, one ping period after that write began,
// and its slot is free again; it counts as unanswered.
func TestEventsDropsAClientThatStopsReading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 5 * time.Second
		socks := NewSockets(1, every)
		ended := make(chan error, 1)
		ln, stop := eventServer(t, socks, ended)
		defer stop()
		conn, body := openStream(t, ln)
		defer conn.Close()
		// The snapshot is read; then the client reads nothing more.
		if line, _ := body.ReadString('\n'); line != "event: snapshot\n" {
			t.Fatalf("first line %q", line)
		}
		start := time.Now()
		var err error
		select {
		case err = <-ended:
		case <-time.After(time.Hour):
			t.Fatal("a client that reads nothing still holds its stream an hour on")
		}
		// The rest of the snapshot fills the pipe; the first ping then
		// waits its deadline out.
		if took := time.Since(start); took > 2*every {
			t.Errorf("the stream ended %v after the client stopped reading, want at most %v", took, 2*every)
		}
		if !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("the stream ended with %v, want a write past its deadline", err)
		}
		if n := socks.Unanswered(); n != 1 {
			t.Errorf("Unanswered() = %d, want 1", n)
		}
		if rec := httptest.NewRecorder(); !socks.Acquire(rec, "client") {
			t.Errorf("the dropped stream's slot is still held: %d %s", rec.Code, rec.Body)
		}
	})
}

// TestEventsPingsAReader: a client that reads keeps its stream however
// long it lasts, a ping every period while nothing else is sent.
func TestEventsPingsAReader(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 5 * time.Second
		socks := NewSockets(1, every)
		ended := make(chan error, 1)
		ln, stop := eventServer(t, socks, ended)
		defer stop()
		conn, body := openStream(t, ln)
		start := time.Now()
		pings := 0
		for pings < 20 {
			line, err := body.ReadString('\n')
			if err != nil {
				t.Fatalf("after %d pings: %v", pings, err)
			}
			if strings.HasPrefix(line, ": ping") {
				pings++
			}
		}
		if took := time.Since(start); took < 20*every || took > 21*every {
			t.Errorf("20 pings took %v, want one each %v", took, every)
		}
		select {
		case err := <-ended:
			t.Fatalf("a reading client's stream ended: %v", err)
		default:
		}
		conn.Close()
		if err := <-ended; err == nil {
			t.Error("the stream of a closed connection ended with no error")
		}
		if n := socks.Unanswered(); n != 0 {
			t.Errorf("Unanswered() = %d, want 0: the client read every ping", n)
		}
	})
}
