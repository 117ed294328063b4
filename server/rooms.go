package server

// Pair-reading rooms are package rooms (records, presence, the wheel,
// their sockets and HTTP). This file wires them in: what they ask of the
// site (a room's page, status pages, tags, the live feeds, the socket cap).

import (
	"context"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/rooms"
	"github.com/syncloop/syncloop/server/site"
)

// openRooms opens the rooms' bucket (importing an older version's
// rooms.json once) and starts the rooms.
func (p *Plan) openRooms(ctx context.Context, d *Deps, reg prometheus.Registerer) (*rooms.Service, error) {
	b, log := d.Broker, p.Config.Logger
	sc := p.RoomStore
	sc.JS, sc.Memory, sc.Replicas, sc.Sync, sc.Changed = b.JS, b.Memory, b.Replicas, b.Sync, d.Changed
	// A cluster that just started times out JetStream requests until it
	// has a leader: retry as the feeds' stream does.
	var st *rooms.Store
	err := broker.Retry(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = rooms.Open(ctx, sc)
		return err
	})
	if err != nil {
		return nil, err
	}
	if dir := p.Config.DataDir; dir != "" {
		path := filepath.Join(dir, "rooms.json")
		n, err := st.Import(path)
		if err != nil {
			st.Close()
			return nil, err
		}
		if n > 0 {
			log.Info("rooms: imported the rooms of an older version", "rooms", n, "from", path, "renamed", path+".imported")
		}
	}
	rc := p.Rooms
	rc.Sockets, rc.Store, rc.NC, rc.Feeds, rc.Metrics = d.Sockets, st, b.NC, d.Feeds, reg
	rc.Identify = p.Identify.Client
	rc.OnExpire = d.Notes.Expired
	rc.Site = roomsSite(d)
	rc.Student = func(r *http.Request, class string) (string, string, error) { return d.Classes.Student(r, class) }
	rs, err := rooms.NewService(rc)
	if err != nil {
		st.Close()
		return nil, err
	}
	return rs, nil
}

// roomsSite is what the rooms ask of the site: a room's page, status
// pages and tags. (Their feeds they ask of package feeds directly.)
func roomsSite(d *Deps) rooms.SiteFuncs {
	return rooms.SiteFuncs{
		Page: func(w http.ResponseWriter, r *http.Request, kind string, room rooms.Room) bool {
			hide := d.inQuiz(r, room.Class)
			return d.Site.RoomPage(w, r, kind, room.Tag, site.Room{ID: room.ID, Feed: room.Feed(), HideNotes: hide, Ended: room.Ended, Class: room.Class})
		},
		Error:      d.Site.Error,
		LoadTag:    d.Site.Load,
		TagReady:   d.Site.TagReady,
		SameOrigin: sameOrigin,
	}
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
