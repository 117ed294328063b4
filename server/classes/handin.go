package classes

// Hand-ins by a deadline, and answers released on purpose.
//
//	GET  /rooms/{id}/handin                    the room's hand-in: {"handed_in","by","late"} (null until one)
//	POST /rooms/{id}/handin                    (same origin, a student of the room's class) hand the room
//	                                           in: its worksheet frozen as handins.zip would build it
//	                                           now, with the time and its readers; its notes then refuse
//	                                           writes (423) until the instructor reopens it
//	POST /classes/{id}/rooms/{room}/reopen     (the instructor's key) the room takes writes again; its
//	                                           hand-in is the live worksheet until it hands in again
//
// A hand-in is a key of the classes' bucket, under its class's id
// ({class}.h.{room}), so every replica sees it. It is late when made after
// the class's due time plus the room's extension (Class.Due,
// Class.Extensions), as read when asked: an extension granted afterwards
// counts.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/rooms"
)

// HandIn is a room's hand-in.
type HandIn struct {
	Room string    `json:"room"`
	At   time.Time `json:"at"`
	// By is the student who handed it in; Readers who were in the room then.
	By      string   `json:"by"`
	Readers []string `json:"readers"`
	// Worksheet is the worksheet as handins.zip built it at At.
	Worksheet []byte `json:"worksheet"`
	// Reopened is when the instructor reopened the room (zero while the
	// hand-in stands): the room takes writes, and its hand-in is the live
	// worksheet until it hands in again.
	Reopened time.Time `json:"reopened,omitzero"`
}

// Frozen reports whether the hand-in stands (it was not reopened since).
func (hi HandIn) Frozen() bool { return !hi.At.IsZero() && hi.Reopened.IsZero() }

func handInKey(id, room string) string { return id + ".h." + room }

// HandInOf is room's hand-in in class id; ok is false when it never
// handed in.
func (s *Store) HandInOf(ctx context.Context, id, room string) (hi HandIn, rev uint64, ok bool, err error) {
	if !rooms.ValidID(id) || !rooms.ValidID(room) {
		return hi, 0, false, nil
	}
	e, err := s.kv.Get(ctx, handInKey(id, room))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return hi, 0, false, nil
	}
	if err != nil {
		return hi, 0, false, fmt.Errorf("classes: reading a hand-in: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &hi); err != nil {
		return hi, 0, false, fmt.Errorf("classes: a hand-in: %w", err)
	}
	return hi, e.Revision(), true, nil
}

// putHandIn writes hi over revision rev (0: the room's first).
func (s *Store) putHandIn(ctx context.Context, id string, hi HandIn, rev uint64) error {
	data, err := json.Marshal(hi)
	if err != nil {
		return err
	}
	if rev == 0 {
		_, err = s.kv.Create(ctx, handInKey(id, hi.Room), data)
	} else {
		_, err = s.kv.Update(ctx, handInKey(id, hi.Room), data, rev)
	}
	return err
}

// Locked is why a write to room of class id is refused because the room
// handed in, "" when it is not.
func (h *Handlers) Locked(ctx context.Context, id, room string) string {
	hi, _, ok, err := h.cfg.Store.HandInOf(ctx, id, room)
	if err != nil || !ok || !hi.Frozen() {
		return ""
	}
	return handedInMessage(hi)
}

func handedInMessage(hi HandIn) string {
	return fmt.Sprintf("this room was handed in at %s by %s: its notes are read-only; the instructor can reopen it", hi.At.UTC().Format("15:04 UTC, 2 Jan 2006"), hi.By)
}

// handInJSON is what GET and POST /rooms/{id}/handin answer.
type handInJSON struct {
	HandedIn *time.Time `json:"handed_in"`
	By       string     `json:"by,omitempty"`
	Late     bool       `json:"late"`
	Message  string     `json:"message,omitempty"`
}

func answerHandIn(c Class, hi HandIn, ok bool) handInJSON {
	if !ok || !hi.Frozen() {
		return handInJSON{}
	}
	at := hi.At
	return handInJSON{HandedIn: &at, By: hi.By, Late: c.late(hi.Room, at), Message: handedInMessage(hi)}
}

// classRoom is the room {id} names and its class, or false when it
// answered why there is none.
func (h *Handlers) classRoom(w http.ResponseWriter, r *http.Request) (Class, rooms.Room, bool) {
	room, err := h.cfg.Deps.Rooms.Store().Get(chi.URLParam(r, "id"))
	if err != nil {
		jsonError(w, http.StatusNotFound, "no such room")
		return Class{}, room, false
	}
	if room.Class == "" {
		jsonError(w, http.StatusNotFound, "this room is no class's: there is nothing to hand in; download its worksheet instead")
		return Class{}, room, false
	}
	c, err := h.cfg.Store.Get(r.Context(), room.Class)
	if err != nil {
		jsonError(w, http.StatusNotFound, "this room's class is gone: download its worksheet instead")
		return Class{}, room, false
	}
	return c, room, true
}

