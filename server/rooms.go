package server

// Pair-reading rooms: the HTTP side. A room is the reading page at the
// room's tag, plus a room bar (templates/room.html, static/room.js) and a
// live pane on the room's own feed, "room-<id>". The durable part (ids,
// keys, tokens, expiry) is package rooms; who is present and who drives is
// rooms_ws.go.
//
//	POST /rooms               create a room (same-origin only, rate-limited and capped per client address);
//	                          303 to the driver link /rooms/{id}?k=KEY
//	GET  /rooms/{id}          the room's page (410 once it expired); ?k=KEY checks the driver key
//	GET  /rooms/{id}/pod-workers   the room's pod_workers page
//	GET  /rooms/{id}/ws       the room's websocket (rooms_ws.go)
//
// Roles. The page is the same for everyone: the role is decided on the room
// websocket, where the browser presents the driver key it was given in the
// driver link (room.js keeps it in sessionStorage and takes it out of the
// address bar, so a copied address is a viewer link). Only a connection that
// presented the key may take the wheel, see and rotate the ingest token. A
// reader handed the wheel is given a wheel ticket, which room.js keeps in
// sessionStorage too, so that the wheel stays with them when their page
// loads again (rooms_ws.go).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/rooms"
)

// Room limits and their defaults.
const (
	defaultMaxReaders = 32
	roomMsgLimit      = 4 << 10 // bytes per message from a browser
	roomMsgRate       = 20      // messages a second per connection, after a burst of roomMsgBurst
	roomMsgBurst      = 40
	createRate        = 1.0 / 6 // rooms a second per client IP, after a burst of createBurst
	createBurst       = 10
)

// roomView is what a room's page needs beyond the reading.
type roomView struct {
	ID   string
	Feed string
}

// roomSet owns the rooms: the store and the rooms with readers present.
type roomSet struct {
	store      *rooms.Store
	nc         *nats.Conn // to the other replicas (rooms_wire.go)
	replica    string     // ends this replica's reader ids: unique in the cluster
	maxReaders int
	msgRate    float64       // roomMsgRate; benchmarks raise it
	wheelGrace time.Duration // wheelGrace; tests shorten it
	log        *slog.Logger
	creates    *rooms.KeyLimiter
	trusted    []netip.Prefix  // Config.TrustedProxies, for clientAddr
	sockets    *browserSockets // the live side's: one cap for both kinds of socket
	live       *live
	loadTag    func(tag string) // starts loading a tag's Reading
	// onExpire is told of each room that expires (its notes go with it).
	onExpire func(id string)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	active map[string]*roomLive // rooms with readers
	closed bool
}

func newRoomSet(ctx context.Context, cfg Config, b *broker.Broker, l *live, loadTag func(string)) (*roomSet, error) {
	// A cluster that just started times out JetStream requests until it
	// has a leader: retry as the feeds' stream does.
	var st *rooms.Store
	err := broker.Retry(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = rooms.Open(ctx, rooms.Config{JS: b.JS, Memory: b.Memory, Replicas: b.Replicas,
			TTL: cfg.RoomTTL, MaxRooms: cfg.MaxRooms, PerOwner: cfg.RoomsPerClient, UnjoinedTTL: cfg.RoomUnjoinedTTL, Logger: cfg.Logger})
		return err
	})
	if err != nil {
		return nil, err
	}
	if cfg.DataDir != "" {
		// Rooms of a version that kept them in a file come along once.
		path := filepath.Join(cfg.DataDir, "rooms.json")
		n, err := st.Import(path)
		if err != nil {
			st.Close()
			return nil, err
		}
		if n > 0 {
			cfg.Logger.Info("rooms: imported the rooms of an older version", "rooms", n, "from", path, "renamed", path+".imported")
		}
	}
	replica, err := rooms.NewSecret()
	if err != nil {
		st.Close()
		return nil, err
	}
	rs := &roomSet{
		store:      st,
		nc:         b.NC,
		replica:    "-" + strings.ToLower(replica[:5]),
		maxReaders: cfg.MaxReaders,
		msgRate:    roomMsgRate,
		wheelGrace: wheelGrace,
		log:        cfg.Logger,
		creates:    rooms.NewKeyLimiter(createRate, createBurst, 10000),
		trusted:    cfg.TrustedProxies,
		sockets:    l.sockets,
		live:       l,
		loadTag:    loadTag,
		active:     map[string]*roomLive{},
	}
	if rs.maxReaders <= 0 {
		rs.maxReaders = defaultMaxReaders
	}
	rs.ctx, rs.cancel = context.WithCancel(context.Background())
	st.OnChange(func(id string) {
		// Not on the watcher's goroutine: a room's lock may be held by a
		// writer waiting for the bucket.
		go rs.changed(id)
	})
	rs.wg.Add(1)
	go rs.housekeep(cfg)
	return rs, nil
}

