package feeds

import (
	"errors"
	"net/http"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/httperr"
)

// The feeds' answers to a request they cannot serve, one mapping for
// every route that names a feed (a browser's socket, a relay's ingest and
// cursor, the fired record, the export). They answer in plain text
// (httperr.Text): a relay prints it, a page reads the status.

// feedError is what a request for a feed is told when looking it up gave
// f and err; nil when f serves it.
func feedError(f *feed, err error) *httperr.Error {
	switch {
	case errors.Is(err, errTooManyFeeds):
		return &httperr.Error{Status: http.StatusServiceUnavailable, Heading: "this server has too many feeds; reuse one", Err: err}
	case errors.Is(err, errStorage):
		return &httperr.Error{Status: http.StatusServiceUnavailable, Heading: err.Error() + "; retry later", Err: err}
	case errors.Is(err, broker.ErrNoSpace):
		return &httperr.Error{Status: http.StatusInsufficientStorage, RetryAfter: 60, Err: err,
			Heading: "this server's disk is nearly full: it takes no new feed until space frees",
			Message: err.Error()} // how much is free, and how much a feed needs
	case err != nil: // a name no feed can have
		return &httperr.Error{Status: http.StatusNotFound, Heading: err.Error()}
	case f == nil:
		return errNoSuchFeed
	}
	return nil
}

var (
	errNoSuchFeed = &httperr.Error{Status: http.StatusNotFound,
		Heading: "no such feed: a feed exists once a relay sends to it (syncloop relay)"}
	// errStillReading: a feed this replica follows only since a moment
	// has not read its stored lines yet.
	errStillReading = &httperr.Error{Status: http.StatusServiceUnavailable,
		Heading: "the feed's stored lines are still being read; retry later"}
	errShuttingDown = &httperr.Error{Status: http.StatusServiceUnavailable,
		Heading: "server shutting down", Advice: "Retry in a moment."}
)
