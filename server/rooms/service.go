package rooms

// The rooms' HTTP side. A room is the reading page at the room's tag, plus
// a room bar (templates/room.html, static/room.js) and a live pane on the
// room's own feed, "room-<id>". The page itself is the site's to render
// (Site.Page); the records, who is present and who drives are this
// package's.
//
//	POST /rooms               create a room (same-origin only, rate-limited and capped per client address);
//	                          303 to the driver link /rooms/{id}?k=KEY
//	GET  /rooms/{id}          the room's page (410 once it expired); ?k=KEY checks the driver key
//	GET  /rooms/{id}/pod-workers   the room's pod_workers page
//	GET  /rooms/{id}/ws       the room's websocket (socket.go, protocol.go)
//
// Roles. The page is the same for everyone: the role is decided on the room
// websocket, where the browser presents the driver key it was given in the
// driver link (room.js keeps it in sessionStorage and takes it out of the
// address bar, so a copied address is a viewer link). Only a connection that
// presented the key may take the wheel, see and rotate the ingest token. A
// reader handed the wheel is given a wheel ticket, which room.js keeps in
// sessionStorage too, so that the wheel stays with them when their page
// loads again (wheel.go).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/httperr"
)

// Room limits and their defaults.
const (
	DefaultMaxReaders = 32
	msgLimit          = 4 << 10 // bytes per message from a browser
	// DefaultMsgRate is how many messages a second a room socket may send,
	// after a burst of msgBurst (per replica: each replica counts its own).
	DefaultMsgRate = 20
	msgBurst       = 40
	// DefaultCreateRate is how many rooms a second one client address may
	// create on a replica, after a burst of DefaultCreateBurst.
	DefaultCreateRate  = 1.0 / 6
	DefaultCreateBurst = 10
)

// The kinds of room page.
const (
	PageIndex      = "index"
	PagePodWorkers = "pod-workers"
	// PageVolume is the second reading's page: what /rooms/{id} shows in
	// a room whose Reading is ReadingVolume.
	PageVolume = "volume-manager"
)

// SiteFuncs are what rooms need of the site around them (package site's
// pages, its tags, the same-origin rule); server/ fills them in.
type SiteFuncs struct {
	// Page writes the reading page of kind (PageIndex, PagePodWorkers) for
	// room, and reports whether it did (else it answered with why not, e.g.
	// the tag still loading).
	Page func(w http.ResponseWriter, r *http.Request, kind string, room Room) bool
	// Error answers err with the site's page that says why (site.Site's
	// Error: an *httperr.Error's status, heading, message and advice).
	Error func(w http.ResponseWriter, r *http.Request, err error)
	// LoadTag starts loading a tag's Reading; TagReady waits until it is
	// loaded, or says why it cannot be, a new tag counting against client
	// (the driver who switches the room to it).
	LoadTag    func(tag string)
	TagReady   func(ctx context.Context, client, tag string) error
	SameOrigin func(r *http.Request) bool
}

// ServiceConfig is the rooms' own configuration.
type ServiceConfig struct {
	// Sockets caps the open browser sockets per client, shared with the
	// feeds' sockets, and pings them.
	Sockets *clients.Sockets
	// Identify names the client a request counts against in every per-client limit
	// (clients.Identify.Client, one for the whole server); nil means
	// clients.Identify{}.Client: the connection's address.
	Identify func(r *http.Request) string
	Store    *Store
	NC       *nats.Conn // to the other replicas; nil for one replica alone
	// Feeds are the live feeds: a room's feed reads the room's tag and
	// takes only its ingest token; the room shows the kubelet version its
	// journal reports; it goes with the room. Nil: rooms have no feeds
	// (tests of the rooms alone).
	Feeds      *feeds.Service
	Site       SiteFuncs
	DefaultTag string
	MaxReaders int // readers per room; 0 means DefaultMaxReaders
	// MsgRate, CreateRate and CreateBurst: 0 means their defaults.
	MsgRate     float64
	CreateRate  float64
	CreateBurst float64
	// WheelGrace: how long a lent wheel waits for its holder; 0 means DefaultWheelGrace.
	WheelGrace time.Duration
	// PresenceTTL: how long another replica's readers are believed
	// present after it last said so; 0 means DefaultPresenceTTL. Tick: how
	// often a room with readers here says who is here and rescues the
	// wheel; 0 means DefaultTick. Every replica must be given the same.
	PresenceTTL time.Duration
	Tick        time.Duration
	// Metrics, when set, registers the rooms' gauges (metrics.go).
	Metrics prometheus.Registerer
	// OnExpire is told of each room that expires (its notes go with it).
	OnExpire func(id string)
	// Student is the id and name of the student of class whose session r
	// carries (package classes), an error when it carries none; nil: no
	// reader of a class's room is a student.
	Student func(r *http.Request, class string) (id, name string, err error)
	Logger  *slog.Logger
}

