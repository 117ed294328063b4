// Package server is syncloop's web site: the reading pages for a tag, the
// live feed endpoints, and the middleware around them. It knows HTTP and
// templates; the Reading comes from the extractor, log lines from classify.
package server

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"golang.org/x/mod/semver"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/rooms"
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
	IngestToken string // bearer token a relay must present; "" disables ingest
	JournalCmd  string // a command whose output feeds the default feed (serve --journal-cmd)
	JournalFile string // a saved journal replayed into the default feed
	RingSize    int    // lines kept per feed for late joiners; 0 means 5000
	// HistoryBytes bounds the recent lines all feeds keep together (their
	// messages to browsers), shared equally by the feeds; 0 means 64 MiB.
	HistoryBytes int
	// FeedBytes bounds what JetStream keeps of all feeds together; 0 means
	// DefaultFeedBytes. Each feed keeps at most feedMsgsKept batches, none
	// older than a week.
	FeedBytes  int64
	DemoPeriod time.Duration // pace of the demo feed; 0 means its default

	// FeedToken, when set, names the ingest token of a feed that has its
	// own (ok true): that feed takes that token instead of IngestToken.
	// NewServer sets it to the rooms' lookup, replacing any value given.
	FeedToken func(feed string) (token string, ok bool)

	// Shared state (server/broker): NATS JetStream. With NATS empty an
	// embedded server keeps it under DataDir ("nats"), or in memory when
	// DataDir is "" too; NATSListen opens the embedded server's client port.
	NATS       []string
	NATSListen string
	NATSName   string // this replica's name in NATS; "" means "syncloop"
	// NATSSync is how often the embedded server fsyncs; 0 fsyncs each
	// write before a relay's lines are acknowledged (broker.Config.SyncInterval).
	NATSSync time.Duration

	// Pair-reading rooms (package rooms, wired in rooms.go).
	DataDir    string        // JetStream's files live here (an older rooms.json is imported); "" keeps state in memory only
	RoomTTL    time.Duration // idle time before a room expires; 0 means 24h
	MaxRooms   int           // rooms per server; 0 means rooms.DefaultMaxRooms
	MaxReaders int           // readers per room; 0 means 32
	// RoomsPerClient is how many rooms one client address holds at once;
	// 0 means rooms.DefaultPerOwner.
	RoomsPerClient int
	// RoomUnjoinedTTL is how long a room no reader ever joined lives;
	// 0 means rooms.DefaultUnjoinedTTL.
	RoomUnjoinedTTL time.Duration

	// Per-client limits (clients.go).
	TrustedProxies   []netip.Prefix // proxies whose X-Forwarded-For names the client; none by default
	SocketsPerClient int            // open browser sockets (feeds and rooms) per client; 0 means DefaultSocketsPerClient
	// PingEvery is how often browser feed sockets and room sockets are
	// pinged; one that does not answer within as long is closed. 0 means
	// DefaultPingEvery.
	PingEvery time.Duration

	// Load fetches a Reading; nil means extractor.Load. Tests replace it.
	Load func(context.Context, extractor.Options) (*extractor.Reading, error)
	// roomsTune lets tests change the rooms' own settings (their rates,
	// the wheel's grace) before they start.
	roomsTune func(*rooms.ServiceConfig)
	// notesTune lets tests change the notes' handlers' settings.
	notesTune func(*annotations.HTTPConfig)
}

// Server is the whole site as an http.Handler. Close stops its goroutines.
type Server struct {
	cfg    Config
	log    *slog.Logger
	router chi.Router
	tmpl   *template.Template
	static *assets
	broker *broker.Broker
	live   *live
	rooms  *rooms.Service
	notes  *annotations.Handlers
	// closeNotes stops the notes' store (and the NATS server started for it).
	closeNotes func()

	// ctx is cancelled by Close; background loads run under it and wg.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed sync.Once
	loads  chan struct{} // semaphore: how many Loads may run at once
	wait   time.Duration // how long a request waits for a Load (waitForLoad)

	mu   sync.Mutex
	tags map[string]*tagState // every tag asked for since start
	gen  int                  // bumped when the set of readable tags changes; pages list them
	disk []string             // tags cached on disk at start
}

