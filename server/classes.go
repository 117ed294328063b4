package server

// Classes are package classes (a class's record, its rooms' overview, its
// pages and the instructor's stream). This file wires them in: what they
// ask of the rooms, the notes, the feeds and the site.

import (
	"context"
	"net/http"
	"time"

	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classes"
)

// openClasses opens the classes' bucket and their handlers. The fired
// counts are the feeds' own count of a journal's lines per case on this
// replica (feeds.FeedFired), until the feeds' record of what fired
// (GET /feeds/{feed}/fired) is wired in its place.
func (p *Plan) openClasses(ctx context.Context, d *Deps, notes *annotations.Store) (*classes.Handlers, error) {
	b := d.Broker
	var st *classes.Store
	err := broker.Retry(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = classes.OpenStore(ctx, classes.StoreConfig{JS: b.JS, Memory: b.Memory, Replicas: b.Replicas})
		return err
	})
	if err != nil {
		return nil, err
	}
	cc := p.Classes
	cc.Store, cc.Sockets = st, d.Sockets // instructors' streams count with the client's websockets
	if cc.Changed == nil {               // a test's own signal stands for none
		cc.Changed = d.Changed
	}
	cc.Identify = p.Identify.Client
	cc.Deps = classes.Deps{
		Rooms:          d.Rooms,
		Notes:          notes.Notes,
		Reading:        readingOrLoad(d.Site),
		VolumeReading:  d.Site.LoadVolumeReading,
		Fired:          classes.FiredFunc(d.Feeds.FeedFired),
		KubeletVersion: d.Feeds.FeedVersion,
		Relayed:        d.Feeds.FeedRelayed,
		Line:           d.Feeds.Line,
		LabCheck:       newLabChecks(d.Feeds, readingOrLoad(d.Site)).Check,
	}
	cc.Site = classes.SiteFuncs{
		Page: func(w http.ResponseWriter, r *http.Request, title string, data *classes.PageData) {
			d.Site.ClassPage(w, r, title, data)
		},
		Error:      d.Site.Error,
		SameOrigin: sameOrigin,
		LoadTag:    d.Site.Load,
	}
	return classes.NewHandlers(cc), nil
}
