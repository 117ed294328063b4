package feeds

// Feed tokens: a feed granted a token of its own (a room's) takes only
// that token, not the server's ingest token (serve --token). Whoever
// owns such a feed (package rooms) grants its token when the feed is
// made or the token rotates, and revokes it when the feed goes; the
// feeds know nothing of rooms. A grant is this replica's state: each
// replica's owner grants on its own Service.

import (
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// GrantToken makes the named feed take only token from now on: a relay
// attached with another is closed at its next batch. An empty token
// opens nothing: the feed takes no token at all (a room's feed whose
// room is gone).
func (s *Service) GrantToken(feed, token string) {
	s.tokensMu.Lock()
	defer s.tokensMu.Unlock()
	s.tokens[feed] = token
}

// RevokeToken takes the named feed's own token away: it takes the
// server's ingest token again, like any feed.
func (s *Service) RevokeToken(feed string) {
	s.tokensMu.Lock()
	defer s.tokensMu.Unlock()
	delete(s.tokens, feed)
}

// feedToken is the token the named feed was granted (ok true).
func (s *Service) feedToken(feed string) (string, bool) {
	s.tokensMu.Lock()
	defer s.tokensMu.Unlock()
	tok, ok := s.tokens[feed]
	return tok, ok
}

// checkToken reports whether r carries the token its feed takes (its
// own, or the ingest token), comparing in constant time.
func (s *Service) checkToken(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	want := s.cfg.IngestToken
	if own, has := s.feedToken(chi.URLParam(r, "feed")); has {
		want = own
	}
	return ok && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}
