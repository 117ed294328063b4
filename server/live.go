package server

import (
	"net/http"

	"github.com/syncloop/syncloop/extractor"
)

// live owns the feeds: per-feed hubs, ingest from relays, the demo feed. (stub)
type live struct{}

// newLive starts the live side; reading returns the Reading for a tag once
// it is loaded (nil before), so classifiers can be built lazily.
func newLive(cfg Config, reading func(tag string) *extractor.Reading) *live { return &live{} }

// Close stops every feed goroutine and closes websockets with a proper code.
func (l *live) Close() {}

func (l *live) handleFeedSocket() http.Handler { return http.NotFoundHandler() }
func (l *live) handleIngest() http.Handler     { return http.NotFoundHandler() }
func (l *live) handleMetrics() http.Handler    { return http.NotFoundHandler() }
func (l *live) handleHealthz() http.Handler    { return http.NotFoundHandler() }
