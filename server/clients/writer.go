package clients

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// DefaultWriteTimeout is WriterConfig.Timeout's default: how long one
// message may take to write before its connection is given up as stalled.
const DefaultWriteTimeout = 10 * time.Second

// DefaultWriterQueue is WriterConfig.Queue's default.
const DefaultWriterQueue = 64

var (
	// ErrTooSlow is why a Writer that does not block stopped: more
	// messages waited than its queue holds, the peer reads too slowly.
	ErrTooSlow = errors.New("too many messages waiting: the peer reads too slowly")
	// ErrWriterStopped is what Send returns once Stop was called.
	ErrWriterStopped = errors.New("the socket's writer stopped")
)

// WriterConfig is how a Writer queues and writes.
type WriterConfig struct {
	// Queue is how many messages may wait to be written (slots apart); 0
	// means DefaultWriterQueue.
	Queue int
	// Timeout is how long one message may take to write; the connection
	// is closed (CloseNow) when one takes longer. 0 means
	// DefaultWriteTimeout.
	Timeout time.Duration
	// Block makes Send wait while the queue is full, so that the caller
	// goes at the peer's pace (a feed's browser: it is then told what it
	// skipped). Otherwise a full queue stops the writer with ErrTooSlow
	// (a room's reader is dropped).
	Block bool
	// Direct makes Send write at once, on the caller's goroutine, within
	// the timeout: no queue and no goroutine, for a caller that is the
	// connection's only writer on the hot path (a feed's browser loop,
	// where a handoff per message cost latency at hundreds of browsers).
	// SendLatest is not for a direct Writer.
	Direct bool
	// Slots is how many "latest" slots SendLatest has (a room's state
	// and its driver's position): 0 means none.
	Slots int
	// Sent, when set, is given each message once it is written, or
	// dropped when the writer stopped first: its buffer may be reused.
	Sent func(msg []byte)
}

// Writer is a websocket's one writer: every message to the connection
// goes through it and is written by its goroutine, in order, each within
// the write timeout. Its callers (a feed's relay acks, a room's reader)
// only queue; a direct one (a feed's browser loop) writes itself.
//
// The timeout is a watchdog timer reset around each write, not a context
// per write: on the live path, for every browser and every batch, a
// context per write cost the websocket library three allocations and a
// goroutine handoff.
type Writer struct {
	conn    *websocket.Conn
	cfg     WriterConfig
	stopCtx func() bool

	directMu sync.Mutex  // a direct Writer's Send (WriterConfig.Direct)
	watchdog *time.Timer // a direct Writer's: closes a stalled connection

	mu      sync.Mutex
	flushed sync.Cond // signalled when written grows, or the writer stops
	queued  uint64    // messages given to Send and SendLatest (replaced ones apart)
	written uint64    // messages the goroutine has taken and written
	queue   [][]byte
	slots   [][]byte
	err     error         // why the writer stopped; nil while it runs
	wake    chan struct{} // has room for one signal: something was queued, or Stop
	room    chan struct{} // has room for one signal: the queue has room (Block)
	done    chan struct{} // closed when the goroutine ends
	failed  chan struct{} // closed when err is set
}

// NewWriter starts conn's writer. The connection is closed (CloseNow)
// when ctx ends, when a write fails or takes longer than the timeout; a
// Writer that stopped with ErrTooSlow, or by Stop, leaves it open, for
// its caller to close with a code that says why.
func NewWriter(ctx context.Context, conn *websocket.Conn, cfg WriterConfig) *Writer {
	if cfg.Queue <= 0 {
		cfg.Queue = DefaultWriterQueue
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultWriteTimeout
	}
	w := &Writer{
		conn:   conn,
		cfg:    cfg,
		slots:  make([][]byte, cfg.Slots),
		wake:   make(chan struct{}, 1),
		room:   make(chan struct{}, 1),
		done:   make(chan struct{}),
		failed: make(chan struct{}),
	}
	w.flushed.L = &w.mu
	w.stopCtx = context.AfterFunc(ctx, func() { conn.CloseNow() })
	if cfg.Direct {
		w.watchdog = time.AfterFunc(cfg.Timeout, func() { conn.CloseNow() })
		w.watchdog.Stop()
		close(w.done)
		return w
	}
	go w.run()
	return w
}

// Send queues msg, which the caller does not change afterwards (Sent
// says when it may). It returns why the writer stopped, if it did: msg is
// then not sent.
func (w *Writer) Send(msg []byte) error {
	if w.cfg.Direct {
		return w.sendDirect(msg)
	}
	w.mu.Lock()
	for w.err == nil && len(w.queue) >= w.cfg.Queue {
		if !w.cfg.Block {
			w.failLocked(ErrTooSlow)
			break
		}
		w.mu.Unlock()
		select {
		case <-w.room:
		case <-w.failed:
		}
		w.mu.Lock()
	}
	if err := w.err; err != nil {
		w.mu.Unlock()
		w.release(msg)
		return err
	}
	w.queue = append(w.queue, msg)
	w.queued++
	w.mu.Unlock()
	w.signal(w.wake)
	return nil
}

