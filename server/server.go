// Package server is syncloop's web site as one http.Handler. It is the
// composition root: NewPlan and Build (build.go) open the shared state
// (package broker), the reading pages (site), the live feeds (feeds), the
// readers' notes (annotations), the pair-reading rooms (rooms) and the
// classes, and wire what each asks of the others; New only routes to
// them (routes.go), with the middleware around them. Only this package
// imports them all.
package server

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/internal/wake"
	"github.com/syncloop/syncloop/server/rooms"
	"github.com/syncloop/syncloop/server/site"
)

// Config is everything the site needs from its command line.
type Config struct {
	DefaultTag string // the tag / redirects to
	SourceDir  string // a local Kubernetes checkout served instead of the proxy
	CacheDir   string // "" means os.UserCacheDir()/syncloop
	Getenv     func(string) string
	Client     *http.Client // for the module proxy; nil means a default one
	Logger     *slog.Logger

	// The live feeds (package feeds).
	IngestToken string // bearer token a relay must present; "" disables ingest
	JournalCmd  string // a command whose output feeds the default feed (serve --journal-cmd)
	JournalFile string // a saved journal replayed into the default feed
	RingSize    int    // lines kept per feed for late joiners; 0 means 5000
	// HistoryBytes bounds the recent lines all feeds keep together (their
	// messages to browsers), shared equally by the feeds; 0 means
	// feeds.DefaultHistoryBytes.
	HistoryBytes int
	// FeedBytes bounds what JetStream keeps of each feed (compressed); 0
	// means feeds.DefaultFeedBytes. Nothing is kept over a week; all feeds
	// together keep at most feeds.MaxStoredBytes(FeedBytes).
	FeedBytes  int64
	DemoPeriod time.Duration // pace of the demo feed; 0 means its default

	// Shared state (server/broker): NATS JetStream. With NATS empty an
	// embedded server keeps it under DataDir ("nats"), or in memory when
	// DataDir is "" too; NATSListen opens the embedded server's client port.
	NATS       []string
	NATSListen string
	// NATSTokenFile holds the token NATS clients present (broker.Config.TokenFile).
	NATSTokenFile string
	NATSName      string // this replica's name in NATS; "" means "syncloop"
	// NATSSync is how often the embedded server fsyncs; 0 fsyncs each
	// write before a relay's lines are acknowledged (broker.Config.SyncInterval).
	NATSSync time.Duration

	// Pair-reading rooms (package rooms, wired in rooms.go).
	DataDir    string        // JetStream's files live here (an older rooms.json is imported); "" keeps state in memory only
	RoomTTL    time.Duration // idle time before a room expires; 0 means 24h
	MaxRooms   int           // rooms held by all replicas together; 0 means rooms.DefaultMaxRooms
	MaxReaders int           // readers per room; 0 means 32
	// RoomsPerClient is how many rooms one client address holds at once,
	// on all replicas together; 0 means rooms.DefaultPerOwner.
	RoomsPerClient int
	// RoomUnjoinedTTL is how long a room no reader ever joined lives;
	// 0 means rooms.DefaultUnjoinedTTL.
	RoomUnjoinedTTL time.Duration
	// ClassToken (serve --class-token), when set, is what a creator
	// presents to make a class of more than classes.DefaultAnonBudget rooms.
	ClassToken string

	// Per-client limits (package clients).
	TrustedProxies []netip.Prefix // proxies whose X-Forwarded-For names the client; none by default
	IPv6Prefix     int            // bits of an IPv6 address that name one client; 0 means /64
	// NewTagsPerHour is how many tags never fetched before one client (and
	// all rooms' tag switches together) may have fetched an hour; 0 means
	// site.DefaultNewTagsPerHour.
	NewTagsPerHour   int
	SocketsPerClient int // open browser sockets (feeds and rooms) per client; 0 means clients.DefaultSocketsPerClient
	// PingEvery is how often browser feed sockets and room sockets are
	// pinged; one that does not answer within as long is closed. 0 means
	// clients.DefaultPingEvery.
	PingEvery time.Duration

	// Quiz: a course's server; every page leaves the site's notes and
	// what is derived from them out, and the checker says only yes or no
	// (Deps.inQuiz, quiz.go).
	Quiz bool

	// Load fetches a Reading; nil means extractor.Load. Tests replace it.
	Load func(context.Context, extractor.Options) (*extractor.Reading, error)
	// LoadVolume fetches the second reading; nil means volume.Load.
	LoadVolume func(context.Context, extractor.Options) (*volume.Reading, error)
}

