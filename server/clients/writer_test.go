package clients

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// socketPair is a server-side websocket (the one a Writer writes to) and
// its client, over loopback.
func socketPair(t *testing.T) (server, client *websocket.Conn) {
	t.Helper()
	conns := make(chan *websocket.Conn, 1)
	hold := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			t.Error(err)
			return
		}
		conns <- c
		<-hold // the handler keeps the connection until the test ends
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client, _, err := websocket.Dial(ctx, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	server = <-conns
	t.Cleanup(func() {
		client.CloseNow()
		server.CloseNow()
		close(hold)
		ts.Close()
	})
	return server, client
}

// sentLog records what a Writer said it was done with.
type sentLog struct {
	mu   sync.Mutex
	msgs []string
}

func (s *sentLog) add(m []byte) { s.mu.Lock(); s.msgs = append(s.msgs, string(m)); s.mu.Unlock() }
func (s *sentLog) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.msgs...)
}

func readN(t *testing.T, c *websocket.Conn, n int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for range n {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", len(out), err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestWriterInOrder: messages arrive in the order sent, every one is
// handed back through Sent once written, and Stop leaves the connection
// open.
func TestWriterInOrder(t *testing.T) {
	server, client := socketPair(t)
	var sent sentLog
	w := NewWriter(context.Background(), server, WriterConfig{Queue: 4, Block: true, Sent: sent.add})
	var want []string
	for i := range 200 {
		m := fmt.Sprint("m", i)
		want = append(want, m)
		if err := w.Send([]byte(m)); err != nil {
			t.Fatalf("send %d: %v", i, err)
		}
	}
	if got := readN(t, client, len(want)); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("read %v, want %v", got, want)
	}
	w.Stop()
	if got := sent.list(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Sent got %v, want %v", got, want)
	}
	if !errors.Is(w.Err(), ErrWriterStopped) {
		t.Fatalf("Err after Stop = %v, want ErrWriterStopped", w.Err())
	}
	if err := w.Send([]byte("late")); !errors.Is(err, ErrWriterStopped) {
		t.Fatalf("Send after Stop = %v, want ErrWriterStopped", err)
	}
	// The connection is still usable: Stop does not close it.
	if err := server.Write(context.Background(), websocket.MessageText, []byte("after")); err != nil {
		t.Fatal(err)
	}
	if got := readN(t, client, 1); got[0] != "after" {
		t.Fatalf("read %q after Stop", got[0])
	}
}

// TestWriterLatestSlots: a slot's message replaces an unwritten one (the
// replaced one is handed back), and slots go after the queue.
func TestWriterLatestSlots(t *testing.T) {
	server, client := socketPair(t)
	var sent sentLog
	held := make(chan struct{})
	release := make(chan struct{})
	w := NewWriter(context.Background(), server, WriterConfig{Slots: 2, Sent: func(m []byte) {
		sent.add(m)
		if string(m) == "first" { // the goroutine waits after the first message
			close(held)
			<-release
		}
	}})
	defer w.Stop()
	w.Send([]byte("first"))
	<-held
	w.SendLatest(1, []byte("at-old"))
	w.SendLatest(0, []byte("state-old"))
	w.SendLatest(0, []byte("state-new"))
	w.SendLatest(1, []byte("at-new"))
	w.Send([]byte("queued"))
	close(release)
	if got, want := strings.Join(readN(t, client, 4), ","), "first,queued,state-new,at-new"; got != want {
		t.Fatalf("read %s, want %s", got, want)
	}
	w.Stop()
	if got, want := strings.Join(sent.list(), ","), "first,state-old,at-old,queued,state-new,at-new"; got != want {
		t.Fatalf("Sent got %s, want %s (the replaced ones when replaced)", got, want)
	}
}

// TestWriterTooSlow: without Block, a peer that reads nothing fills the
// queue, and the writer stops with ErrTooSlow instead of holding more.
func TestWriterTooSlow(t *testing.T) {
	server, _ := socketPair(t) // the client never reads
	w := NewWriter(context.Background(), server, WriterConfig{Queue: 8, Timeout: time.Minute})
	defer w.Stop()
	big := make([]byte, 256<<10)
	var err error
	for i := 0; i < 10000 && err == nil; i++ {
		err = w.Send(big)
	}
	if !errors.Is(err, ErrTooSlow) {
		t.Fatalf("Send to a peer that reads nothing: %v, want ErrTooSlow", err)
	}
	select {
	case <-w.Done():
	default:
		t.Fatal("Done not closed after ErrTooSlow")
	}
}

// TestWriterStalledPeer: with Block, Send waits for a slow peer; a write
// that takes longer than the timeout closes the connection, and the
// waiting Send returns.
func TestWriterStalledPeer(t *testing.T) {
	server, _ := socketPair(t) // the client never reads
	w := NewWriter(context.Background(), server, WriterConfig{Queue: 1, Block: true, Timeout: 200 * time.Millisecond})
	defer w.Stop()
	big := make([]byte, 256<<10)
	errc := make(chan error, 1)
	go func() {
		for {
			if err := w.Send(big); err != nil {
				errc <- err
				return
			}
		}
	}()
	select {
	case err := <-errc:
		if errors.Is(err, ErrTooSlow) || errors.Is(err, ErrWriterStopped) {
			t.Fatalf("Send ended with %v, want the failed write's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a stalled peer held the writer past its timeout")
	}
	// The connection is closed: a write now fails.
	if err := server.Write(context.Background(), websocket.MessageText, []byte("x")); err == nil {
		t.Fatal("the stalled connection is still open")
	}
}

// TestWriterContextClosesConn: the end of the writer's context closes
// the connection, and what was queued is handed back.
func TestWriterContextClosesConn(t *testing.T) {
	server, client := socketPair(t)
	ctx, cancel := context.WithCancel(context.Background())
	w := NewWriter(ctx, server, WriterConfig{})
	defer w.Stop()
	w.Send([]byte("one"))
	readN(t, client, 1)
	cancel()
	rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer rcancel()
	if _, _, err := client.Read(rctx); err == nil || rctx.Err() != nil {
		t.Fatalf("client read after the context ended: %v (want the connection closed)", err)
	}
}

// TestWriterFlush: Flush returns once what was queued before it is
// written (Sent has seen it), and says why once the writer stopped.
func TestWriterFlush(t *testing.T) {
	server, client := socketPair(t)
	var sent sentLog
	release := make(chan struct{})
	w := NewWriter(context.Background(), server, WriterConfig{Slots: 1, Sent: func(m []byte) {
		if string(m) == "a" {
			<-release // the goroutine is held after the first write
		}
		sent.add(m)
	}})
	w.Send([]byte("a"))
	w.Send([]byte("b"))
	w.SendLatest(0, []byte("s"))
	flushed := make(chan error, 1)
	go func() { flushed <- w.Flush() }()
	close(release)
	if err := <-flushed; err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if got := strings.Join(sent.list(), ","); got != "a,b,s" {
		t.Fatalf("Flush returned with %q written, want a,b,s", got)
	}
	if got := strings.Join(readN(t, client, 3), ","); got != "a,b,s" {
		t.Fatalf("read %s", got)
	}
	w.Stop()
	if err := w.Flush(); !errors.Is(err, ErrWriterStopped) {
		t.Fatalf("Flush after Stop = %v, want ErrWriterStopped", err)
	}
}

// TestWriterDirect: a direct Writer writes on the caller's goroutine (a
// message is written, and handed back, before Send returns); a stalled
// peer fails the Send that waits past the timeout; Stop leaves the
// connection open.
func TestWriterDirect(t *testing.T) {
	server, client := socketPair(t)
	var sent sentLog
	w := NewWriter(context.Background(), server, WriterConfig{Direct: true, Timeout: time.Second, Sent: sent.add})
	for i := range 3 {
		m := fmt.Sprint("d", i)
		if err := w.Send([]byte(m)); err != nil {
			t.Fatal(err)
		}
		if got := sent.list(); len(got) != i+1 || got[i] != m {
			t.Fatalf("after Send(%s) returned, Sent saw %v", m, got)
		}
	}
	if got := strings.Join(readN(t, client, 3), ","); got != "d0,d1,d2" {
		t.Fatalf("read %s", got)
	}
	if err := w.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	w.Stop()
	if err := server.Write(context.Background(), websocket.MessageText, []byte("after")); err != nil {
		t.Fatalf("Stop closed the connection: %v", err)
	}
	readN(t, client, 1)

	stalled, _ := socketPair(t) // its client never reads
	w = NewWriter(context.Background(), stalled, WriterConfig{Direct: true, Timeout: 200 * time.Millisecond})
	defer w.Stop()
	big := make([]byte, 256<<10)
	start := time.Now()
	var err error
	for err == nil && time.Since(start) < 10*time.Second {
		err = w.Send(big)
	}
	if err == nil || errors.Is(err, ErrTooSlow) {
		t.Fatalf("Send to a stalled peer: %v, want the failed write's error", err)
	}
	if w.Send([]byte("x")) == nil {
		t.Fatal("a Send after a failed write succeeded")
	}
}
