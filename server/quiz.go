package server

// Quiz mode: whether a request is answered without the site's notes and
// what is derived from them (the writers, the sets, the element types, the
// answer key), with a checker that says only yes or no. One function
// decides it for every part: the pages (package site), a room's page, and
// the readers' notes and their checks (package annotations).

import (
	"context"
	"net/http"
	"time"
)

// inQuiz reports whether r is answered in quiz mode: the server runs
// --quiz, or r is for a room of a class that hides the site's notes
// (class is the room's class, "" for none or for a page of no room).
//
// A student's class session, when there is one, is the third reason: it
// is decided here, from r, and every part follows.
func (d *Deps) inQuiz(r *http.Request, class string) bool {
	if d.Config.Quiz {
		return true
	}
	if class == "" || d.Classes == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	return d.Classes.HideNotes(ctx, class)
}

// roomInQuiz is inQuiz for a request about room id's notes ("" for a
// reader's own notes, of no room).
func (d *Deps) roomInQuiz(r *http.Request, id string) bool {
	class := ""
	if id != "" && d.Rooms != nil {
		if room, err := d.Rooms.Get(id); err == nil {
			class = room.Class
		}
	}
	return d.inQuiz(r, class)
}
