// Package server is syncloop's web site: the reading pages for a tag, the
// live feed endpoints, and the middleware around them. It knows HTTP and
// templates; the Reading comes from the extractor, log lines from classify.
package server

import (
	"log/slog"
	"net/http"
	"time"
)

// Config is everything the site needs from its command line.
type Config struct {
	DefaultTag string // the tag / redirects to
	SourceDir  string // a local Kubernetes checkout served instead of the proxy
	CacheDir   string // "" means os.UserCacheDir()/syncloop
	Getenv     func(string) string
	Client     *http.Client // for the module proxy; nil means a default one
	Logger     *slog.Logger

	// The live feed (see live.go).
	IngestToken string        // bearer token a relay must present; "" disables ingest
	JournalCmd  string        // a command whose output feeds the default feed (serve --journal-cmd)
	JournalFile string        // a saved journal replayed into the default feed
	RingSize    int           // lines kept per feed for late joiners; 0 means 5000
	DemoPeriod  time.Duration // pace of the demo feed; 0 means its default
}