// housekeep writes LastActive now and then and expires idle rooms, dropping
// their feeds.
func (rs *roomSet) housekeep(cfg Config) {
	defer rs.wg.Done()
	t := time.NewTicker(rooms.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-rs.ctx.Done():
			return
		case <-t.C:
		}
		rs.touchActive()
		gone, err := rs.store.Sweep()
		if err != nil {
			cfg.Logger.Error("rooms: saving", "err", err)
		}
		for _, id := range gone {
			rs.live.dropFeed(rooms.FeedPrefix + id)
			if rs.onExpire != nil {
				rs.onExpire(id)
			}
			cfg.Logger.Info("rooms: expired", "room", id[:6]+"…")
		}
	}
}

// touchActive marks every room with readers as used now.
func (rs *roomSet) touchActive() {
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

func (rs *roomSet) close() {
	rs.mu.Lock()
	rs.closed = true
	rs.mu.Unlock()
	rs.cancel()
	rs.wg.Wait() // the sockets leave their rooms, writing to the store
	if err := rs.store.Close(); err != nil {
		rs.log.Error("rooms: flush", "err", err)
	}
}

// enter registers a websocket handler; false once closed.
func (rs *roomSet) enter() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.closed {
		return false
	}
	rs.wg.Add(1)
	return true
}

// sameOrigin reports whether a browser sent r from this site's own pages.
// Sec-Fetch-Site, which a page cannot forge, decides when present; else
// Origin must name this host. (Under Referrer-Policy: no-referrer a browser
// sends "Origin: null" even for its own forms, so Origin alone cannot be
// asked first.) A request with neither header is not from a browser that
// could be tricked into it, so it passes.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return s == "same-origin"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return false
		}
	}
	return true
}

func (s *Server) handleCreateRoom() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			http.Error(w, "cross-site request refused: start a pair session from this site's own page", http.StatusForbidden)
			return
		}
		client := clientAddr(r, s.cfg.TrustedProxies)
		if !s.rooms.creates.Allow(client, time.Now()) {
			w.Header().Set("Retry-After", "60")
			s.statusPage(w, r, http.StatusTooManyRequests, pageData{
				Heading: "Too many rooms from your address",
				Message: fmt.Sprintf("This server lets one address start %d rooms at once and one more every %v.", createBurst, time.Duration(float64(time.Second)/createRate)),
				Advice:  "Use a room you already have, or try again in a minute.",
			})
			return
		}
		tag := s.cfg.DefaultTag
		if t := strings.TrimSpace(r.PostFormValue("tag")); t != "" {
			if err := extractor.CheckTag(t); err != nil {
				http.Error(w, "tag: "+err.Error(), http.StatusBadRequest)
				return
			}
			tag = t
		}
		room, key, err := s.rooms.store.Create(tag, client)
		if errors.Is(err, rooms.ErrOwnerFull) {
			w.Header().Set("Retry-After", "600")
			s.statusPage(w, r, http.StatusTooManyRequests, pageData{
				Heading: "Your address holds as many rooms as it may",
				Message: fmt.Sprintf("One address holds at most %d rooms at once (serve --rooms-per-client), so that no one can take every room. A room no one joined ends after %v; an idle one after %v.",
					s.rooms.store.PerOwner(), s.rooms.store.UnjoinedTTL(), s.rooms.store.TTL()),
				Advice: "Use a room you already have, or wait for an unused one to end.",
			})
			return
		}
		if errors.Is(err, rooms.ErrFull) {
			w.Header().Set("Retry-After", "300")
			s.statusPage(w, r, http.StatusServiceUnavailable, pageData{
				Heading: "This server has no room for another room",
				Message: fmt.Sprintf("It holds %d rooms, its limit (serve --max-rooms). An idle room expires after %v.", s.rooms.store.MaxRooms(), s.rooms.store.TTL()),
				Advice:  "Join a room already open, or ask whoever runs this server to raise the limit.",
			})
			return
		}
		if err != nil {
			s.log.Error("rooms: create", "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Heading: "Could not start a room", Message: err.Error()})
			return
		}
		s.log.Info("rooms: created", "room", room.ID[:6]+"…", "tag", tag, "remote", client)
		s.rooms.loadTag(tag)
		http.Redirect(w, r, "/rooms/"+room.ID+"?k="+url.QueryEscape(key), http.StatusSeeOther)
	})
}

// roomOr404 returns the room the URL names, or answers with a page that
// says why there is none.
func (s *Server) roomOr404(w http.ResponseWriter, r *http.Request, id string) (rooms.Room, bool) {
	room, err := rooms.Room{}, rooms.ErrNotFound
	if rooms.ValidID(id) {
		room, err = s.rooms.store.Get(id)
	}
	switch {
	case errors.Is(err, rooms.ErrExpired):
		s.statusPage(w, r, http.StatusGone, pageData{
			Heading: "This room expired",
			Message: fmt.Sprintf("A room ends after %v with no one in it, and this one did; its feed and tokens are gone.", s.rooms.store.TTL()),
			Advice:  "Start a new pair session from the reading page and share its new links.",
		})
		return room, false
	case err != nil:
		s.statusPage(w, r, http.StatusNotFound, pageData{
			Heading: "No such room",
			Message: "There is no room at this address. Check that the link was copied whole.",
			Advice:  "Start a new pair session from the reading page.",
		})
		return room, false
	}
	return room, true
}

