package server

// Pair-reading rooms are package rooms (records, presence, the wheel,
// their sockets and HTTP). This file wires them in: what they ask of the
// site (a room's page, status pages, tags, the live feeds, the socket cap)
// and the rooms' gauges in /metrics.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/rooms"
	"github.com/syncloop/syncloop/server/site"
)

// openRooms opens the rooms' bucket (importing an older version's
// rooms.json once) and starts the rooms.
func (s *Server) openRooms(ctx context.Context, b *broker.Broker, tune func(*rooms.ServiceConfig)) (*rooms.Service, error) {
	cfg := s.cfg
	// A cluster that just started times out JetStream requests until it
	// has a leader: retry as the feeds' stream does.
	var st *rooms.Store
	err := broker.Retry(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = rooms.Open(ctx, rooms.Config{JS: b.JS, Memory: b.Memory, Replicas: b.Replicas,
			TTL: cfg.RoomTTL, MaxRooms: cfg.MaxRooms, PerOwner: cfg.RoomsPerClient, UnjoinedTTL: cfg.RoomUnjoinedTTL, Sync: b.Sync, Logger: s.log})
		return err
	})
	if err != nil {
		return nil, err
	}
	if cfg.DataDir != "" {
		path := filepath.Join(cfg.DataDir, "rooms.json")
		n, err := st.Import(path)
		if err != nil {
			st.Close()
			return nil, err
		}
		if n > 0 {
			s.log.Info("rooms: imported the rooms of an older version", "rooms", n, "from", path, "renamed", path+".imported")
		}
	}
	rc := rooms.ServiceConfig{
		Sockets:        s.sockets,
		TrustedProxies: cfg.TrustedProxies,
		IPv6Prefix:     cfg.IPv6Prefix,
		Store:          st,
		NC:             b.NC,
		Feeds:          s.live,
		DefaultTag:     cfg.DefaultTag,
		MaxReaders:     cfg.MaxReaders,
		Logger:         s.log,
		Site: rooms.Site{
			Page: func(w http.ResponseWriter, r *http.Request, kind string, room rooms.Room) bool {
				hide := room.Class != "" && s.classes.HideNotes(r.Context(), room.Class)
				return s.site.RoomPage(w, r, kind, room.Tag, site.Room{ID: room.ID, Feed: room.Feed(), HideNotes: hide, Ended: room.Ended, Class: room.Class})
			},
			Status:     s.site.Status,
			LoadTag:    s.site.Load,
			TagReady:   s.site.TagReady,
			SameOrigin: sameOrigin,
		},
	}
	if tune != nil {
		tune(&rc)
	}
	rs, err := rooms.NewService(rc)
	if err != nil {
		st.Close()
		return nil, err
	}
	return rs, nil
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

// handleMetrics is the live side's exposition plus the rooms'. Room feeds
// are left out of the per-feed series: their names are viewer links.
func (s *Server) handleMetrics() http.Handler {
	liveMetrics := s.live.HandleMetrics()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &bufferWriter{h: http.Header{}}
		liveMetrics.ServeHTTP(rec, r)
		var b bytes.Buffer
		for line := range strings.Lines(rec.b.String()) {
			if !strings.Contains(line, `feed="`+rooms.FeedPrefix) {
				b.WriteString(line)
			}
		}
		held, readers, followers := s.rooms.Counts()
		fmt.Fprintf(&b, "# HELP syncloop_rooms Pair-reading rooms held (not expired).\n# TYPE syncloop_rooms gauge\nsyncloop_rooms %d\n", held)
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
