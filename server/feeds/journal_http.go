package feeds

// A journal with nothing to install: PUT or POST /feeds/{feed}/journal
// takes a journal streamed in the request body, as curl sends one
// (chunked, no length: `journalctl -o json --all | curl -T - …`), and
// GET /feeds/{feed}/cursor answers where a journalctl run again resumes.
//
// The lines take the relay's path (ingest.go): read a line at a time,
// cut at relay.MaxLineBytes as the relay cuts them, grouped while
// earlier ones are stored, shown as they arrive, stored by the same
// publish (Nats-Msg-Id, the per-feed highest cursor, PubAck), and the
// request is answered only once they are on disk. A journald entry
// stored already is dropped, so the same command run again after a
// break stores each entry once. The body has no overall size cap (a
// stream may last hours); what is held at once is one line, and a
// group of lines being stored.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/relay"
)

const (
	// journalIdle is how long a journal's body may send nothing before
	// it is closed: a kubelet at its default verbosity may log nothing
	// for minutes, and whoever runs the command again loses nothing.
	journalIdle = time.Hour
	// journalQueue is how many lines are read ahead while earlier ones
	// are stored.
	journalQueue = 4096
)

// JournalSummary is the answer to a journal's body, once it ended: how
// many lines came, how many were stored, how many were stored already
// (dropped), how many were cut at relay.MaxLineBytes, and the last
// journald cursor now stored (where `journalctl --after-cursor` goes on).
type JournalSummary struct {
	Received   int    `json:"received"`
	Stored     int    `json:"stored"`
	Duplicates int    `json:"duplicates"`
	Cut        int    `json:"cut"`
	LastCursor string `json:"last_cursor"`
	Error      string `json:"error,omitempty"`
}

var (
	errJournalStopped = errors.New("the server is shutting down")
	errJournalDone    = errors.New("the journal's request ended")
)

// HandleJournal is PUT and POST /feeds/{feed}/journal: a streamed
// journal, with the token the feed's relay takes.
func (s *Service) HandleJournal() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, false, true) {
			return
		}
		f := s.enterIngest(w, r)
		if f == nil {
			return
		}
		defer s.wg.Done()
		body := &streamBody{r: r.Body, rc: http.NewResponseController(w)}
		stop := context.AfterFunc(s.ctx, body.stop)
		defer stop()

		f.attach()
		finished := false
		defer func() { f.detach(finished) }()
		s.log.Info("feeds: journal attached", "feed", f.name, "remote", r.RemoteAddr)
		sum, status := s.ingestJournal(r, f, body)
		finished = status == http.StatusOK
		s.log.Info("feeds: journal ended", "feed", f.name, "received", sum.Received, "stored", sum.Stored, "err", sum.Error)
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(status)
		b, _ := json.Marshal(sum)
		w.Write(append(b, '\n'))
	})
}

// ingestJournal stores the lines of body in f until it ends, and
// answers the summary and the status to respond with.
func (s *Service) ingestJournal(r *http.Request, f *feed, body *streamBody) (JournalSummary, int) {
	var sum JournalSummary
	lines := make(chan relay.Line, journalQueue)
	done := make(chan struct{})
	var readErr error
	go func() { // owned: ends at the body's end, or once done is closed and the body stopped
		defer close(lines)
		readErr = relay.ReadLines(context.Background(), body, func(in relay.Line) error {
			select {
			case lines <- in:
				return nil
			case <-done:
				return errJournalDone
			}
		})
	}()
	finish := func() {
		close(done)
		body.stop()
		for range lines { // until the reader is done
		}
	}
	var synced <-chan struct{} // closed once the last group stored is on disk
	group := make([]relay.Line, 0, 64)
	linger := time.NewTimer(0)
	defer linger.Stop()
	for in := range lines {
		group = gatherJournal(append(group[:0], in), lines, linger)
		for _, g := range group {
			if len(g.Raw) >= relay.MaxLineBytes {
				sum.Cut++ // at the cap: the relay's sources cut it there
			}
		}
		if !s.checkToken(r) { // an owned feed's token was rotated since, or its owner let it go
			finish()
			_, _, o := s.feedToken(f.name)
			sum.Error = cmp.Or(o.Rotated, "this token no longer opens the feed (rotated?): run the command again with the feed's new token")
			return sum.counted(), http.StatusUnauthorized
		}
		sum.Received += len(group)
		s.lat.arrived(group, time.Now())
		f.mu.Lock()
		f.showArrivingLocked(group)
		f.mu.Unlock()
		n, err := f.storeCounted(group, false)
		sum.Stored += n
		if err != nil {
			sum.Received -= len(group) - n // not stored: neither duplicates
			finish()
			s.log.Error("feeds: journal", "feed", f.name, "err", err)
			sum.Error = "the server cannot store lines: run the same command again later; what was stored is kept"
			return sum.counted(), http.StatusServiceUnavailable
		}
		for _, g := range group {
			if g.Cursor {
				sum.LastCursor = g.ID
			}
		}
		synced = s.synced()
		clear(group)
	}
	var status int
	sum.Error, status = journalEnd(body, readErr)
	if synced != nil && !isClosed(synced) {
		select {
		case <-synced:
		case <-s.ctx.Done():
			sum.Error, status = "the server stopped before the last lines were on disk: run the same command again", http.StatusServiceUnavailable
		case <-r.Context().Done():
		}
	}
	return sum.counted(), status
}

