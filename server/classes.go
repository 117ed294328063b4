package server

// Classes are package classes (a class's record, its rooms' overview, its
// pages and the instructor's stream). This file wires them in: what they
// ask of the rooms, the notes, the feeds and the site.

import (
	"context"
	"net/http"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/rooms"
)

// openClasses opens the classes' bucket and their handlers. The fired
// counts are the feeds' own count of a journal's lines per case on this
// replica (feeds.FeedFired), until the feeds' record of what fired
// (GET /feeds/{feed}/fired) is wired in its place.
func (s *Server) openClasses(ctx context.Context) error {
	var st *classes.Store
	err := broker.Retry(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		st, err = classes.OpenStore(ctx, classes.StoreConfig{JS: s.broker.JS, Memory: s.broker.Memory, Replicas: s.broker.Replicas})
		return err
	})
	if err != nil {
		return err
	}
	maxRooms := s.cfg.MaxRooms
	if maxRooms <= 0 {
		maxRooms = rooms.DefaultMaxRooms
	}
	l := s.live
	s.classes = classes.NewHandlers(classes.Config{
		Store: st,
		Deps: classes.Deps{
			Rooms: s.rooms,
			Notes: s.noteStore.Notes,
			Reading: func(tag string) *extractor.Reading {
				if r := s.site.Reading(tag); r != nil {
					return r
				}
				s.site.Load(tag)
				return nil
			},
			Fired:          classes.FiredFunc(l.FeedFired),
			KubeletVersion: l.FeedVersion,
			Relayed:        l.FeedRelayed,
		},
		Site: classes.Site{
			Page: func(w http.ResponseWriter, r *http.Request, title string, data *classes.PageData) {
				s.site.ClassPage(w, r, title, data)
			},
			Status:     s.site.Status,
			SameOrigin: sameOrigin,
			LoadTag:    s.site.Load,
		},
		DefaultTag:     s.cfg.DefaultTag,
		MaxBudget:      maxRooms,
		TrustedProxies: s.cfg.TrustedProxies,
		Logger:         s.log,
	})
	return nil
}