// Service owns the rooms: the store and the rooms with readers present.
type Service struct {
	store      *Store
	site       SiteFuncs
	sockets    *clients.Sockets
	client     func(r *http.Request) string // who the client is (ServiceConfig.Identify)
	defaultTag string
	maxReaders int
	msgRate    float64
	wheelGrace time.Duration
	// presenceTTL and tickEvery: ServiceConfig's PresenceTTL and Tick.
	presenceTTL time.Duration
	tickEvery   time.Duration
	feeds       *feeds.Service
	log         *slog.Logger
	creates     *KeyLimiter
	createRate  float64
	nc          *nats.Conn // to the other replicas (wire.go)
	replica     string     // ends this replica's reader ids: unique in the cluster
	onExpire    func(id string)
	student     func(r *http.Request, class string) (id, name string, err error)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	active map[string]*roomLive // rooms with readers here
	closed bool

	heardMu   sync.Mutex
	heard     map[string]*presence // room id → the readers of the other replicas there (presence.go)
	stopHeard func()
}

// NewService starts the rooms on store; Close stops them (and closes the store).
func NewService(cfg ServiceConfig) (*Service, error) {
	replica, err := NewSecret()
	if err != nil {
		return nil, err
	}
	if cfg.Identify == nil {
		cfg.Identify = clients.Identify{}.Client
	}
	rs := &Service{
		store:       cfg.Store,
		site:        cfg.Site,
		sockets:     cfg.Sockets,
		client:      cfg.Identify,
		defaultTag:  cfg.DefaultTag,
		nc:          cfg.NC,
		replica:     "-" + strings.ToLower(replica[:5]),
		maxReaders:  cmp.Or(max(cfg.MaxReaders, 0), DefaultMaxReaders),
		msgRate:     cmp.Or(max(cfg.MsgRate, 0), DefaultMsgRate),
		wheelGrace:  cmp.Or(max(cfg.WheelGrace, 0), DefaultWheelGrace),
		presenceTTL: cmp.Or(max(cfg.PresenceTTL, 0), DefaultPresenceTTL),
		tickEvery:   cmp.Or(max(cfg.Tick, 0), DefaultTick),
		feeds:       cfg.Feeds,
		createRate:  cmp.Or(max(cfg.CreateRate, 0), DefaultCreateRate),
		log:         cfg.Logger,
		onExpire:    cfg.OnExpire,
		student:     cfg.Student,
		active:      map[string]*roomLive{},
		heard:       map[string]*presence{},
	}
	if rs.presenceTTL <= rs.tickEvery {
		return nil, fmt.Errorf("rooms: a presence TTL of %v is not longer than the tick of %v: a replica's readers would be forgotten between its announcements", rs.presenceTTL, rs.tickEvery)
	}
	if rs.sockets == nil {
		rs.sockets = clients.NewSockets(0, 0)
	}
	rs.creates = NewKeyLimiter(rs.createRate, cmp.Or(max(cfg.CreateBurst, 0), DefaultCreateBurst), 10000)
	if rs.log == nil {
		rs.log = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(rs.collector()); err != nil {
			return nil, fmt.Errorf("rooms: metrics: %w", err)
		}
	}
	rs.ctx, rs.cancel = context.WithCancel(context.Background())
	// The rooms' feeds are theirs: each request to one asks feedOwned.
	if rs.feeds != nil {
		rs.feeds.Own(FeedPrefix, rs.feedOwned)
	}
	rs.store.OnChange(func(id string) {
		// Not on the watcher's goroutine: a room's lock may be held by a
		// writer waiting for the bucket.
		go rs.changed(id)
	})
	rs.stopHeard = rs.hearPresence()
	rs.wg.Add(1)
	go rs.housekeep()
	return rs, nil
}

// Store is the rooms' records.
func (rs *Service) Store() *Store { return rs.store }

// Get returns the room id names (ErrNotFound, ErrExpired when there is none).
func (rs *Service) Get(id string) (Room, error) {
	if !ValidID(id) {
		return Room{}, ErrNotFound
	}
	return rs.store.Get(id)
}