// maxTags bounds the tags remembered (loaded, loading or failed), so a
// stream of made-up tags cannot grow the server without end.
const maxTags = 64

// errorTTL is how long a failed Load is remembered before a request retries.
var errorTTL = map[bool]time.Duration{
	true:  10 * time.Minute, // the tag itself is wrong: unknown, invalid, unsupported
	false: 20 * time.Second, // the network or the proxy: worth another try soon
}

// tagState is one tag's Reading and pages: loading until done is closed.
type tagState struct {
	tag    string
	done   chan struct{}
	failed time.Time // when err was set

	// set once before done is closed
	reading *extractor.Reading
	view    *readingView // the tag's highlighted code and notes, built once
	err     error

	mu    sync.Mutex
	pages map[string]*page // rendered for pagesGen
	gen   int
}

// NewServer returns the site. It starts loading cfg.DefaultTag in the
// background, so the first reader finds it ready more often than not.
func NewServer(cfg Config) (*Server, error) {
	if cfg.DefaultTag == "" {
		cfg.DefaultTag = extractor.DefaultTag
	}
	if err := extractor.CheckTag(cfg.DefaultTag); err != nil {
		return nil, err
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Load == nil {
		cfg.Load = extractor.Load
	}
	static, err := newAssets()
	if err != nil {
		return nil, err
	}
	tmpl, err := parseTemplates(static)
	if err != nil {
		return nil, err
	}
	if _, err := content.Notes(); err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Server{
		cfg:    cfg,
		log:    cfg.Logger,
		tmpl:   tmpl,
		static: static,
		ctx:    ctx,
		cancel: cancel,
		loads:  make(chan struct{}, 2),
		wait:   waitForLoad,
		tags:   make(map[string]*tagState),
	}
	if dir, err := extractor.CacheDir(s.options("")); err == nil {
		s.disk, _ = extractor.CachedTags(dir)
	}
	b, err := broker.Open(ctx, broker.Config{URLs: cfg.NATS, Dir: cfg.DataDir, Listen: cfg.NATSListen, SyncInterval: cfg.NATSSync, Name: cfg.NATSName, Logger: cfg.Logger})
	if err != nil {
		cancel()
		return nil, err
	}
	s.broker = b
	var rs *rooms.Service // set before any request can ask for a feed's token
	cfg.FeedToken = func(feed string) (string, bool) { return rs.FeedToken(feed) }
	s.cfg.FeedToken = cfg.FeedToken
	if s.live, err = newLive(cfg, b, s.loadedReading); err != nil {
		b.Close()
		cancel()
		return nil, err
	}
	if err := s.openNotes(); err != nil {
		s.live.Close()
		b.Close()
		cancel()
		return nil, err
	}
	rs, err = s.openRooms(ctx, b, func(c *rooms.ServiceConfig) {
		c.OnExpire = s.notes.Expired
		if cfg.roomsTune != nil {
			cfg.roomsTune(c)
		}
	})
	if err != nil {
		s.closeNotes()
		s.live.Close()
		b.Close()
		cancel()
		return nil, err
	}
	s.rooms = rs
	s.router = s.routes()
	s.state(cfg.DefaultTag)
	return s, nil
}

// ServeHTTP serves the site.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// Close stops background loads and the live feeds, and waits for them.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.cancel()
		s.rooms.Close()
		s.closeNotes()
		s.live.Close()
		s.wg.Wait()
		s.broker.Close()
	})
}

// NATSURL is the embedded NATS server's client URL when it listens
// (Config.NATSListen), "" otherwise.
func (s *Server) NATSURL() string { return s.broker.ClientURL() }

// options are the extractor options for tag.
func (s *Server) options(tag string) extractor.Options {
	o := extractor.Options{
		Tag:      tag,
		CacheDir: s.cfg.CacheDir,
		Symbols:  content.Symbols(),
		Getenv:   s.cfg.Getenv,
		Client:   s.cfg.Client,
		Logger:   s.log,
	}
	if s.cfg.SourceDir != "" && tag == s.cfg.DefaultTag {
		o.SourceDir = s.cfg.SourceDir
	}
	return o
}

