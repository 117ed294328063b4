package classes

// A student's session over HTTP: the class page's hello gives it, and the
// class's rooms ask for it (Handlers.Student).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/names"
	"github.com/syncloop/syncloop/server/rooms"
)

// Hello is POST /classes/{id}/hello {"name"}: a student's name for the
// roster. Without a session of the class it makes one (a new student) and
// sets its cookie; with one, it renames its student. An "id" in the body,
// which older pages send, is not read: who a student is, is their session.
func (h *Handlers) Hello() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.cfg.Site.SameOrigin(r) {
			jsonError(w, http.StatusForbidden, "cross-site request refused")
			return
		}
		var in struct{ Name string }
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10)).Decode(&in); err != nil {
			jsonError(w, http.StatusBadRequest, "hello: "+err.Error())
			return
		}
		name, err := CleanStudent(in.Name)
		if err != nil {
			jsonError(w, http.StatusBadRequest, err.Error())
			return
		}
		if !h.hellos.Allow(h.cfg.Identify(r), time.Now()) {
			w.Header().Set("Retry-After", "5")
			jsonError(w, http.StatusTooManyRequests, "too many names from your address at once: trying again in a moment")
			return
		}
		c, err := h.cfg.Store.Get(r.Context(), chi.URLParam(r, "id"))
		switch {
		case errors.Is(err, ErrNotFound):
			jsonError(w, http.StatusNotFound, "no such class")
			return
		case err != nil:
			jsonError(w, http.StatusServiceUnavailable, err.Error())
			return
		case !c.Ended.IsZero():
			jsonError(w, http.StatusGone, ErrEnded.Error())
			return
		}
		st, err := h.hello(w, r, c, name)
		var taken *NameTakenError
		switch {
		case errors.As(err, &taken), errors.Is(err, ErrRoster):
			jsonError(w, http.StatusConflict, err.Error())
		case err != nil:
			jsonError(w, http.StatusServiceUnavailable, err.Error())
		default:
			writeJSON(w, http.StatusOK, st)
		}
	})
}

// hello renames the student of r's session of class c, or makes a new
// one and sets the cookie of their session.
func (h *Handlers) hello(w http.ResponseWriter, r *http.Request, c Class, name string) (Student, error) {
	ctx := r.Context()
	old, token, err := h.cfg.Store.SessionOf(r, c.ID)
	if err == nil {
		st, err := h.cfg.Store.Hello(ctx, c.ID, old.ID, name)
		if err == nil {
			err = h.cfg.Store.Renew(ctx, c.ID, token, old.ID)
		}
		return st, err
	}
	if !errors.Is(err, ErrNoSession) {
		return Student{}, err
	}
	st, token, err := h.cfg.Store.NewSession(ctx, c.ID, name)
	if err != nil {
		return Student{}, err
	}
	http.SetCookie(w, &http.Cookie{Name: CookieName(c.ID), Value: token, Path: "/", MaxAge: int(h.cfg.Store.TTL() / time.Second),
		HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	return st, nil
}

// Student is the id and name of the student of class id whose session r
// carries: ErrNoSession when it carries none (the class's rooms then
// refuse its writes, NotStudentMessage).
func (h *Handlers) Student(r *http.Request, id string) (sid, name string, err error) {
	st, _, err := h.cfg.Store.SessionOf(r, id)
	if err != nil {
		return "", "", err
	}
	return st.ID, names.Clean(st.Name), nil
}

// NotStudentMessage is what a write refused in a room of class id for
// want of the class's session says.
func NotStudentMessage(id string) string {
	return fmt.Sprintf("only this class's students write in its rooms: give your name on the class page, /classes/%s, then come back to this room", id)
}

// notStudent answers a request of class c's page refused for want of a
// session (err).
func (h *Handlers) notStudent(w http.ResponseWriter, r *http.Request, c Class, err error, what string) {
	if !errors.Is(err, ErrNoSession) {
		h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusServiceUnavailable,
			Heading: "Could not read your session",
			Message: err.Error(),
			Advice:  "Try again in a moment.",
			Err:     err})
		return
	}
	h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusForbidden,
		Heading: "Give your name first",
		Message: "Only the class's students " + what + ": a student is who gave their name on the class page, in this browser.",
		Advice:  "Open the class page, /classes/" + c.ID + ", give your name, and try again."})
}

// maxSessionCookies bounds the class cookies one request is looked up by.
const maxSessionCookies = 4

// InHidingClass reports whether r carries the session of a student of a
// class that hides the site's notes: such a student gets every page of the
// site in quiz mode, not only their class's rooms. A request with no class
// cookie costs no lookup.
func (h *Handlers) InHidingClass(r *http.Request) bool {
	n := 0
	for _, c := range r.Cookies() {
		id, ok := strings.CutPrefix(c.Name, CookieName(""))
		if !ok || !rooms.ValidID(id) {
			continue
		}
		if n++; n > maxSessionCookies {
			return false
		}
		if _, err := h.cfg.Store.Session(r.Context(), id, c.Value); err == nil && h.HideNotes(r.Context(), id) {
			return true
		}
	}
	return false
}
