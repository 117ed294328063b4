package feeds

// Ingest: GET /feeds/{feed}/ingest, a relay's lines into the feed's
// stream (the protocol is in feeds.go's package comment), acknowledged
// once on disk.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/jsonstr"
	"github.com/syncloop/syncloop/server/relay"
)

// enterIngest is the feed a relay's request r may write to: it has the
// feed's token, the feed exists, and the service takes work (the caller
// then defers s.wg.Done()); nil when not, and r has been answered why.
func (s *Service) enterIngest(w http.ResponseWriter, r *http.Request) *feed {
	if !s.authorizeIngest(w, r) {
		return nil
	}
	f := s.feedOr404(w, r)
	if f == nil {
		return nil
	}
	if !s.enter() {
		httperr.Text(w, httperr.New(http.StatusServiceUnavailable, "server shutting down"))
		return nil
	}
	return f
}

// HandleIngest is GET /feeds/{feed}/ingest: a relay's websocket.
func (s *Service) HandleIngest() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, false, true) {
			return
		}
		f := s.enterIngest(w, r)
		if f == nil {
			return
		}
		defer s.wg.Done()
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			s.log.Info("feeds: relay websocket refused", "feed", f.name, "err", err)
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(-1) // enforced by readRelay, to close with a reason a person can act on
		stop := context.AfterFunc(s.ctx, func() { conn.Close(websocket.StatusGoingAway, "server shutting down") })
		defer stop()

		f.attach()
		finished := false
		defer func() { f.detach(finished) }()
		s.log.Info("feeds: relay attached", "feed", f.name, "remote", r.RemoteAddr)
		finished = s.ingestConn(r, f, conn)
	})
}

