package server

// The composition root: NewPlan turns the command line's Config into each
// part's own configuration, Build opens the parts from it in dependency
// order (site, broker, feeds, notes, rooms, classes) and wires what each
// asks of the others. A caller that wants a setting the command line does
// not have (a test: a rate, a grace, a wait) edits the Plan between the two.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/internal/wake"
	"github.com/syncloop/syncloop/server/rooms"
	"github.com/syncloop/syncloop/server/site"
)

// minFreeMargin is the free disk, beyond one feed's journal, that the
// JetStream store needs to start and to take a new feed: room records,
// notes and JetStream's own indexes.
const minFreeMargin = 16 << 20

// minCacheFree is the free space the Readings cache needs to fetch a tag.
const minCacheFree = 128 << 20

// Plan is each part's own configuration, made from a Config by NewPlan.
// Build fills in the fields that name another part (a store, a socket cap,
// a callback into the site or the rooms), replacing what they held.
type Plan struct {
	Config Config
	// Identify says who a request's client is for every per-client limit
	// of every part (Build gives each part its Client) and for the
	// connection cap (serve's clients.LimitConns).
	Identify  clients.Identify
	Broker    broker.Config
	Site      site.Config
	Feeds     feeds.Config
	RoomStore rooms.Config
	Rooms     rooms.ServiceConfig
	Notes     annotations.HTTPConfig
	Classes   classes.Config
}

// NewPlan checks cfg and makes each part's configuration from it.
func NewPlan(cfg Config) (*Plan, error) {
	cfg.DefaultTag = cmp.Or(cfg.DefaultTag, extractor.DefaultTag)
	if err := extractor.CheckTag(cfg.DefaultTag); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if _, err := content.Notes(); err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	// JetStream's limit is what the feeds keep (and a margin for rooms and
	// notes), not what the disk had free at start; the free space itself is
	// checked when a feed is made (feeds.Config.Space).
	feedBytes := cmp.Or(cfg.FeedBytes, feeds.DefaultFeedBytes)
	return &Plan{
		Config:   cfg,
		Identify: clients.Identify{Trusted: cfg.TrustedProxies, IPv6Prefix: cfg.IPv6Prefix},
		Broker: broker.Config{URLs: cfg.NATS, Dir: cfg.DataDir, Listen: cfg.NATSListen, TokenFile: cfg.NATSTokenFile,
			SyncInterval: cfg.NATSSync, Name: cfg.NATSName, Logger: cfg.Logger,
			MaxStore: feeds.MaxStoredBytes(feedBytes) + 1<<30, MinFree: feedBytes + minFreeMargin},
		Site: site.Config{DefaultTag: cfg.DefaultTag, SourceDir: cfg.SourceDir, CacheDir: cfg.CacheDir,
			Getenv: cfg.Getenv, Client: cfg.Client, Logger: cfg.Logger, Load: cfg.Load, LoadVolume: cfg.LoadVolume,
			NewTagsPerHour: cfg.NewTagsPerHour},
		Feeds: feeds.Config{DefaultTag: cfg.DefaultTag, IngestToken: cfg.IngestToken,
			JournalCmd: cfg.JournalCmd, JournalFile: cfg.JournalFile,
			RingSize: cfg.RingSize, HistoryBytes: cfg.HistoryBytes, FeedBytes: cfg.FeedBytes,
			DemoPeriod: cfg.DemoPeriod, NATSName: cfg.NATSName, Logger: cfg.Logger},
		RoomStore: rooms.Config{TTL: cfg.RoomTTL, MaxRooms: cfg.MaxRooms, PerOwner: cfg.RoomsPerClient,
			UnjoinedTTL: cfg.RoomUnjoinedTTL, Logger: cfg.Logger},
		Rooms: rooms.ServiceConfig{DefaultTag: cfg.DefaultTag, MaxReaders: cfg.MaxReaders, Logger: cfg.Logger},
		Notes: annotations.HTTPConfig{SameOrigin: sameOrigin, Logger: cfg.Logger},
		Classes: classes.Config{DefaultTag: cfg.DefaultTag, MaxBudget: rooms.ClassRooms(cmp.Or(max(cfg.MaxRooms, 0), rooms.DefaultMaxRooms), 0),
			ClassToken: cfg.ClassToken, Logger: cfg.Logger},
	}, nil
}