// sendDirect writes msg now (WriterConfig.Direct).
func (w *Writer) sendDirect(msg []byte) error {
	w.directMu.Lock()
	defer w.directMu.Unlock()
	if err := w.Err(); err != nil {
		w.release(msg)
		return err
	}
	w.watchdog.Reset(w.cfg.Timeout)
	err := w.conn.Write(context.Background(), websocket.MessageText, msg)
	w.watchdog.Stop()
	w.release(msg)
	w.mu.Lock()
	defer w.mu.Unlock()
	if err != nil {
		w.conn.CloseNow()
		w.failLocked(err)
	}
	return w.err
}

// SendLatest puts msg in slot (0 ≤ slot < WriterConfig.Slots), replacing
// one not yet written there: only the latest matters. Slots are written
// after the queue, in their order.
func (w *Writer) SendLatest(slot int, msg []byte) error {
	w.mu.Lock()
	if err := w.err; err != nil {
		w.mu.Unlock()
		w.release(msg)
		return err
	}
	old := w.slots[slot]
	w.slots[slot] = msg
	if old == nil {
		w.queued++
	}
	w.mu.Unlock()
	w.release(old)
	w.signal(w.wake)
	return nil
}

// Flush waits until every message queued before it is written, or the
// writer stopped: it returns why then. A handler calls it before it
// closes the connection with a code, so that what it sent arrives
// first.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	for target := w.queued; w.written < target && w.err == nil; {
		w.flushed.Wait()
	}
	return w.err
}

// Done is closed once the writer has stopped: Err says why.
func (w *Writer) Done() <-chan struct{} { return w.failed }

// Err is why the writer stopped (ErrTooSlow, ErrWriterStopped, a write's
// error), nil while it runs.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop stops the writer, dropping what was not written yet, and waits
// for its goroutine; the connection stays open unless a write had failed.
func (w *Writer) Stop() {
	w.mu.Lock()
	if w.err == nil {
		w.failLocked(ErrWriterStopped)
	}
	w.mu.Unlock()
	<-w.done
	if w.watchdog != nil {
		w.directMu.Lock() // a write under way ends first
		w.watchdog.Stop()
		w.directMu.Unlock()
	}
	w.stopCtx()
}

// failLocked records why the writer stops. w.mu is held.
func (w *Writer) failLocked(err error) {
	if w.err == nil {
		w.err = err
		close(w.failed)
		w.flushed.Broadcast()
		w.signal(w.wake) // the goroutine drops what is queued and ends
	}
}

func (w *Writer) signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (w *Writer) release(msg []byte) {
	if msg != nil && w.cfg.Sent != nil {
		w.cfg.Sent(msg)
	}
}

// run writes what is queued until the writer stops.
func (w *Writer) run() {
	defer close(w.done)
	watchdog := time.AfterFunc(w.cfg.Timeout, func() { w.conn.CloseNow() })
	watchdog.Stop()
	defer watchdog.Stop()
	var batch [][]byte
	for {
		<-w.wake
		w.mu.Lock()
		stopped := w.err != nil
		batch = append(batch[:0], w.queue...)
		clear(w.queue)
		w.queue = w.queue[:0]
		for i, m := range w.slots {
			if m != nil {
				batch = append(batch, m)
				w.slots[i] = nil
			}
		}
		w.mu.Unlock()
		if len(batch) > 0 {
			w.signal(w.room)
		}
		for i, msg := range batch {
			if stopped {
				w.release(msg)
				continue
			}
			watchdog.Reset(w.cfg.Timeout)
			err := w.conn.Write(context.Background(), websocket.MessageText, msg)
			watchdog.Stop()
			w.release(msg)
			batch[i] = nil
			w.mu.Lock()
			w.written++
			w.flushed.Broadcast()
			w.mu.Unlock()
			if err != nil {
				w.conn.CloseNow()
				w.mu.Lock()
				w.failLocked(err)
				w.mu.Unlock()
				stopped = true
			}
		}
		clear(batch)
		if stopped {
			w.drop()
			return
		}
	}
}

// drop releases what is still queued once the writer stopped.
func (w *Writer) drop() {
	w.mu.Lock()
	left := append(w.queue, w.slots...)
	w.queue = nil
	w.slots = make([][]byte, len(w.slots))
	w.mu.Unlock()
	for _, m := range left {
		w.release(m)
	}
}