// loadedReading returns tag's Reading once it is loaded, nil before.
func (s *Server) loadedReading(tag string) *extractor.Reading {
	s.mu.Lock()
	st := s.tags[tag]
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	select {
	case <-st.done:
		return st.reading
	default:
		return nil
	}
}

// state returns tag's state, starting its Load when none is under way and
// none succeeded. The caller has checked the tag with extractor.CheckTag.
// It returns nil when too many tags are remembered to take another.
func (s *Server) state(tag string) *tagState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.tags[tag]; ok {
		select {
		case <-st.done:
			if st.err == nil || time.Since(st.failed) < errorTTL[permanent(st.err)] {
				return st
			}
		default:
			return st
		}
	}
	if len(s.tags) >= maxTags && !s.evictFailed() {
		return nil
	}
	st := &tagState{tag: tag, done: make(chan struct{})}
	s.tags[tag] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		r, err := s.load(tag)
		var view *readingView
		if err == nil {
			view, err = newReadingView(r)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			st.err, st.failed = err, time.Now()
		} else {
			st.reading, st.view = r, view
			s.gen++
		}
		close(st.done)
	}()
	return st
}

// load reads tag's Reading from the cache, or has it loaded: at most
// cap(s.loads) at once, the others waiting their turn.
func (s *Server) load(tag string) (*extractor.Reading, error) {
	if r, ok := extractor.Cached(s.options(tag)); ok {
		return r, nil
	}
	select {
	case s.loads <- struct{}{}:
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
	defer func() { <-s.loads }()
	start := time.Now()
	r, err := s.cfg.Load(s.ctx, s.options(tag))
	if err != nil {
		s.log.Warn("load failed", "tag", tag, "err", err)
		return nil, err
	}
	s.log.Info("loaded", "tag", tag, "source", r.Source, "cases", len(r.Function.Cases), "took", time.Since(start).Round(time.Millisecond))
	return r, nil
}

// evictFailed forgets the failed tags; s.mu is held. It reports whether
// any room was made.
func (s *Server) evictFailed() bool {
	n := len(s.tags)
	for tag, st := range s.tags {
		select {
		case <-st.done:
			if st.err != nil {
				delete(s.tags, tag)
			}
		default:
		}
	}
	return len(s.tags) < n
}

// readableTags are the tags a reader can switch to without a fetch: those
// cached on disk at start and those loaded since, newest first; and the
// generation of that list.
func (s *Server) readableTags() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tags := slices.Clone(s.disk)
	for tag, st := range s.tags {
		select {
		case <-st.done:
			if st.err == nil {
				tags = append(tags, tag)
			}
		default:
		}
	}
	slices.SortFunc(tags, func(a, b string) int { return semver.Compare(b, a) })
	return slices.Compact(tags), s.gen
}

// openNotes opens the rooms' notes: a KV bucket on the server's JetStream.
func (s *Server) openNotes() error {
	// A cluster that just started times out JetStream requests until it has
	// a leader: retry as the feeds' stream does.
	var st *annotations.Store
	err := broker.Retry(s.ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = annotations.Open(ctx, annotations.Config{JS: s.broker.JS, Memory: s.broker.Memory, Replicas: s.broker.Replicas, Logger: s.log})
		return err
	})
	if err != nil {
		return err
	}
	s.closeNotes = st.Close
	hc := annotations.HTTPConfig{
		Store: st,
		Room: func(id string) (string, error) {
			room, err := s.rooms.Get(id)
			switch {
			case errors.Is(err, rooms.ErrExpired):
				return "", annotations.ErrRoomExpired
			case err != nil:
				return "", annotations.ErrNoRoom
			}
			return room.Tag, nil
		},
		Reading: func(tag string) *extractor.Reading {
			if r := s.loadedReading(tag); r != nil {
				return r
			}
			s.state(tag) // start loading it for the next try
			return nil
		},
		SameOrigin: sameOrigin,
		ClientIP:   func(r *http.Request) string { return clientAddr(r, s.cfg.TrustedProxies) },
		Logger:     s.log,
	}
	if s.cfg.notesTune != nil {
		s.cfg.notesTune(&hc)
	}
	s.notes = annotations.NewHandlers(hc)
	return nil
}
