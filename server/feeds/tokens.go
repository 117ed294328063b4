package feeds

// Feeds with an ingest token of their own: a room's feed takes only its
// room's token (package rooms grants and revokes it), the other feeds the
// server's IngestToken. Feeds know nothing of rooms: only of tokens.

import "sync"

// tokens is the feeds' own ingest tokens, by feed name.
type tokens struct {
	mu sync.Mutex
	m  map[string]string
}

// GrantToken makes feed take only token for ingest (and not the server's
// IngestToken); a later grant replaces it.
func (s *Service) GrantToken(feed, token string) {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	if s.tokens.m == nil {
		s.tokens.m = map[string]string{}
	}
	s.tokens.m[feed] = token
}

// RevokeToken takes feed's own token back: the feed is back to no token
// of its own.
func (s *Service) RevokeToken(feed string) {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	delete(s.tokens.m, feed)
}

// feedToken is the token granted to feed, if one was.
func (s *Service) feedToken(feed string) (string, bool) {
	s.tokens.mu.Lock()
	defer s.tokens.mu.Unlock()
	tok, ok := s.tokens.m[feed]
	return tok, ok
}
