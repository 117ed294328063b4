package feeds

// Browser sockets: GET /feeds/{feed}/ws, a feed's lines from its hub to
// one browser (the protocol is in feeds.go's package comment).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/hub"
)

// HandleFeedSocket is GET /feeds/{feed}/ws: a browser's websocket.
func (s *Service) HandleFeedSocket() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, true, false) {
			return
		}
		f, after, reset := s.browserFeed(w, r)
		if f == nil {
			return
		}
		who := s.cfg.Identify
		if who == nil {
			who = clients.Identify{}.Client
		}
		client := who(r)
		if !s.sockets.Acquire(w, client) {
			return
		}
		defer s.sockets.Release(client)
		if !s.enter() {
			httperr.Text(w, errShuttingDown)
			return
		}
		defer s.wg.Done()
		// The default AcceptOptions refuse an Origin other than the request's
		// host: another site's page cannot read this feed through a reader's browser.
		conn, err := websocket.Accept(writeBuffered{w}, r, nil)
		if err != nil {
			s.log.Info("feeds: browser websocket refused", "feed", f.name, "err", err)
			return
		}
		defer conn.CloseNow()
		// Browsers send nothing; CloseRead notices their close. Close ends
		// this handler through the hub (Next returns ErrClosed), not through
		// ctx: a cancelled ctx would drop the connection without a close frame.
		ctx := conn.CloseRead(r.Context())
		defer s.sockets.KeepAlive(conn)()
		s.serveBrowser(ctx, conn, f, after, reset)
	})
}

// browserFeed is the feed a browser's request asks for, and the line it
// has (?after=; reset: it takes the history anew). A request it cannot
// serve is answered (the feed is nil).
func (s *Service) browserFeed(w http.ResponseWriter, r *http.Request) (f *feed, after uint64, reset bool) {
	f, err := s.existingFeed(chi.URLParam(r, "feed"))
	// A page at another tag than the default's asks for the server's
	// feed with ?tag=: while that feed is the demo (a simulated kubelet
	// at the default tag), it gets the demo of its own tag instead, so
	// that its lines are that tag's log sites and cases.
	if tag := r.URL.Query().Get("tag"); err == nil && f != nil && f.name == defaultFeed && tag != f.tag && s.defaultIsDemo() {
		if td, tdErr := s.tagDemo(tag); tdErr != nil || td != nil {
			f, err = td, tdErr
		}
	}
	if e := feedError(f, err); e != nil {
		httperr.Text(w, e)
		return nil, 0, false
	}
	if q := r.URL.Query().Get("after"); q != "" {
		if after, err = strconv.ParseUint(q, 10, 64); err != nil {
			httperr.Text(w, httperr.New(http.StatusBadRequest, "after: want the last sequence number seen"))
			return nil, 0, false
		}
	}
	// ?of= names the feed after= counts in: the lines a browser has
	// are of another feed than the one it gets now (the demo stopped,
	// or started), so it takes the history anew.
	if of := r.URL.Query().Get("of"); of != "" && of != f.name {
		after, reset = 0, true
	}
	return f, after, reset
}

// serveBrowser sends the browser on conn its hello, then f's lines after
// after, until the browser leaves or the feed closes.
func (s *Service) serveBrowser(ctx context.Context, conn *websocket.Conn, f *feed, after uint64, reset bool) {
	// The feed's stored lines reach the hub first, so after= means the
	// same here as on any replica.
	select {
	case <-f.ready:
	case <-time.After(10 * time.Second):
	case <-ctx.Done():
		return
	}
	// A browser resuming after a line this replica's hub has not had
	// yet (stored a moment ago, or through another replica) waits for
	// it rather than be told to start over.
	if !reset && after >= f.hub.Next() {
		wctx, cancel := context.WithTimeout(ctx, resumeWait)
		f.hub.WaitNext(wctx, after)
		cancel()
		if ctx.Err() != nil {
			return
		}
	}
	gen := f.status.Load()
	hello := f.statusMsg()
	next := f.hub.Next()
	if after >= next || reset {
		after, hello.Reset = 0, true
	}
	hello.Next = next
	// Lines received before the browser subscribed (its history) waited
	// for it, not for the server: only later ones say how long the server
	// took (latency.go).
	since := time.Now().UnixMicro()
	sub := f.hub.Subscribe(after)
	defer sub.Close()
	// The loop writes its frames itself (a direct writer): the browser's
	// pace holds it, and the hub tells a slow browser what it skipped.
	out := clients.NewWriter(ctx, conn, clients.WriterConfig{Direct: true, Timeout: writeTimeout, Sent: s.putFrame})
	defer out.Stop()
	if err := out.Send(mustJSON(map[string]any{"hello": hello})); err != nil {
		return
	}
	err := s.sendLines(ctx, f, sub, gen, since, out)
	if !errors.Is(err, hub.ErrClosed) || out.Flush() != nil {
		return
	}
	if f.gone.Load() {
		conn.Close(CloseFeedGone, "this feed is gone: its owner let it go")
	} else {
		conn.Close(websocket.StatusGoingAway, "server shutting down")
	}
}