// handleRoomPage serves a room's page of the kind (pageIndex or pagePodWorkers).
func (s *Server) handleRoomPage(kind string) http.Handler {
	tmpl, title := "index.html", "syncLoopIteration"
	if kind == pagePodWorkers {
		tmpl, title = "pod-workers.html", "pod_workers.go"
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		room, ok := s.roomOr404(w, r, chi.URLParam(r, "id"))
		if !ok {
			return
		}
		if k := r.URL.Query().Get("k"); k != "" && !s.rooms.store.IsDriver(room.ID, k) {
			s.statusPage(w, r, http.StatusForbidden, pageData{
				Heading: "This driver link is not valid",
				Message: "The key in this link is not this room's driver key: it was cut short, or it belongs to another room.",
				Advice:  "Open the room as a viewer at /rooms/" + room.ID + ", or ask the driver for the link again.",
			})
			return
		}
		st, ok := s.loaded(w, r, room.Tag, " for this room")
		if !ok {
			return
		}
		tags, _ := s.readableTags()
		body, err := s.execute(tmpl, pageData{
			Title: "Pair session · " + title + " at " + room.Tag, Page: kind,
			Tag: room.Tag, Tags: tags, DefaultTag: s.cfg.DefaultTag, V: st.view,
			Room: &roomView{ID: room.ID, Feed: room.Feed()},
		})
		if err != nil {
			s.log.Error("render room", "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Heading: "Could not render the room", Message: err.Error()})
			return
		}
		s.rooms.store.Touch(room.ID)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(body)
	})
}

// roomFeedGate guards the live endpoints of room feeds: the room must be
// alive, and its feed reads the room's tag. Other feeds pass through.
func (s *Server) roomFeedGate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(chi.URLParam(r, "feed"), rooms.FeedPrefix)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		room, err := rooms.Room{}, rooms.ErrNotFound
		if rooms.ValidID(id) {
			room, err = s.rooms.store.Get(id)
		}
		switch {
		case errors.Is(err, rooms.ErrExpired) && isWebsocket(r) && strings.HasSuffix(r.URL.Path, "/ws"):
			refuseSocket(w, r, CloseRoomGone, "this room expired") // a reader's live pane stops reconnecting
			return
		case errors.Is(err, rooms.ErrExpired):
			http.Error(w, "this room expired: start a new pair session and use its relay command", http.StatusGone)
			return
		case err != nil:
			http.Error(w, "no such room: copy the relay command from the room's page (driver link)", http.StatusNotFound)
			return
		}
		s.live.setFeedTag(room.Feed(), room.Tag)
		next.ServeHTTP(w, r)
	})
}

// feedToken is Config.FeedToken for the live side: a room's feed takes the
// room's ingest token (and only it).
func (rs *roomSet) feedToken(feed string) (string, bool) {
	id, ok := strings.CutPrefix(feed, rooms.FeedPrefix)
	if !ok {
		return "", false
	}
	tok, ok := rs.store.Token(id)
	if !ok {
		return "", true // a room feed, but no room: no token opens it
	}
	return tok, true
}

// handleMetrics is the live side's exposition plus the rooms'. Room feeds
// are left out of the per-feed series: their names are viewer links.
func (s *Server) handleMetrics() http.Handler {
	liveMetrics := s.live.handleMetrics()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferWriter{h: http.Header{}}
		liveMetrics.ServeHTTP(rec, r)
		var b bytes.Buffer
		for line := range strings.Lines(rec.b.String()) {
			if !strings.Contains(line, `feed="`+rooms.FeedPrefix) {
				b.WriteString(line)
			}
		}
		readers, followers := s.rooms.counts()
		fmt.Fprintf(&b, "# HELP syncloop_rooms Pair-reading rooms held (not expired).\n# TYPE syncloop_rooms gauge\nsyncloop_rooms %d\n", s.rooms.store.Len())
		fmt.Fprintf(&b, "# HELP syncloop_room_readers Readers connected to rooms.\n# TYPE syncloop_room_readers gauge\nsyncloop_room_readers %d\n", readers)
		fmt.Fprintf(&b, "# HELP syncloop_room_followers Readers in rooms following their driver.\n# TYPE syncloop_room_followers gauge\nsyncloop_room_followers %d\n", followers)
		w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
		io.Copy(w, &b)
	})
}

// bufferWriter keeps a response in memory, to be edited before it is sent.
type bufferWriter struct {
	h http.Header
	b bytes.Buffer
}

func (w *bufferWriter) Header() http.Header         { return w.h }
func (w *bufferWriter) Write(p []byte) (int, error) { return w.b.Write(p) }
func (w *bufferWriter) WriteHeader(int)             {}