// housekeep writes LastActive now and then and expires idle rooms, dropping
// their feeds.
func (rs *Service) housekeep() {
	defer rs.wg.Done()
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-rs.ctx.Done():
			return
		case <-t.C:
		}
		rs.touchActive()
		rs.forgetHeard(time.Now())
		gone, err := rs.store.Sweep()
		if err != nil {
			rs.log.Error("rooms: saving", "err", err)
		}
		for _, id := range gone {
			rs.endReaders(id)
			rs.dropFeed(FeedPrefix + id)
			if rs.onExpire != nil {
				rs.onExpire(id)
			}
			rs.log.Info("rooms: expired", "room", id[:6]+"…")
		}
	}
}

// endReaders closes the sockets of an expired room's readers on this
// replica with CloseGone: their pages say the room expired and stop
// reconnecting, rather than go on showing who drives.
func (rs *Service) endReaders(id string) {
	rs.mu.Lock()
	rl := rs.active[id]
	rs.mu.Unlock()
	if rl == nil {
		return
	}
	rl.mu.Lock()
	readers := slices.Clone(rl.readers)
	rl.mu.Unlock()
	for _, r := range readers {
		r.expire()
	}
}

// touchActive marks every room with readers as used now.
func (rs *Service) touchActive() {
	rs.mu.Lock()
	ids := make([]string, 0, len(rs.active))
	for id := range rs.active {
		ids = append(ids, id)
	}
	rs.mu.Unlock()
	for _, id := range ids {
		rs.store.Touch(id)
	}
}

// Close ends the rooms' sockets and writes what is pending.
func (rs *Service) Close() {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
	rs.cancel()
	rs.stopHeard()
	rs.wg.Wait() // the sockets leave their rooms, writing to the store
	if err := rs.store.Close(); err != nil {
		rs.log.Error("rooms: flush", "err", err)
	}
}

// enter registers a websocket handler; false once closed.
func (rs *Service) enter() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return false
	}
	rs.wg.Add(1)
	return true
}

// Create is POST /rooms.
func (rs *Service) Create() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !rs.site.SameOrigin(r) {
			httperr.Text(w, httperr.New(http.StatusForbidden, "cross-site request refused: start a pair session from this site's own page"))
			return
		}
		client := rs.client(r)
		if !rs.creates.Allow(client, time.Now()) {
			w.Header().Set("Retry-After", "60")
			rs.site.Error(w, r, &httperr.Error{Status: http.StatusTooManyRequests,
				Heading: "Too many rooms from your address",
				Message: fmt.Sprintf("This server lets one address start %d rooms at once and one more every %v.", int(rs.creates.burst), time.Duration(float64(time.Second)/rs.createRate)),
				Advice:  "Use a room you already have, or try again in a minute."})
			return
		}
		tag := rs.defaultTag
		if t := strings.TrimSpace(r.PostFormValue("tag")); t != "" {
			if err := extractor.CheckTag(t); err != nil {
				httperr.Text(w, httperr.New(http.StatusBadRequest, "tag: "+err.Error()))
				return
			}
			tag = t
		}
		reading, ok := ParseReading(r.PostFormValue("reading"))
		if !ok {
			httperr.Text(w, httperr.New(http.StatusBadRequest, "reading: not one this site reads: leave it out for syncLoopIteration, or say reading=volume-manager"))
			return
		}
		room, key, err := rs.store.CreateReading(tag, reading, client)
		if errors.Is(err, ErrOwnerFull) {
			w.Header().Set("Retry-After", "600")
			rs.site.Error(w, r, &httperr.Error{Status: http.StatusTooManyRequests,
				Heading: "Your address holds as many rooms as it may",
				Message: fmt.Sprintf("One address holds at most %d rooms at once (serve --rooms-per-client), so that no one can take every room. A room no one joined ends after %v; an idle one after %v.",
					rs.store.PerOwner(), rs.store.UnjoinedTTL(), rs.store.TTL()),
				Advice: "Use a room you already have, or wait for an unused one to end."})
			return
		}
		if errors.Is(err, ErrFull) {
			w.Header().Set("Retry-After", "300")
			rs.site.Error(w, r, &httperr.Error{Status: http.StatusServiceUnavailable,
				Heading: "This server has no room for another room",
				Message: fmt.Sprintf("It holds %d rooms, its limit (serve --max-rooms). An idle room expires after %v.", rs.store.MaxRooms(), rs.store.TTL()),
				Advice:  "Join a room already open, or ask whoever runs this server to raise the limit."})
			return
		}
		if err != nil {
			rs.log.Error("rooms: create", "err", err)
			rs.site.Error(w, r, &httperr.Error{Status: http.StatusInternalServerError,
				Heading: "Could not start a room",
				Message: err.Error(),
				Err:     err})
			return
		}
		rs.log.Info("rooms: created", "room", room.ID[:6]+"…", "tag", tag, "remote", client)
		rs.site.LoadTag(tag)
		http.Redirect(w, r, "/rooms/"+room.ID+"?k="+url.QueryEscape(key), http.StatusSeeOther)
	})
}

