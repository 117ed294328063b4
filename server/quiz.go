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
// The third reason is the reader: r carries the session of a student of a
// class that hides the notes, so that student gets every page of the site
// in quiz mode, not only their class's rooms (classes.InHidingClass).
func (d *Deps) inQuiz(r *http.Request, class string) bool {
	if d.Config.Quiz {
		return true
	}
	if d.Classes == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
	defer cancel()
	if class != "" && d.Classes.HideNotes(ctx, class) {
		return true
	}
	return d.Classes.InHidingClass(r.WithContext(ctx))
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