// HandInState is GET /rooms/{id}/handin.
func (h *Handlers) HandInState() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, room, ok := h.classRoom(w, r)
		if !ok {
			return
		}
		hi, _, found, err := h.cfg.Store.HandInOf(r.Context(), c.ID, room.ID)
		if err != nil {
			jsonError(w, http.StatusServiceUnavailable, err.Error()+"; try again")
			return
		}
		writeJSON(w, http.StatusOK, answerHandIn(c, hi, found))
	})
}

// HandIn is POST /rooms/{id}/handin.
func (h *Handlers) HandIn() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.cfg.Site.SameOrigin(r) {
			jsonError(w, http.StatusForbidden, "cross-site request refused: hand in from the room's own page")
			return
		}
		c, room, ok := h.classRoom(w, r)
		if !ok {
			return
		}
		st, _, err := h.cfg.Store.SessionOf(r, c.ID)
		if err != nil {
			jsonError(w, http.StatusForbidden, NotStudentMessage(c.ID))
			return
		}
		if !c.Ended.IsZero() {
			jsonError(w, http.StatusGone, "this class has ended: its rooms are read-only, and your instructor has every room's worksheet as it stands")
			return
		}
		old, rev, found, err := h.cfg.Store.HandInOf(r.Context(), c.ID, room.ID)
		if err == nil && found && old.Frozen() {
			jsonError(w, http.StatusConflict, handedInMessage(old))
			return
		}
		n := 1 + slices.IndexFunc(h.cfg.Deps.Rooms.Store().OfClass(c.ID), func(x rooms.Room) bool { return x.ID == room.ID })
		hi := HandIn{Room: room.ID, At: h.cfg.Store.cfg.Now(), By: st.Name, Readers: []string{},
			Worksheet: h.handin(r.Context(), c, n, room)}
		for _, p := range h.cfg.Deps.Rooms.Present(room.ID) {
			hi.Readers = append(hi.Readers, p.Name)
		}
		if err == nil {
			err = h.cfg.Store.putHandIn(r.Context(), c.ID, hi, rev)
		}
		switch {
		case broker.LostRace(err):
			jsonError(w, http.StatusConflict, "this room was handed in meanwhile, from another page: reload it")
			return
		case err != nil:
			jsonError(w, http.StatusServiceUnavailable, "could not hand in: "+err.Error()+"; try again")
			return
		}
		h.cfg.Logger.Info("classes: handed in", "class", c.ID[:6]+"…", "room", room.ID[:6]+"…", "late", c.late(room.ID, hi.At))
		writeJSON(w, http.StatusOK, answerHandIn(c, hi, true))
	})
}

// Reopen is POST /classes/{id}/rooms/{room}/reopen.
func (h *Handlers) Reopen() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructor(w, r)
		if !ok {
			return
		}
		room, _, ok := h.roomOf(w, c, chi.URLParam(r, "room"))
		if !ok {
			return
		}
		hi, rev, found, err := h.cfg.Store.HandInOf(r.Context(), c.ID, room.ID)
		if err == nil && found && hi.Frozen() {
			hi.Reopened = h.cfg.Store.cfg.Now()
			err = h.cfg.Store.putHandIn(r.Context(), c.ID, hi, rev)
		}
		if err != nil {
			jsonError(w, http.StatusServiceUnavailable, "could not reopen the room: "+err.Error()+"; try again")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": room.ID, "handed_in": nil, "reopened": found})
	})
}

// late reports whether a hand-in of room at at is after the class's due
// time and the room's extension.
func (c Class) late(room string, at time.Time) bool {
	return !c.Due.IsZero() && at.After(c.Due.Add(time.Duration(c.Extensions[room])*time.Minute))
}

// released reports whether the class's notes and answer key are shown at
// now: released by the button ("now"), or at the due time ("due") once
// every room's deadline (the due time and the longest extension) passed.
func (c Class) released(now time.Time) bool {
	switch c.Release {
	case ReleaseNow:
		return true
	case ReleaseDue:
		longest := 0
		for _, m := range c.Extensions {
			longest = max(longest, m)
		}
		return !c.Due.IsZero() && !now.Before(c.Due.Add(time.Duration(longest)*time.Minute))
	}
	return false
}

// When a class's notes are released (Class.Release).
const (
	ReleaseNow = "now"
	ReleaseDue = "due"
)