// getFrame is a buffer for a browser message, from a pool shared by the
// feed's browsers: most wait between batches, and a buffer each would
// hold frameLimit apiece.
func (s *Service) getFrame() []byte {
	return (*s.frames.Get().(*[]byte))[:0]
}

// putFrame gives a written message's buffer back to the pool, if it is
// one (a hello is not).
func (s *Service) putFrame(b []byte) {
	if cap(b) >= frameMin {
		b = b[:0]
		s.frames.Put(&b)
	}
}

// sendLines writes what sub delivers to the browser, each batch with a
// skipped marker and the feed's status when they changed, until sub or
// a write fails (gen is the status the browser has).
func (s *Service) sendLines(ctx context.Context, f *feed, sub *hub.Subscription, gen uint64, since int64, out *clients.Writer) error {
	pause := time.NewTimer(0)
	defer pause.Stop()
	for {
		b, err := sub.Next(ctx)
		if err != nil {
			return err
		}
		frame := s.getFrame()
		if b.Rewind != 0 {
			frame = appendMsg(frame, []byte(`{"rewind":`+strconv.FormatUint(b.Rewind, 10)+`}`))
		}
		if gap := b.Missed + b.Skipped; gap > 0 {
			frame = appendMsg(frame, []byte(`{"skipped":`+strconv.Itoa(gap)+`}`))
		}
		if g := f.status.Load(); g != gen {
			gen = g
			frame = appendMsg(frame, mustJSON(map[string]any{"status": f.statusMsg()}))
		}
		var oldest int64 // the oldest line's receipt in the message (latency.go)
		for _, e := range b.Entries {
			if len(frame)+len(e.Data) > frameLimit && len(frame) > 0 {
				if err := out.Send(s.stamp(frame, oldest, since)); err != nil {
					return err
				}
				frame, oldest = s.getFrame(), 0
			}
			frame = appendMsg(frame, e.Data)
			if e.At >= since && (oldest == 0 || e.At < oldest) {
				oldest = e.At
			}
		}
		frame = s.stamp(frame, oldest, since)
		if len(frame) == 0 {
			s.putFrame(frame)
		} else if err := out.Send(frame); err != nil { // out gives it back to the pool
			return err
		}
		// A trickle of lines would cost a write per line per browser:
		// let a few milliseconds' worth gather into the next message.
		if len(b.Entries) < coalesceBelow {
			pause.Reset(coalesceFor)
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-pause.C:
			}
		}
	}
}

// stamp ends a browser message whose oldest line received since the
// browser came was received at oldest (0: none was) with its send time
// and that start, {"sent":µs,"since":µs}, for the page's own measure (a
// line received before since is history), and observes the server stage
// (latency.go).
func (s *Service) stamp(frame []byte, oldest, since int64) []byte {
	if oldest == 0 {
		return frame
	}
	now := time.Now()
	s.lat.sent(oldest, now)
	if len(frame) > 0 {
		frame = append(frame, '\n')
	}
	frame = strconv.AppendInt(append(frame, `{"sent":`...), now.UnixMicro(), 10)
	frame = strconv.AppendInt(append(frame, `,"since":`...), since, 10)
	return append(frame, '}')
}

// resumeWait is how long a browser's ?after= may wait for this replica's
// hub to reach that line before the browser is told to start over.
const resumeWait = 2 * time.Second

func appendMsg(frame, msg []byte) []byte {
	if len(frame) > 0 {
		frame = append(frame, '\n')
	}
	return append(frame, msg...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are encoded
	}
	return b
}

// browserWriteBuffer is the write buffer of a browser's connection. The
// one net/http hands over with the connection holds 4 KiB: a message over
// that, as a batch of ten klog lines is, cost two write calls (the websocket
// header and the start of the message, then the rest), and write calls
// were most of what fan-out cost.
const browserWriteBuffer = 8 << 10

// writeBuffered gives the websocket library a connection with a write
// buffer of browserWriteBuffer when it hijacks it.
type writeBuffered struct{ http.ResponseWriter }

func (w writeBuffered) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil { // the 101 response, normally sent already
		conn.Close()
		return nil, nil, err
	}
	return conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(conn, browserWriteBuffer)), nil
}

func (w writeBuffered) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeTimeout is how long a websocket message may take to write before
// its connection is given up as stalled (clients.Writer).
const writeTimeout = 10 * time.Second