// authorizeIngest answers a request without the token the feed takes
// (403 when ingest is off, 401 otherwise) and reports whether it has it.
func (s *Service) authorizeIngest(w http.ResponseWriter, r *http.Request) bool {
	_, ownToken, o := s.feedToken(chi.URLParam(r, "feed"))
	if s.cfg.IngestToken == "" && !ownToken {
		httperr.Text(w, httperr.New(http.StatusForbidden, "ingest is disabled on this server: start it with syncloop serve --token T"))
		return false
	}
	if !s.checkToken(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="syncloop ingest"`)
		msg := "missing or wrong token: send Authorization: Bearer <the token given to syncloop serve --token>"
		if ownToken {
			msg = cmp.Or(o.WrongToken, "missing or wrong token for this feed: its owner gives the one it takes")
		}
		httperr.Text(w, httperr.New(http.StatusUnauthorized, msg))
		return false
	}
	return true
}

// ingestMsg is one relay message, decoded: its lines, or why it cannot be.
type ingestMsg struct {
	lines  []relay.Line
	err    error
	tooBig bool
}

// ingestConn stores what the relay on conn sends to f, and acknowledges
// it. A reader (readRelay) decodes the relay's messages while the
// previous ones are being stored: whatever arrived meanwhile is stored
// as one JetStream message and acknowledged with one ack (the last
// line's id, once JetStream has acknowledged it). A relay that sends
// many small batches then costs one publish round trip per group, not
// per batch. It reports whether the relay ended cleanly: its journal
// ended, every line acknowledged, and it closed with a normal closure
// (relay.Client does so after a --file's last line).
func (s *Service) ingestConn(r *http.Request, f *feed, conn *websocket.Conn) bool {
	ctx := r.Context()
	out := clients.NewWriter(ctx, conn, clients.WriterConfig{Queue: ackQueue, Block: true, Timeout: writeTimeout})
	defer out.Stop()
	msgs := make(chan ingestMsg, ingestQueue)
	done := make(chan struct{})
	readerDone := make(chan struct{})
	// Browsers get each message's lines as it arrives (deliver.go), while
	// what came before is being stored.
	show := func(lines []relay.Line) {
		if s.checkToken(r) {
			f.mu.Lock()
			f.showArrivingLocked(lines)
			f.mu.Unlock()
		}
	}
	go func() { // owned: ends when conn closes or the handler returns
		defer close(readerDone)
		s.readRelay(conn, msgs, done, show)
	}()
	defer func() { close(done); conn.CloseNow(); <-readerDone; f.takeBackUnstored() }()
	// Acks go out in order from their own goroutine, each once what it
	// acknowledges is on disk (broker.Synced): the next group is read
	// and stored meanwhile.
	acks := make(chan pendingAck, ackQueue)
	ackerDone := make(chan struct{})
	go func() { // owned: ends when acks is closed, or the connection fails
		defer close(ackerDone)
		// The acks sent are written before the handler goes on.
		if s.sendAcks(ctx, acks, out) != nil || out.Flush() != nil {
			conn.CloseNow() // the reader notices, and the handler ends
		}
	}()
	defer func() { close(acks); <-ackerDone }()
	var (
		lines   []relay.Line
		pending *ingestMsg
		linger  = time.NewTimer(0)
	)
	defer linger.Stop()
	for {
		var m ingestMsg
		if pending != nil {
			m, pending = *pending, nil
		} else {
			m = <-msgs
		}
		lines, pending = groupLines(m, msgs, lines[:0], linger)
		if len(lines) > 0 {
			if !s.checkToken(r) { // an owned feed's token was rotated since, or its owner let it go
				conn.Close(websocket.StatusPolicyViolation, "this token no longer opens the feed (rotated?): copy the new relay command")
				return false
			}
			last, err := f.ingest(lines, false)
			clear(lines)
			if err != nil {
				s.log.Error("feeds: ingest", "feed", f.name, "err", err)
				conn.Close(websocket.StatusInternalError, "the server cannot store lines; retry later")
				return false
			}
			if last != "" {
				select {
				case acks <- pendingAck{last, s.synced()}:
				case <-ackerDone:
					return false
				}
			}
		}
		switch {
		case m.tooBig:
			conn.Close(websocket.StatusMessageTooBig, "message over 1 MiB: send fewer lines per batch")
			return false
		case errors.Is(m.err, errBadBatch):
			conn.Close(websocket.StatusUnsupportedData, "want {\"lines\":[{\"id\":…,\"raw\":…}]}")
			return false
		case m.err != nil:
			return websocket.CloseStatus(m.err) == websocket.StatusNormalClosure
		}
	}
}

// readRelay reads and decodes the relay's messages into msgs, and gives
// each one's lines to show, until a read fails, a message cannot be
// taken, or done is closed. Message buffers come from a pool shared by
// the relays (a relay's batch is up to ~512 KiB, held only while
// decoded).
func (s *Service) readRelay(conn *websocket.Conn, msgs chan<- ingestMsg, done <-chan struct{}, show func([]relay.Line)) {
	for {
		// No context per read (see clients.Writer): the request's end
		// closes the connection, which ends the read.
		var m ingestMsg
		_, rd, err := conn.Reader(context.Background())
		if err == nil {
			buf := s.ingestBufs.Get().(*bytes.Buffer)
			buf.Reset()
			_, err = buf.ReadFrom(io.LimitReader(rd, ingestLimit+1))
			m.tooBig = buf.Len() > ingestLimit
			if err == nil && !m.tooBig {
				m.lines, err = relay.DecodeBatch(buf.Bytes(), nil) // copies what it keeps
				if err != nil {
					err = errBadBatch
				} else {
					s.lat.arrived(m.lines, time.Now())
					show(m.lines)
				}
			}
			s.ingestBufs.Put(buf)
		}
		m.err = err
		select {
		case msgs <- m:
		case <-done:
			return
		}
		if err != nil || m.tooBig {
			return
		}
	}
}

// groupLines appends m's lines to lines, and those of the messages that
// arrive within ingestLinger, up to one stored message's worth. A message
// that failed ends the group: it is returned as pending, to be handled
// once the lines before it are stored.
func groupLines(m ingestMsg, msgs <-chan ingestMsg, lines []relay.Line, linger *time.Timer) ([]relay.Line, *ingestMsg) {
	lines = append(lines, m.lines...)
	size := 0
	for _, in := range lines {
		size += len(in.Raw)
	}
	linger.Reset(ingestLinger)
	for m.err == nil && !m.tooBig && len(lines) < maxLinesPerMsg && size < msgBytes/2 {
		select {
		case next := <-msgs:
			if next.err != nil || next.tooBig {
				return lines, &next
			}
			lines = append(lines, next.lines...)
			for _, in := range next.lines {
				size += len(in.Raw)
			}
		case <-linger.C:
			return lines, nil
		}
	}
	return lines, nil
}

// ingestLinger is how long ingest gathers a relay's messages into one
// stored message. Browsers have the lines as they arrive (deliver.go):
// what waits is the relay's ack, which a relay sending ahead of its acks
// (relay.DefaultWindow) does not feel. Fewer, larger messages cost
// JetStream less per line: at 50 relays of 1,000 lines a second, a
// message per relay batch (10 ms) was most of the server's CPU beyond
// the single-process build's.
const ingestLinger = 25 * time.Millisecond

// ingestQueue is how many relay messages a connection reads ahead while
// earlier ones are stored.
const ingestQueue = 16

// ackQueue is how many stored groups' acks may wait for the disk before
// ingest waits too.
const ackQueue = 64

// pendingAck is a relay's ack waiting for the disk: the id of the last line
// stored, and the channel closed once it is on disk.
type pendingAck struct {
	id     string
	synced <-chan struct{}
}

// sendAcks writes each ack once its lines are on disk, in order, until
// acks is closed; acks whose lines reached the disk together go as one
// (the last), and one that is ready never waits for a later one.
func (s *Service) sendAcks(ctx context.Context, acks <-chan pendingAck, out *clients.Writer) error {
	var next *pendingAck // taken from acks, not on disk yet
	for {
		a, ok := pendingAck{}, true
		if next != nil {
			a, next = *next, nil
		} else if a, ok = <-acks; !ok {
			return nil
		}
		select {
		case <-a.synced:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.ctx.Done():
			return s.ctx.Err()
		}
	later:
		for {
			select {
			case b, ok := <-acks:
				if !ok {
					break later
				}
				select {
				case <-b.synced:
					a = b
				default:
					next = &b
					break later
				}
			default:
				break later
			}
		}
		msg := append(jsonstr.Append([]byte(`{"ack":`), a.id), '}') // out keeps it until written
		if err := out.Send(msg); err != nil {
			return err
		}
	}
}

// takeBackUnstored takes back the feed's lines shown but not stored, once
// ingest ends without publishing them (deliver.go). With f.pub.mu held,
// none is being published.
func (f *feed) takeBackUnstored() {
	f.pub.mu.Lock()
	defer f.pub.mu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.takeBackLocked()
}

// attach records a relay on f; the demo stops for good on the first one.
func (f *feed) attach() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.relayAttached()
}

// detach records a relay gone from f: finished, its journal ended
// (ingestConn), or disconnected.
func (f *feed) detach(finished bool) {
	stored := f.pub.storedLines() // the lines the feed holds
	f.mu.Lock()
	defer f.mu.Unlock()
	f.relayDetached(finished, stored)
}

// ingest stores lines in the feed's stream, skipping those stored
// already, and returns the id to acknowledge (the batch's last) once
// JetStream has them. Browsers get them through the feed's consumer.
func (f *feed) ingest(lines []relay.Line, isDemo bool) (string, error) {
	var last string
	for _, in := range lines {
		if in.ID != "" {
			last = in.ID
		}
	}
	if err := f.store(lines, isDemo); err != nil {
		return "", err
	}
	return last, nil
}

// FeedRelayed reports whether a relay feeds the named feed: one is
// attached to this replica, or a journal's line arrived (through any
// replica) within the last two minutes.
func (s *Service) FeedRelayed(name string) bool {
	s.mu.Lock()
	f := s.feeds[name]
	s.mu.Unlock()
	if f == nil || !f.isStarted() || f.startErr != nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.src.relays > 0 || (!f.counts.lastReal.IsZero() && time.Since(f.counts.lastReal) < 2*time.Minute)
}