// maxExtension is the longest extension a room is given, in minutes.
const maxExtension = 30 * 24 * 60

// applyDeadline checks and applies the due time, the extensions and the
// release of s to c.
func (s Settings) applyDeadline(c *Class) error {
	if s.Due != nil {
		c.Due = time.Time{}
		if d := strings.TrimSpace(*s.Due); d != "" {
			t, err := time.Parse(time.RFC3339, d)
			if err != nil {
				return fmt.Errorf("due %q: a time as RFC 3339 writes it (2026-12-04T17:00:00Z, or with an offset: +01:00), or empty for no deadline", d)
			}
			c.Due = t.UTC()
		}
	}
	if s.Extensions != nil {
		ext := map[string]int{}
		for room, m := range s.Extensions {
			if !rooms.ValidID(room) {
				return fmt.Errorf("extensions: %q is not a room's id", room)
			}
			if m < 0 || m > maxExtension {
				return fmt.Errorf("extensions: %d minutes for room %s…: 0 to %d minutes (30 days)", m, room[:min(6, len(room))], maxExtension)
			}
			if m > 0 {
				ext[room] = m
			}
		}
		c.Extensions = ext
	}
	if s.Release != nil {
		switch *s.Release {
		case ReleaseNow, ReleaseDue, "":
			c.Release = *s.Release
		default:
			return fmt.Errorf(`release %q: "now" (show the site's notes to the class now), "due" (once the due time passed) or "" (not until you release them)`, *s.Release)
		}
	}
	return nil
}

// handedIn is when room of class c handed in (nil: never, or reopened
// since) and whether late.
func (d Deps) handedIn(ctx context.Context, c Class, room string) (*time.Time, bool) {
	if d.handIns == nil {
		return nil, false
	}
	hi, _, ok, err := d.handIns.HandInOf(ctx, c.ID, room)
	if err != nil || !ok || !hi.Frozen() {
		return nil, false
	}
	at := hi.At
	return &at, c.late(room, at)
}

// zipHandins writes class c's hand-ins to z: each room's worksheet as it
// was handed in, or as it is now when it never was (or was reopened
// since), named room-N-ROOM-ID.md; and, once the class has a due time or
// a room handed in, README.md: which room handed in when, late or
// not, and which never did.
func (h *Handlers) zipHandins(ctx context.Context, c Class, z *zip.Writer) error {
	var index bytes.Buffer
	used := !c.Due.IsZero()
	for i, room := range h.cfg.Deps.Rooms.Store().OfClass(c.ID) {
		hi, _, found, err := h.cfg.Store.HandInOf(ctx, c.ID, room.ID)
		if err != nil {
			return err
		}
		used = used || found
		name := fmt.Sprintf("room-%d-%s.md", i+1, room.ID)
		md, mod := hi.Worksheet, hi.At
		switch {
		case hi.Frozen():
			late := ""
			if c.late(room.ID, hi.At) {
				late = " — late"
			}
			fmt.Fprintf(&index, "- %s: handed in at %s by %s%s\n", name, hi.At.UTC().Format(time.RFC3339), annotations.Inline(hi.By), late)
		case found:
			md, mod = h.handin(ctx, c, i+1, room), room.LastActive
			fmt.Fprintf(&index, "- %s: reopened at %s, not handed in again: the worksheet as it is now\n", name, hi.Reopened.UTC().Format(time.RFC3339))
		default:
			md, mod = h.handin(ctx, c, i+1, room), room.LastActive
			fmt.Fprintf(&index, "- %s: never handed in: the worksheet as it is now\n", name)
		}
		if err := zipFile(z, name, mod, md); err != nil {
			return err
		}
	}
	if !used {
		return nil
	}
	head := "# Hand-ins\n\n"
	if !c.Due.IsZero() {
		head += "Due " + c.Due.UTC().Format(time.RFC3339) + " (and each room's extension).\n\n"
	}
	return zipFile(z, "README.md", h.cfg.Store.cfg.Now(), append([]byte(head), index.Bytes()...))
}

func zipFile(z *zip.Writer, name string, mod time.Time, b []byte) error {
	f, err := z.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, Modified: mod})
	if err == nil {
		_, err = f.Write(b)
	}
	return err
}

// handedInText is what results.json's output says of rp's hand-in.
func handedInText(rp RoomProgress) string {
	switch {
	case rp.HandedIn == nil:
		return " Not handed in."
	case rp.Late:
		return " Handed in at " + rp.HandedIn.UTC().Format(time.RFC3339) + ", late."
	}
	return " Handed in at " + rp.HandedIn.UTC().Format(time.RFC3339) + "."
}
