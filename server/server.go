// Package server is syncloop's web site as one http.Handler: the
// composition root that starts the shared state (package broker), the
// reading pages (site), the live feeds (feeds), the pair-reading rooms
// (rooms) and the readers' notes (annotations), wires what each asks of the
// others, and serves them through routes.go with the middleware around
// them. Only this package imports them all.
package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/feeds"
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

	// FeedToken, when set, names the ingest token of a feed that has its
	// own (ok true): that feed takes that token instead of IngestToken.
	// NewServer sets it to the rooms' lookup, replacing any value given.
	FeedToken func(feed string) (token string, ok bool)

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
	// answers out (site.Config.Quiz).
	Quiz bool

	// Load fetches a Reading; nil means extractor.Load. Tests replace it.
	Load func(context.Context, extractor.Options) (*extractor.Reading, error)
	// siteTune lets tests change the pages' own settings (how long a
	// request waits for a Load) before they start.
	siteTune func(*site.Config)
	// feedsTune lets tests change the feeds' own settings (a tag demo's
	// idle time) before they start.
	feedsTune func(*feeds.Config)
	// roomsTune lets tests change the rooms' own settings (their rates,
	// the wheel's grace) before they start.
	roomsTune func(*rooms.ServiceConfig)
	// notesTune lets tests change the notes' handlers' settings.
	notesTune func(*annotations.HTTPConfig)
}

// minFreeMargin is the free disk, beyond one feed's journal, that the
// JetStream store needs to start and to take a new feed: room records,
// notes and JetStream's own indexes.
const minFreeMargin = 16 << 20

// minCacheFree is the free space the Readings cache needs to fetch a tag.
const minCacheFree = 128 << 20