// roomOr404 returns the room the URL names, or answers with a page that
// says why there is none.
func (rs *Service) roomOr404(w http.ResponseWriter, r *http.Request, id string) (Room, bool) {
	room, err := rs.Get(id)
	switch {
	case errors.Is(err, ErrExpired):
		rs.site.Error(w, r, &httperr.Error{Status: http.StatusGone,
			Heading: "This room expired",
			Message: fmt.Sprintf("A room ends after %v with no one in it, and this one did; its feed and tokens are gone.", rs.store.TTL()),
			Advice:  "Start a new pair session from the reading page and share its new links."})
		return room, false
	case err != nil:
		rs.site.Error(w, r, &httperr.Error{Status: http.StatusNotFound,
			Heading: "No such room",
			Message: "There is no room at this address. Check that the link was copied whole.",
			Advice:  "Start a new pair session from the reading page."})
		return room, false
	}
	return room, true
}

// Page serves a room's page of the kind (PageIndex or PagePodWorkers);
// a room that reads the volume manager shows it for PageIndex.
func (rs *Service) Page(kind string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		room, ok := rs.roomOr404(w, r, chi.URLParam(r, "id"))
		if !ok {
			return
		}
		if k := r.URL.Query().Get("k"); k != "" && !rs.store.IsDriver(room.ID, k) {
			rs.site.Error(w, r, &httperr.Error{Status: http.StatusForbidden,
				Heading: "This driver link is not valid",
				Message: "The key in this link is not this room's driver key: it was cut short, or it belongs to another room.",
				Advice:  "Open the room as a viewer at /rooms/" + room.ID + ", or ask the driver for the link again."})
			return
		}
		readerCookie(w, r)
		page := kind
		if kind == PageIndex && room.Reading == ReadingVolume {
			page = PageVolume
		}
		if rs.site.Page(w, r, page, room) {
			rs.store.Touch(room.ID)
		}
	})
}

// What a room's feed says while nothing feeds it (feeds.Owned).
const (
	noteNoJournal = "No journal in this room yet: whoever holds the driver link finds the relay command under More ▾."
	noteHistory   = "No relay is attached now: these are the room's journal lines so far. Whoever holds the driver link finds the relay command under More ▾."
)

// The feeds' side of rooms, when there are feeds.

// feedOwned is what a room's feed is now, as this replica's copy of the
// room has it: the feeds ask it at each request to the feed (registered
// once, feeds.Service.Own), so a rotated token, an ended or expired room
// hold at once on every replica, each with its copy.
func (rs *Service) feedOwned(name string) (feeds.Owned, error) {
	id, _ := strings.CutPrefix(name, FeedPrefix)
	room, err := rs.Get(id)
	switch {
	case errors.Is(err, ErrExpired):
		return feeds.Owned{}, feeds.Gone("this room expired: start a new pair session and use its relay command")
	case err != nil:
		return feeds.Owned{}, errors.New("no such room: copy the relay command from the room's page (driver link)")
	}
	o := feeds.Owned{Tag: room.Tag, Token: room.IngestToken, Demo: !room.Ended, Waiting: noteNoJournal, History: noteHistory,
		WrongToken: "missing or wrong token for this room's feed: copy the relay command from the room's page (driver link); the token may have been rotated",
		Rotated:    "this token no longer opens the feed (rotated?): copy the new command from the room's page"}
	if room.Ended {
		o.Closed = "this room was ended: its journal takes no more lines"
	}
	return o, nil
}

// setFeedTag makes a room's feed read tag.
func (rs *Service) setFeedTag(feed, tag string) {
	if rs.feeds != nil {
		rs.feeds.SetFeedTag(feed, tag)
	}
}

// feedVersion is the kubelet version a room feed's journal reports.
func (rs *Service) feedVersion(feed string) string {
	if rs.feeds == nil {
		return ""
	}
	return rs.feeds.FeedVersion(feed)
}

// dropFeed lets a room's feed go with its room.
func (rs *Service) dropFeed(feed string) {
	if rs.feeds != nil {
		rs.feeds.DropFeed(feed)
	}
}

// Counts are the rooms held (in the cluster), and the readers and
// followers connected to this replica, for /metrics.
func (rs *Service) Counts() (held, readers, followers int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for _, rl := range rs.active {
		rl.mu.Lock()
		driver := rl.rec.Driver
		for _, r := range rl.readers {
			readers++
			if r.following && r.id != driver {
				followers++
			}
		}
		rl.mu.Unlock()
	}
	return rs.store.Len(), readers, followers
}