// journalEnd is what the summary says of how the body ended, and the
// status of the answer.
func journalEnd(body *streamBody, readErr error) (string, int) {
	switch {
	case body.isStopped():
		return errJournalStopped.Error() + ": run the same command again; what was stored is kept, and resent entries are dropped", http.StatusServiceUnavailable
	case errors.Is(readErr, os.ErrDeadlineExceeded):
		return "nothing came for " + journalIdle.String() + ": run the same command again", http.StatusRequestTimeout
	case readErr != nil:
		return "reading the journal: " + readErr.Error(), http.StatusBadRequest
	}
	return "", http.StatusOK
}

// counted is s with its duplicates counted: the lines received and
// given to the store that it did not store (a group the store failed
// on counts as received).
func (s JournalSummary) counted() JournalSummary {
	s.Duplicates = s.Received - s.Stored
	return s
}

// gatherJournal appends to group the lines that arrive within
// ingestLinger, up to one stored message's worth, as groupLines does for
// a relay's messages.
func gatherJournal(group []relay.Line, lines <-chan relay.Line, linger *time.Timer) []relay.Line {
	size := 0
	for _, in := range group {
		size += len(in.Raw)
	}
	linger.Reset(ingestLinger)
	for len(group) < maxLinesPerMsg && size < msgBytes/2 {
		select {
		case in, ok := <-lines:
			if !ok {
				return group
			}
			group = append(group, in)
			size += len(in.Raw)
		case <-linger.C:
			return group
		}
	}
	return group
}

// streamBody is a request body read for as long as it sends something:
// each read may wait journalIdle (the server's --read-timeout would end
// a stream after seconds), until stop ends the reading.
type streamBody struct {
	r       io.Reader
	rc      *http.ResponseController
	mu      sync.Mutex
	stopped bool
}

func (b *streamBody) Read(p []byte) (int, error) {
	b.mu.Lock()
	if b.stopped {
		b.mu.Unlock()
		return 0, errJournalStopped
	}
	err := b.rc.SetReadDeadline(time.Now().Add(journalIdle))
	b.mu.Unlock()
	if err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	return b.r.Read(p)
}

// stop ends the reading: a read under way returns at once.
func (b *streamBody) stop() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.stopped {
		b.stopped = true
		b.rc.SetReadDeadline(time.Now())
	}
}

func (b *streamBody) isStopped() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stopped
}

// HandleCursor is GET /feeds/{feed}/cursor: the last journald cursor
// stored, as text, for `journalctl --after-cursor`; 204 when the feed has
// stored none. It takes the feed's ingest token: a cursor says where a
// journal is.
func (s *Service) HandleCursor() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, false, false) {
			return
		}
		if !s.authorizeIngest(w, r) {
			return
		}
		f, err := s.existingFeed(chi.URLParam(r, "feed"))
		if e := feedError(f, err); e != nil {
			httperr.Text(w, e)
			return
		}
		ready := time.NewTimer(followWithin)
		defer ready.Stop()
		select { // the lines stored before this replica followed the feed
		case <-f.ready:
		case <-ready.C:
			httperr.Text(w, errStillReading)
			return
		case <-r.Context().Done():
			return
		}
		f.mu.Lock()
		cursor := f.counts.lastCursor
		f.mu.Unlock()
		w.Header().Set("Cache-Control", "no-store")
		if cursor == "" {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, cursor+"\n")
	})
}