// Server is the whole site as an http.Handler: the composition root of the
// pages (package site), the feeds, the rooms and the readers' notes. Close
// stops their goroutines.
type Server struct {
	cfg    Config
	log    *slog.Logger
	router chi.Router
	site   *site.Site
	broker *broker.Broker
	live   *feeds.Service
	// sockets caps the browser sockets (feeds' and rooms') per client.
	sockets *clients.Sockets
	rooms   *rooms.Service
	notes   *annotations.Handlers
	// noteStore is the notes' store: the classes read their rooms' notes.
	noteStore *annotations.Store
	classes   *classes.Handlers
	// closeNotes stops the notes' store (and the NATS server started for it).
	closeNotes func()

	// ctx is cancelled by Close: the broker and the rooms start under it.
	ctx    context.Context
	cancel context.CancelFunc
	closed sync.Once
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
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if _, err := content.Notes(); err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	sc := site.Config{DefaultTag: cfg.DefaultTag, SourceDir: cfg.SourceDir, CacheDir: cfg.CacheDir,
		Getenv: cfg.Getenv, Client: cfg.Client, Logger: cfg.Logger, Load: cfg.Load,
		NewTagsPerHour: cfg.NewTagsPerHour, Quiz: cfg.Quiz,
		ClientAddr: func(r *http.Request) string { return clients.AddrPrefix(r, cfg.TrustedProxies, cfg.IPv6Prefix) }}
	if cfg.siteTune != nil {
		cfg.siteTune(&sc)
	}
	pages, err := site.New(sc)
	if err != nil {
		return nil, err
	}
	// undo closes what was opened so far, newest first, when a later step
	// fails.
	undo := []func(){pages.Close}
	fail := func(err error) (*Server, error) {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
		return nil, err
	}
	if cfg.SourceDir == "" {
		// A full cache dir still serves the tags cached there; a tag not yet
		// fetched would fail with the OS's error, so say so now.
		if dir, err := extractor.CacheDir(extractor.Options{CacheDir: cfg.CacheDir, Getenv: cfg.Getenv}); err == nil {
			if err := broker.CheckSpace(dir, minCacheFree, "fetching a tag (its module zip, ~50 MB, under tmp/) and caching its Reading"); err != nil {
				cfg.Logger.Warn("cache: "+err.Error()+"; tags already cached are served", "dir", dir)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	undo = append(undo, cancel)
	s := &Server{
		cfg:    cfg,
		log:    cfg.Logger,
		site:   pages,
		ctx:    ctx,
		cancel: cancel,
	}
	// JetStream's limit is what the feeds keep (and a margin for rooms and
	// notes), not what the disk had free at start; the free space itself is
	// checked when a feed is made (feeds.Config.Space).
	feedBytes := cmp.Or(cfg.FeedBytes, feeds.DefaultFeedBytes)
	b, err := broker.Open(ctx, broker.Config{URLs: cfg.NATS, Dir: cfg.DataDir, Listen: cfg.NATSListen, TokenFile: cfg.NATSTokenFile, SyncInterval: cfg.NATSSync, Name: cfg.NATSName, Logger: cfg.Logger,
		MaxStore: feeds.MaxStoredBytes(feedBytes) + 1<<30, MinFree: feedBytes + minFreeMargin})
	if err != nil {
		return fail(err)
	}
	undo = append(undo, b.Close)
	s.broker = b
	var rs *rooms.Service // set before any request can ask for a feed's token
	cfg.FeedToken = func(feed string) (string, bool) { return rs.FeedToken(feed) }
	s.cfg.FeedToken = cfg.FeedToken
	s.sockets = clients.NewSockets(cfg.SocketsPerClient, cfg.PingEvery)
	fc := feeds.Config{
		DefaultTag: cfg.DefaultTag, IngestToken: cfg.IngestToken,
		JournalCmd: cfg.JournalCmd, JournalFile: cfg.JournalFile,
		RingSize: cfg.RingSize, HistoryBytes: cfg.HistoryBytes, FeedBytes: cfg.FeedBytes,
		DemoPeriod: cfg.DemoPeriod, FeedToken: cfg.FeedToken, NATSName: cfg.NATSName,
		Sockets: s.sockets, Space: b.Space, TrustedProxies: cfg.TrustedProxies, IPv6Prefix: cfg.IPv6Prefix, Logger: cfg.Logger,
		KnownReadings: pages.KnownReadings, LoadTag: pages.Load,
	}
	if cfg.feedsTune != nil {
		cfg.feedsTune(&fc)
	}
	if s.live, err = feeds.New(fc, b, pages.Reading); err != nil {
		return fail(err)
	}
	undo = append(undo, s.live.Close)
	if err := s.openNotes(); err != nil {
		return fail(err)
	}
	undo = append(undo, s.closeNotes)
	rs, err = s.openRooms(ctx, b, func(c *rooms.ServiceConfig) {
		c.OnExpire = s.notes.Expired
		if cfg.roomsTune != nil {
			cfg.roomsTune(c)
		}
	})
	if err != nil {
		return fail(err)
	}
	undo = append(undo, rs.Close)
	s.rooms = rs
	if err := s.openClasses(ctx); err != nil {
		return fail(err)
	}
	s.router = s.routes()
	return s, nil
}

// ServeHTTP serves the site.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.router.ServeHTTP(w, r) }

// Close stops background loads and the live feeds, and waits for them.
func (s *Server) Close() {
	s.closed.Do(func() {
		s.cancel()
		s.classes.Close()
		s.rooms.Close()
		s.closeNotes()
		s.live.Close()
		s.site.Close()
		s.broker.Close()
	})
}

// NATSURL is the embedded NATS server's client URL, with its token, when
// it listens (Config.NATSListen), "" otherwise.
func (s *Server) NATSURL() string { return s.broker.ClientURL() }

// openNotes opens the rooms' notes: a KV bucket on the server's JetStream.
func (s *Server) openNotes() error {
	// A cluster that just started times out JetStream requests until it has
	// a leader: retry as the feeds' stream does.
	var st *annotations.Store
	err := broker.Retry(s.ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = annotations.Open(ctx, annotations.Config{JS: s.broker.JS, Memory: s.broker.Memory, Replicas: s.broker.Replicas, Sync: s.broker.Sync, Logger: s.log})
		return err
	})
	if err != nil {
		return err
	}
	s.closeNotes = st.Close
	s.noteStore = st
	hc := annotations.HTTPConfig{
		Store: st,
		Room: func(id string) (string, error) {
			room, err := s.rooms.Get(id)
			switch {
			case errors.Is(err, rooms.ErrExpired):
				return "", annotations.ErrRoomExpired
			case err != nil:
				return "", annotations.ErrNoRoom
			case room.Ended:
				return room.Tag, annotations.ErrRoomEnded
			}
			return room.Tag, nil
		},
		Reading: func(tag string) *extractor.Reading {
			if r := s.site.Reading(tag); r != nil {
				return r
			}
			s.site.Load(tag) // start loading it for the next try
			return nil
		},
		SameOrigin: sameOrigin,
		ClientIP:   func(r *http.Request) string { return clients.AddrPrefix(r, s.cfg.TrustedProxies, s.cfg.IPv6Prefix) },
		Sockets:    s.sockets, // event streams count with the client's websockets
		Logger:     s.log,
	}
	if s.cfg.notesTune != nil {
		s.cfg.notesTune(&hc)
	}
	s.notes = annotations.NewHandlers(hc)
	return nil
}