// Build opens the parts as p says and wires them to each other. On
// failure it closes what it opened, newest first; on success Deps.Close
// does the same.
func (p *Plan) Build() (Deps, error) {
	cfg := p.Config
	if cfg.SourceDir == "" {
		// A full cache dir still serves the tags cached there; a tag not yet
		// fetched would fail with the OS's error, so say so now.
		if dir, err := extractor.CacheDir(extractor.Options{CacheDir: cfg.CacheDir, Getenv: cfg.Getenv}); err == nil {
			if err := broker.CheckSpace(dir, minCacheFree, "fetching a tag (its module zip, ~50 MB, under tmp/) and caching its Reading"); err != nil {
				cfg.Logger.Warn("cache: "+err.Error()+"; tags already cached are served", "dir", dir)
			}
		}
	}
	// ctx is cancelled first on Close: the broker and the rooms start
	// under it. undo closes what was opened so far, newest first.
	ctx, cancel := context.WithCancel(context.Background())
	var undo []func()
	stop := func() {
		cancel()
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	reg := prometheus.NewRegistry()
	d := &Deps{Config: cfg, Metrics: reg, Close: stop, Changed: new(wake.Signal)}
	if err := p.open(ctx, d, reg, &undo); err != nil {
		stop()
		return Deps{}, err
	}
	return *d, nil
}

// open opens each part into d, appending its Close to undo. The parts ask
// for each other in a circle (the feeds for a room feed's token, the notes
// for their room, the rooms for their class): those callbacks read d,
// which is whole before any request can reach them.
func (p *Plan) open(ctx context.Context, d *Deps, reg *prometheus.Registry, undo *[]func()) error {
	// The site first: it starts loading the default tag at once, so the
	// first reader finds it ready more often than not.
	var err error
	sc := p.Site
	sc.Quiz = func(r *http.Request) bool { return d.inQuiz(r, "") }
	sc.Identify = p.Identify.Client
	if d.Site, err = site.New(sc); err != nil {
		return err
	}
	*undo = append(*undo, d.Site.Close)
	b, err := broker.Open(ctx, p.Broker)
	if err != nil {
		return err
	}
	*undo = append(*undo, b.Close)
	d.Broker = b

	d.Sockets = clients.NewSockets(p.Config.SocketsPerClient, p.Config.PingEvery)
	if err := d.Sockets.Register(reg); err != nil {
		return err
	}
	fc := p.Feeds
	fc.Sockets, fc.Space, fc.Metrics, fc.Changed = d.Sockets, b.Space, reg, d.Changed
	fc.Identify = p.Identify.Client
	fc.KnownReadings, fc.LoadTag = d.Site.KnownReadings, d.Site.Load
	fc.VolumeReading = d.Site.VolumeReading
	if d.Feeds, err = feeds.New(fc, b, d.Site.Reading); err != nil {
		return err
	}
	*undo = append(*undo, d.Feeds.Close)

	notes, err := p.openNotes(ctx, d)
	if err != nil {
		return err
	}
	*undo = append(*undo, notes.Close)

	if d.Rooms, err = p.openRooms(ctx, d, reg); err != nil {
		return err
	}
	*undo = append(*undo, d.Rooms.Close)

	if d.Classes, err = p.openClasses(ctx, d, notes); err != nil {
		return err
	}
	*undo = append(*undo, d.Classes.Close)
	return nil
}

// openNotes opens the readers' notes: a KV bucket on the broker's
// JetStream, and their handlers.
func (p *Plan) openNotes(ctx context.Context, d *Deps) (*annotations.Store, error) {
	b := d.Broker
	// A cluster that just started times out JetStream requests until it has
	// a leader: retry as the feeds' stream does.
	var st *annotations.Store
	err := broker.Retry(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = annotations.Open(ctx, annotations.Config{JS: b.JS, Memory: b.Memory, Replicas: b.Replicas, Sync: b.Sync, Logger: p.Config.Logger, Changed: d.Changed})
		return err
	})
	if err != nil {
		return nil, err
	}
	hc := p.Notes
	hc.Store = st
	hc.StoreProblem = b.StoreProblem
	hc.Room = func(id string) (string, error) {
		room, err := d.Rooms.Get(id)
		switch {
		case errors.Is(err, rooms.ErrExpired):
			return "", annotations.ErrRoomExpired
		case err != nil:
			return "", annotations.ErrNoRoom
		case room.Ended:
			return room.Tag, annotations.ErrRoomEnded
		}
		return room.Tag, nil
	}
	hc.Readers = func(id string) []string {
		room, _ := d.Rooms.Get(id)
		return room.Readers
	}
	hc.Author = func(r *http.Request, id string) (string, error) { return author(d, r, id) }
	hc.Reading = readingOrLoad(d.Site)
	hc.RoomReading = func(id string) string {
		room, _ := d.Rooms.Get(id)
		return room.Reading
	}
	hc.VolumeReading = d.Site.LoadVolumeReading
	hc.Line = d.Feeds.Line   // what a pin names, and its hand-in prints
	hc.Chain = d.Feeds.Chain // what a chain pin names
	hc.Title = func(ctx context.Context, id string, esc func(string) string) string {
		room, err := d.Rooms.Get(id)
		if err != nil || d.Classes == nil {
			return ""
		}
		return d.Classes.RoomTitle(ctx, room, esc)
	}
	hc.Sockets = d.Sockets // event streams count with the client's websockets
	hc.Identify = p.Identify.Client
	hc.Quiz = d.roomInQuiz
	d.Notes = annotations.NewHandlers(hc)
	return st, nil
}

// author is who a write to room id from r is signed by: in a class's
// room, the student of the class session r carries (none: refused); in
// another, the name r's reader gave in the room (rooms.ReaderName), or
// "anonymous" when they gave none.
func author(d *Deps, r *http.Request, id string) (string, error) {
	room, err := d.Rooms.Get(id)
	if err != nil {
		return "", nil // the notes' own lookup says why there is no room
	}
	if room.Class == "" {
		return cmp.Or(rooms.ReaderName(r, room), "anonymous"), nil
	}
	_, name, err := d.Classes.Student(r, room.Class)
	if errors.Is(err, classes.ErrNoSession) {
		return "", &annotations.ForbiddenError{Msg: classes.NotStudentMessage(room.Class)}
	}
	if msg := d.Classes.Locked(r.Context(), room.Class, id); err == nil && msg != "" {
		return "", &annotations.LockedError{Msg: msg} // handed in (classes/handin.go)
	}
	return name, err
}

// readingOrLoad is a tag's Reading when the site holds it; otherwise nil,
// and the site starts loading it for the next try.
func readingOrLoad(pages *site.Site) func(tag string) *extractor.Reading {
	return func(tag string) *extractor.Reading {
		if r := pages.Reading(tag); r != nil {
			return r
		}
		pages.Load(tag)
		return nil
	}
}
