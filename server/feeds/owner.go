package feeds

// Owned feeds. A feed whose name begins with an owner's prefix (package
// rooms: "room-") is its owner's. The owner registers once, at start
// (Own: its prefix, and how to look one of its feeds up), and lets a feed
// go with DropFeed; the feed routes ask the feeds only, which ask the
// owner's lookup what the feed is now: the tag it is read at, the one
// token its ingest takes, whether it takes lines, whether the demo runs
// in it while nothing feeds it, and its notes. A feed its owner does not
// have is answered 404, one it let go 410 (a browser's socket closed with
// CloseGone): the owner's words, as the lookup gives them. Nothing here
// knows what an owner is.

import (
	"crypto/subtle"
	"errors"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/go-chi/chi/v5"
	"github.com/syncloop/syncloop/server/httperr"
)

// CloseGone is the websocket close code of a browser's socket to a feed
// its owner let go (a room that expired): 4000 plus the HTTP status that
// says the same, as CloseFeedGone.
const CloseGone websocket.StatusCode = 4410

// Owned is what an owner says of one of its feeds.
type Owned struct {
	Tag   string // the tag its lines are read at
	Token string // the one token its ingest takes; "" takes none
	// Closed, when set, says why the feed takes no more lines: ingest
	// and journal requests are answered 410 with it.
	Closed string
	// Demo runs the demo in the feed while no journal ever fed it and a
	// browser watches (DemoWhileQuiet).
	Demo bool
	// Waiting is the feed's note while nothing has fed it; History, while
	// nothing feeds it and it has lines from before.
	Waiting, History string
	// WrongToken is what a relay without the feed's token is told
	// (401), and Rotated what one whose token stopped opening the feed
	// is told as it is closed.
	WrongToken, Rotated string
}

// errGone is a lookup's error for a feed its owner let go.
type errGone struct{ why string }

func (e errGone) Error() string { return e.why }

// Gone is the error an owner's lookup gives for a feed it let go: its
// requests are answered 410 with why.
func Gone(why string) error { return errGone{why} }

// owner is one Own's registration.
type owner struct {
	prefix string
	lookup func(name string) (Owned, error)
}

// Own makes the feeds whose names begin with prefix the owner's: each
// request to one asks lookup what it is now (an error: it has none, see
// Gone). Call it once, before the feeds are served.
func (s *Service) Own(prefix string, lookup func(name string) (Owned, error)) {
	s.ownersMu.Lock()
	defer s.ownersMu.Unlock()
	s.owners = append(s.owners, owner{prefix, lookup})
}

// owned asks the named feed's owner what it is; held is false for a feed
// no owner has the prefix of.
func (s *Service) owned(name string) (o Owned, held bool, err error) {
	s.ownersMu.Lock()
	var lookup func(string) (Owned, error)
	for _, ow := range s.owners {
		if strings.HasPrefix(name, ow.prefix) {
			lookup = ow.lookup
			break
		}
	}
	s.ownersMu.Unlock()
	if lookup == nil {
		return Owned{}, false, nil
	}
	o, err = lookup(name)
	return o, true, err
}

// admit answers a request to an owned feed its owner does not open to it
// (writes: the request brings lines), and reports whether it may go on.
// A browser's socket to a feed let go is upgraded only to be closed with
// CloseGone: a page reads a close code, not a refused upgrade's status.
// An admitted feed is what its owner says (hold), and a browser's
// socket starts its demo (socket).
func (s *Service) admit(w http.ResponseWriter, r *http.Request, socket, writes bool) bool {
	name := chi.URLParam(r, "feed")
	o, held, err := s.owned(name)
	var gone errGone
	switch {
	case !held:
		return true
	case errors.As(err, &gone) && socket && strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		if conn, err := websocket.Accept(w, r, nil); err == nil {
			conn.Close(CloseGone, gone.why)
		}
		return false
	case errors.As(err, &gone):
		httperr.Text(w, httperr.New(http.StatusGone, gone.why))
		return false
	case err != nil:
		httperr.Text(w, httperr.New(http.StatusNotFound, err.Error()))
		return false
	case writes && o.Closed != "":
		httperr.Text(w, httperr.New(http.StatusGone, o.Closed))
		return false
	}
	s.hold(name, o)
	if socket && o.Demo && o.Closed == "" {
		s.DemoWhileQuiet(name)
	}
	return true
}

// hold makes the named owned feed (made if need be) what its owner says:
// its notes and its tag. The tag is its owner's record as this replica
// has it: a move another replica told of (SetFeedTag) that the record has
// not caught up with is undone until it has, and one this replica was
// not told of is caught up with here.
func (s *Service) hold(name string, o Owned) {
	f, err := s.feed(name)
	if err != nil {
		s.log.Warn("feeds: an owned feed", "feed", name, "err", err)
		return
	}
	stored := f.pub.storedLines() > 0
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ownerWaiting(o.Waiting, o.History, stored || f.hub.Next() > 1)
	f.pinTagLocked(o.Tag)
}

// feedToken is the token the named feed takes if its owner says (ok
// true), and what a relay without it is told.
func (s *Service) feedToken(name string) (tok string, ok bool, o Owned) {
	o, held, err := s.owned(name)
	if !held {
		return "", false, o
	}
	if err != nil {
		return "", true, o // its owner has it no longer: it takes none
	}
	return o.Token, true, o
}

// checkToken reports whether r carries the token its feed takes (its
// owner's, or the ingest token), comparing in constant time.
func (s *Service) checkToken(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	want := s.cfg.IngestToken
	if own, has, _ := s.feedToken(chi.URLParam(r, "feed")); has {
		want = own
	}
	return ok && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