// Deps are the opened parts the site is made of: what Build opens from a
// Plan, or what a caller opened itself. New wires them into routes.
type Deps struct {
	// Config is the settings the routes and /healthz read (DefaultTag,
	// DataDir, Logger).
	Config  Config
	Site    *site.Site
	Broker  *broker.Broker
	Sockets *clients.Sockets // caps the browser sockets (feeds' and rooms') per client
	Feeds   *feeds.Service
	Rooms   *rooms.Service
	Notes   *annotations.Handlers
	Classes *classes.Handlers
	// Metrics is what GET /metrics serves: the registry the parts
	// registered their collectors with.
	Metrics prometheus.Gatherer
	// Changed is told by the feeds, the notes and the rooms of each change
	// an instructor's live overview shows; the classes' streams wait on it.
	Changed *wake.Signal
	// Close stops the parts and waits for them; Server.Close calls it once.
	Close func()
}

// Server is the whole site as an http.Handler: the routes over the pages
// (package site), the feeds, the rooms, the classes and the readers'
// notes. Close stops them.
type Server struct {
	cfg     Config
	log     *slog.Logger
	router  chi.Router
	site    *site.Site
	broker  *broker.Broker
	live    *feeds.Service
	sockets *clients.Sockets
	rooms   *rooms.Service
	notes   *annotations.Handlers
	classes *classes.Handlers
	metrics prometheus.Gatherer
	close   func()
	closed  sync.Once
}

// New wires opened parts into the site's routes; it opens nothing.
func New(d Deps) *Server {
	s := &Server{
		cfg:     d.Config,
		log:     cmp.Or(d.Config.Logger, slog.New(slog.DiscardHandler)),
		site:    d.Site,
		broker:  d.Broker,
		live:    d.Feeds,
		sockets: d.Sockets,
		rooms:   d.Rooms,
		notes:   d.Notes,
		classes: d.Classes,
		metrics: d.Metrics,
		close:   d.Close,
	}
	if s.metrics == nil {
		s.metrics = prometheus.NewRegistry() // nothing registered: /metrics is empty
	}
	s.router = s.routes()
	return s
}

// Open opens the site's parts as cfg says (NewPlan, then Build) and wires
// them (New). It starts loading cfg.DefaultTag in the background, so the
// first reader finds it ready more often than not.
func Open(cfg Config) (*Server, error) {
	p, err := NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	d, err := p.Build()
	if err != nil {
		return nil, err
	}
	return New(d), nil
}

// ServeHTTP serves the site. The request most often made, a reading page
// already rendered (GET /k8s/{tag}/), is answered before the router: the
// same response, without what the router and the middleware cost it (a
// copy of the request for the route's parameters, a status recorder for
// a log that is off). Anything else, or any request the log records,
// goes through the routes.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := s.cachedReading(r); p != nil {
		setSecurityHeaders(w.Header())
		p.ServeHTTP(w, r)
		return
	}
	s.router.ServeHTTP(w, r)
}

// cachedReading is the rendered reading page r asks for, when the router
// would give r to it with nothing else to do: GET or HEAD /k8s/{tag}/
// without a body, at a tag whose page is rendered and current, while
// requests are not logged. nil otherwise.
func (s *Server) cachedReading(r *http.Request) http.Handler {
	if r.Method != http.MethodGet && r.Method != http.MethodHead || r.Body != http.NoBody || r.URL.RawPath != "" {
		return nil
	}
	tag, ok := strings.CutPrefix(r.URL.Path, "/k8s/")
	if !ok {
		return nil
	}
	if tag, ok = strings.CutSuffix(tag, "/"); !ok || tag == "" || strings.IndexByte(tag, '/') >= 0 {
		return nil
	}
	if s.log.Enabled(r.Context(), slog.LevelDebug) {
		return nil
	}
	return s.site.CachedPage(r, tag, site.PageIndex)
}

// Close stops the parts (Deps.Close) and waits for them.
func (s *Server) Close() {
	s.closed.Do(func() {
		if s.close != nil {
			s.close()
		}
	})
}

// NeedsRestart is closed when the data dir's disk filled, so that
// JetStream's stores stopped taking writes, and has space again: they take
// writes once the process starts again (serve exits for its supervisor).
func (s *Server) NeedsRestart() <-chan struct{} { return s.broker.NeedsRestart() }

// NATSURL is the embedded NATS server's client URL, with its token, when
// it listens (Config.NATSListen), "" otherwise.
func (s *Server) NATSURL() string { return s.broker.ClientURL() }
