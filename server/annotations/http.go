package annotations

// The HTTP side. A room's notes:
//
//	GET    /rooms/{id}/notes?tag=T           every note, as views at tag T (default the room's)
//	PUT    /rooms/{id}/notes/{note}?tag=T    write a note: {"text","rev","color","quote":{"tag","start","end"}}; its
//	                                         author is the server's word (HTTPConfig.Author), an "author"
//	                                         sent is not read; 403 for who may not write in the room
//	                                         200 the view; when rev is stale, 200 {"conflict":true,
//	                                         "error","current"} (not 409: a conflict is an answer the
//	                                         page expects, not a failed request it would log);
//	                                         410 when the room expired (its page is then read-only)
//	DELETE /rooms/{id}/notes/{note}?rev=N    delete a comment
//	GET    /rooms/{id}/notes/{note}/history  its versions, newest first
//	GET    /rooms/{id}/notes/events?tag=T    server-sent events: "snapshot" (all views), then
//	                                         "note" per change, "expired" when the room is gone
//	GET    /rooms/{id}/worksheet.md          the room's hand-in, from what its readers wrote
//	POST   /rooms/{id}/pins                  {"seq":N}: pin line N of the room's journal (fired.go)
//	GET    /rooms/{id}/worksheet.json        what its print begins and ends with (print.go)
//
// And, for a reader without a room, whose notes stay in the browser, the
// same rendering, checks, anchoring and hand-in with nothing stored:
//
//	POST /k8s/{tag}/notes          {"notes":[…]} → {"views":[…]}
//	POST /k8s/{tag}/worksheet.md   {"notes":[…]} → the worksheet
//	POST /k8s/{tag}/worksheet.json {"notes":[…]} → what its print begins and ends with

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/annotations/anchor"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/rooms"
)

// Room errors the Room lookup returns.
var (
	ErrNoRoom      = errors.New("no such room")
	ErrRoomExpired = errors.New("the room expired")
	// ErrRoomEnded: the room was ended (Room returns its tag with it):
	// its notes are read, not written.
	ErrRoomEnded = errors.New("the room was ended")
)

// HTTPConfig is what the handlers need from the rest of the server.
type HTTPConfig struct {
	Store *Store
	// Room returns a live room's tag, ErrRoomExpired or ErrNoRoom; an
	// ended room's tag with ErrRoomEnded.
	Room func(id string) (tag string, err error)
	// Readers returns the names given in a room (its worksheet says who
	// read it); nil means none are known.
	Readers func(id string) []string
	// Author is the name a write to room id from r is signed with: the
	// server's word, never the request body's. A *ForbiddenError refuses
	// the write (a class's room, a request without the class's session).
	// Nil signs every write "anonymous".
	Author func(r *http.Request, id string) (string, error)
	// Title is what a room's hand-in is titled, its typed names written
	// by esc: which room of which class ("" or nil: "Pair session abc…").
	Title func(ctx context.Context, id string, esc func(string) string) string
	// Reading returns a tag's Reading once it is loaded, nil before.
	Reading func(tag string) *extractor.Reading
	// RoomReading is what room id reads (rooms.Room.Reading): "" for the
	// first reading, rooms.ReadingVolume for the volume manager's, whose
	// worksheet (volume.go) its notes and hand-in are then; nil means "".
	RoomReading func(id string) string
	// VolumeReading returns a tag's second reading once it is loaded, nil
	// before (and then starts loading it); nil: no room reads it.
	VolumeReading func(tag string) *volume.Reading
	// Line looks up a stored line of a feed's journal, what a pin names
	// (feeds.Service.Line); nil: nothing can be pinned.
	Line LineFunc
	// Chain looks up a volume's chain of a feed's journal, what a chain
	// pin names (feeds.Service.Chain); nil: no chain can be pinned.
	Chain ChainFunc
	// SameOrigin reports whether a browser sent r from this site's pages.
	SameOrigin func(r *http.Request) bool
	// StoreProblem says why notes cannot be stored now (the disk is full),
	// "" when they can; nil means they always can.
	StoreProblem func() string
	// Identify names the client a request counts against in every per-client limit
	// (clients.Identify.Client, one for the whole server); nil means
	// clients.Identify{}.Client: the connection's address.
	Identify func(r *http.Request) string
	// Sockets caps the event streams one client holds open, together with
	// its feed and room sockets, and writes them (clients.Events: pings,
	// a deadline on each write); nil means a cap of the notes' own with
	// clients' defaults.
	Sockets *clients.Sockets
	// StreamsPerRoom caps the event streams open on one room; 0 means
	// DefaultStreamsPerRoom.
	StreamsPerRoom int
	// RenderRate and RenderBurst are the milliseconds of rendering a
	// client's own notes a second, and at once; 0 means 100 and 5,000.
	RenderRate  float64
	RenderBurst int
	// WriteRate and WriteBurst are the writes one client may make to one
	// room's notes a second, and at once; 0 means 8 and 40.
	WriteRate  float64
	WriteBurst int
	// RoomCheck is how often an open event stream asks whether its room
	// still lives; 0 means every 5 s.
	RoomCheck time.Duration
	// Quiz reports whether r, for room ("" for a reader's own notes), is
	// answered in quiz mode: checks that say yes or no, at most
	// ChecksPerMinute verdicts a client, and a hand-in whose headings name
	// no element type and no set. nil means never.
	Quiz func(r *http.Request, room string) bool
	// ChecksPerMinute is the verdicts one client gets a minute in quiz
	// mode; 0 means ChecksPerMinute.
	ChecksPerMinute int
	Logger          *slog.Logger
}

// Write limits: per room and client address.
const (
	writeRate  = 8  // writes a second, after a burst of writeBurst
	writeBurst = 40 // a paste, a conflict resolved, a flurry of typing
	maxBody    = 32 << 10
)

// DefaultStreamsPerRoom is HTTPConfig.StreamsPerRoom's default: a full
// room's readers (32 by default) with a few tabs each.
const DefaultStreamsPerRoom = 128

// expiredMsg is what an open page of an expired room says.
const expiredMsg = "This room has ended; notes are read-only. They are gone from the server: download the worksheet to keep what this page shows."

// Handlers serves the routes above.
type Handlers struct {
	cfg    HTTPConfig
	writes *rooms.KeyLimiter
	// renders limits the milliseconds spent rendering one client's own
	// notes.
	renders *rooms.KeyLimiter
	// gate hands out the slots readers' own notes are rendered in.
	gate   *renderGate
	purged sync.Map // room ids whose notes were purged after they expired

	// streams counts the event streams open on each room.
	streamsMu sync.Mutex
	streams   map[string]int
	// events is each version of a note as pages at one tag show it (its
	// view, its event's bytes), rendered once for all of them.
	events *renderCache
	// checks bounds the verdicts each client gets in quiz mode (quiz.go).
	checks *checkBudget
}

// NewHandlers returns the handlers.
func NewHandlers(cfg HTTPConfig) *Handlers {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.RoomCheck <= 0 {
		cfg.RoomCheck = 5 * time.Second
	}
	if cfg.Identify == nil {
		cfg.Identify = clients.Identify{}.Client
	}
	if cfg.Sockets == nil {
		cfg.Sockets = clients.NewSockets(0, 0)
	}
	if cfg.StreamsPerRoom <= 0 {
		cfg.StreamsPerRoom = DefaultStreamsPerRoom
	}
	cfg.WriteRate, cfg.WriteBurst = cmp.Or(cfg.WriteRate, writeRate), cmp.Or(cfg.WriteBurst, writeBurst)
	cfg.RenderRate, cfg.RenderBurst = cmp.Or(cfg.RenderRate, renderMsRate), cmp.Or(cfg.RenderBurst, renderMsBurst)
	return &Handlers{cfg: cfg, writes: rooms.NewKeyLimiter(cfg.WriteRate, float64(cfg.WriteBurst), 10000),
		renders: rooms.NewKeyLimiter(cfg.RenderRate, float64(cfg.RenderBurst), 10000),
		gate:    newRenderGate(rendersAtOnce), streams: map[string]int{}, events: newRenderCache(512),
		checks: newCheckBudget(cmp.Or(cfg.ChecksPerMinute, ChecksPerMinute))}
}

// storeProblem is HTTPConfig.StoreProblem's answer, "" without one.
func (h *Handlers) storeProblem() string {
	if h.cfg.StoreProblem == nil {
		return ""
	}
	return h.cfg.StoreProblem()
}

// enterRoom counts one more event stream on room, if it has room for it.
func (h *Handlers) enterRoom(room string) bool {
	h.streamsMu.Lock()
	defer h.streamsMu.Unlock()
	if h.streams[room] >= h.cfg.StreamsPerRoom {
		return false
	}
	h.streams[room]++
	return true
}

func (h *Handlers) leaveRoom(room string) {
	h.streamsMu.Lock()
	defer h.streamsMu.Unlock()
	if h.streams[room]--; h.streams[room] <= 0 {
		delete(h.streams, room)
	}
}

// Expired purges a room's notes once it is gone; the server calls it when
// a room expires, and the handlers when they meet an expired room.
func (h *Handlers) Expired(id string) {
	h.cfg.Store.End(id) // the pages still open turn read-only
	if _, done := h.purged.LoadOrStore(id, true); done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.cfg.Store.DeleteRoom(ctx, id); err != nil {
		h.cfg.Logger.Warn("annotations: purge an expired room's notes", "room", id[:min(6, len(id))]+"…", "err", err)
		h.purged.Delete(id)
	}
}

// jsonError answers code with msg, which says what to do next, as the
// notes' routes answer: {"error": msg} (httperr.JSON).
func jsonError(w http.ResponseWriter, code int, msg string) {
	httperr.JSON(w, httperr.New(code, msg))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

// room resolves {id} and the tag the views are for (?tag=, else the
// room's); it answers the request itself when it cannot. A write does not
// wait for the tag's Reading (optional): its view then has no checks.
func (h *Handlers) room(w http.ResponseWriter, r *http.Request, optional ...bool) (id string, reading *extractor.Reading, ok bool) {
	id = chi.URLParam(r, "id")
	tag, err := h.cfg.Room(id)
	if errors.Is(err, ErrRoomEnded) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			jsonError(w, http.StatusForbidden, "this room was ended: its notes are read-only; download the worksheet to keep them")
			return "", nil, false
		}
		err = nil
	}
	switch {
	case errors.Is(err, ErrRoomExpired):
		go h.Expired(id)
		jsonError(w, http.StatusGone, "this room expired: its notes are read-only on pages still open, and gone from the server; download the worksheet you have, or start a new pair session")
		return "", nil, false
	case err != nil:
		jsonError(w, http.StatusNotFound, "no such room")
		return "", nil, false
	}
	if t := r.URL.Query().Get("tag"); t != "" {
		if extractor.CheckTag(t) != nil {
			jsonError(w, http.StatusBadRequest, "tag: not a Kubernetes tag")
			return "", nil, false
		}
		tag = t
	}
	reading = h.cfg.Reading(tag)
	if reading == nil && len(optional) == 0 {
		w.Header().Set("Retry-After", "2")
		jsonError(w, http.StatusServiceUnavailable, "the source at "+tag+" is still being fetched: try again in a moment")
		return "", nil, false
	}
	return id, reading, true
}

// List serves a room's notes.
func (h *Handlers) List() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, reading, ok := h.room(w, r)
		if !ok {
			return
		}
		if vr, ok := h.volumeRoom(w, id, reading.Tag); vr != nil {
			writeJSON(w, http.StatusOK, map[string]any{"views": VolumeViews(vr, h.cfg.Store.Notes(id), h.quiz(r, id))})
			return
		} else if !ok {
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"views": views(reading, h.cfg.Store.Notes(id), h.quiz(r, id))})
	})
}

// ForbiddenError refuses a write to a room for who sent it; Error says
// what to do instead.
type ForbiddenError struct{ Msg string }

func (e *ForbiddenError) Error() string { return e.Msg }

// LockedError refuses a write to a room that handed in (423 Locked);
// Error says when, and who may reopen it.
type LockedError struct{ Msg string }

func (e *LockedError) Error() string { return e.Msg }

// author is the name a write to room id from r is signed with, or false
// when it answered why r may not write there.
func (h *Handlers) author(w http.ResponseWriter, r *http.Request, id string) (string, bool) {
	if h.cfg.Author == nil {
		return "anonymous", true
	}
	name, err := h.cfg.Author(r, id)
	var f *ForbiddenError
	var l *LockedError
	switch {
	case errors.As(err, &f):
		jsonError(w, http.StatusForbidden, f.Msg)
		return "", false
	case errors.As(err, &l):
		jsonError(w, http.StatusLocked, l.Msg)
		return "", false
	case err != nil:
		jsonError(w, http.StatusServiceUnavailable, "could not tell who you are in this room: "+err.Error()+"; try again")
		return "", false
	}
	return name, true
}

// putBody is a write from a page. (An "author" a page sends is not read.)
type putBody struct {
	Text  string `json:"text"`
	Rev   uint64 `json:"rev"`
	Color int    `json:"color"`
	// Quote names the lines a new comment is on, at the page's tag; the
	// server quotes them from the source, never from the client.
	Quote *struct {
		Tag   string `json:"tag"`
		Start int    `json:"start"`
		End   int    `json:"end"`
	} `json:"quote,omitempty"`
}

// quote makes a comment's quote from the source at the tag the page shows.
func (h *Handlers) quote(b *putBody) (*anchor.Quote, error) {
	if b.Quote == nil {
		return nil, nil
	}
	if extractor.CheckTag(b.Quote.Tag) != nil {
		return nil, fmt.Errorf("%w: the quote's tag", ErrInvalid)
	}
	r := h.cfg.Reading(b.Quote.Tag)
	if r == nil {
		return nil, fmt.Errorf("%w: the source at %s is not loaded", ErrInvalid, b.Quote.Tag)
	}
	q, err := anchor.New(r, b.Quote.Start, b.Quote.End)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return &q, nil
}

// Put writes one note, compare-and-set.
func (h *Handlers) Put() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.SameOrigin != nil && !h.cfg.SameOrigin(r) {
			jsonError(w, http.StatusForbidden, "cross-site write refused")
			return
		}
		// In quiz mode a write waits for the tag's Reading: its verdicts
		// are counted before it is stored, and shown once it is.
		quiz := h.quiz(r, chi.URLParam(r, "id"))
		optional := []bool{true}
		if quiz {
			optional = nil
		}
		id, reading, ok := h.room(w, r, optional...)
		if !ok {
			return
		}
		author, ok := h.author(w, r, id)
		if !ok {
			return
		}
		if !h.admitWrite(w, r, id) {
			return
		}
		var b putBody
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody)).Decode(&b); err != nil {
			jsonError(w, http.StatusBadRequest, "the note is not JSON of the expected shape, or over 32 KB")
			return
		}
		q, err := h.quote(&b)
		if err != nil {
			jsonError(w, http.StatusBadRequest, err.Error())
			return
		}
		if msg := h.otherReading(id, chi.URLParam(r, "note")); msg != "" {
			jsonError(w, http.StatusBadRequest, msg)
			return
		}
		if note := chi.URLParam(r, "note"); Kind(note) == "pin" {
			// A pin's text is the journal's line, never the request's.
			text, code, msg := h.pinFor(r.Context(), id, note, b.Text)
			if code != 0 {
				jsonError(w, code, msg)
				return
			}
			b.Text = text
		}
		if !h.spendChecks(w, r, id, reading, []Note{{ID: chi.URLParam(r, "note"), Text: CleanText(b.Text)}}) {
			return
		}
		n, err := h.cfg.Store.Put(r.Context(), id, Note{ID: chi.URLParam(r, "note"), Text: b.Text, Author: author, Color: b.Color, Quote: q}, b.Rev)
		h.answerPut(w, r, id, reading, n, err, quiz)
	})
}

// admitWrite reports whether a write to room id from r may go on: within
// its reader's write rate and render budget, and while the store takes
// writes; when not, it has answered why.
func (h *Handlers) admitWrite(w http.ResponseWriter, r *http.Request, id string) bool {
	switch {
	case !h.writes.Allow(id+" "+h.cfg.Identify(r), time.Now()):
		w.Header().Set("Retry-After", "2")
		jsonError(w, http.StatusTooManyRequests, fmt.Sprintf("too many changes at once (at most %g a second): your text is kept, and sent again in a moment", h.cfg.WriteRate))
	case !h.renders.Allow(h.cfg.Identify(r), time.Now()):
		w.Header().Set("Retry-After", "2")
		jsonError(w, http.StatusTooManyRequests, "your notes have taken their share of the server's time to show: your text is kept, and sent again in a moment")
	case h.storeProblem() != "":
		h.cannotStore(w)
	default:
		return true
	}
	return false
}

// cannotStore answers 507: the store refuses writes (a full disk).
func (h *Handlers) cannotStore(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "10")
	jsonError(w, http.StatusInsufficientStorage, "the server cannot store notes now: "+h.storeProblem()+". Your text is kept in the page; it is sent again once the server can store it")
}

// answerPut answers a write of note n to room id that the store answered
// err: the rendered note, the conflict with the text it crossed, or why it
// was not stored.
func (h *Handlers) answerPut(w http.ResponseWriter, r *http.Request, id string, reading *extractor.Reading, n Note, err error, quiz bool) {
	var c *ConflictError
	switch {
	case errors.As(err, &c):
		writeJSON(w, http.StatusOK, map[string]any{
			"conflict": true,
			"error":    fmt.Sprintf("changed by %s meanwhile", cmp.Or(c.Current.Author, "someone")),
			"current":  h.viewAt(reading, id, c.Current, quiz),
		})
	case errors.Is(err, ErrTooLarge):
		jsonError(w, http.StatusRequestEntityTooLarge, err.Error())
	case errors.Is(err, ErrInvalid):
		jsonError(w, http.StatusBadRequest, err.Error())
	case err != nil && h.storeProblem() != "":
		h.cannotStore(w)
	case err != nil:
		h.cfg.Logger.Error("annotations: put", "err", err)
		jsonError(w, http.StatusInternalServerError, "could not save the note: your text is kept in the page; try again")
	default:
		// The writer is charged the note's rendering, which its page's
		// answer and every page's event share: what a note costs to
		// render is what its text makes it, not its size.
		start := time.Now()
		var v View
		if reading != nil {
			v = h.rendered(reading, id, n, quiz).v
		} else {
			v = ViewAt(nil, n)
		}
		now := time.Now()
		h.renders.Charge(h.cfg.Identify(r), now, renderMs(now.Sub(start)))
		writeJSON(w, http.StatusOK, v)
	}
}

// Delete removes a comment.
func (h *Handlers) Delete() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.cfg.SameOrigin != nil && !h.cfg.SameOrigin(r) {
			jsonError(w, http.StatusForbidden, "cross-site write refused")
			return
		}
		id, reading, ok := h.room(w, r)
		if !ok {
			return
		}
		if _, ok := h.author(w, r, id); !ok {
			return
		}
		if !h.writes.Allow(id+" "+h.cfg.Identify(r), time.Now()) {
			jsonError(w, http.StatusTooManyRequests, "too many changes at once")
			return
		}
		rev, _ := strconv.ParseUint(r.URL.Query().Get("rev"), 10, 64)
		err := h.cfg.Store.Delete(r.Context(), id, chi.URLParam(r, "note"), rev)
		var c *ConflictError
		switch {
		case errors.As(err, &c):
			writeJSON(w, http.StatusOK, map[string]any{"conflict": true, "error": fmt.Sprintf("changed by %s meanwhile", cmp.Or(c.Current.Author, "someone")), "current": h.viewAt(reading, id, c.Current, h.quiz(r, id))})
		case errors.Is(err, ErrInvalid):
			jsonError(w, http.StatusBadRequest, err.Error())
		case err != nil:
			jsonError(w, http.StatusInternalServerError, "could not delete the comment")
		default:
			w.WriteHeader(http.StatusNoContent)
		}
	})
}

// History serves a note's versions.
func (h *Handlers) History() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, _, ok := h.room(w, r)
		if !ok {
			return
		}
		note := chi.URLParam(r, "note")
		if !ValidID(note) {
			jsonError(w, http.StatusNotFound, "no such note")
			return
		}
		vs, err := h.cfg.Store.History(r.Context(), id, note)
		if err != nil {
			jsonError(w, http.StatusInternalServerError, "could not read the history")
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"versions": vs})
	})
}

// Events streams a room's notes to a page: all of them, then each change
// within the watcher's latency (milliseconds), as server-sent events.
func (h *Handlers) Events() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, reading, ok := h.room(w, r)
		if !ok {
			return
		}
		// Each open stream holds a goroutine, buffers and a subscription:
		// one address, or one room, holds a bounded share of them.
		client := h.cfg.Identify(r)
		if !h.cfg.Sockets.Acquire(w, client) {
			return
		}
		defer h.cfg.Sockets.Release(client)
		if !h.enterRoom(id) {
			w.Header().Set("Retry-After", "30")
			jsonError(w, http.StatusTooManyRequests, fmt.Sprintf("this room has %d pages open already: close some tabs", h.cfg.StreamsPerRoom))
			return
		}
		defer h.leaveRoom(id)
		h.stream(w, r, id, reading)
	})
}

// stream sends room id's notes as views at reading's tag: a snapshot, then
// each change, until the page goes, the room ends, the stream falls behind
// (the page then reconnects and gets a fresh snapshot) or a write misses
// its deadline (the page stopped reading: clients.Events).
func (h *Handlers) stream(w http.ResponseWriter, r *http.Request, id string, reading *extractor.Reading) {
	notes, ch, cancel := h.cfg.Store.Subscribe(id)
	defer cancel()
	ev, err := h.cfg.Sockets.Events(w)
	if err != nil {
		return
	}
	defer ev.Close()
	send := func(event string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return ev.Send(event, b)
	}
	// The snapshot's views come from the same renders as the events:
	// a page that connects again renders nothing anew.
	quiz := h.quiz(r, id)
	views := viewsWith(reading, notes, quiz, func(n Note) View { return h.rendered(reading, id, n, quiz).v })
	if send("snapshot", map[string]any{"views": views}) != nil {
		return
	}
	// The room can end with nothing written in it: no note's event
	// would tell this page. Ask now and then.
	check := time.NewTicker(h.cfg.RoomCheck)
	defer check.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-check.C:
			if _, err := h.cfg.Room(id); errors.Is(err, ErrRoomExpired) {
				send("expired", map[string]string{"error": expiredMsg})
				go h.Expired(id)
				return
			}
		case <-ev.Pings():
			if ev.Ping() != nil {
				return
			}
		case n, open := <-ch:
			switch {
			case !open: // fallen behind, or the server closes
				return
			case n.Gone:
				send("expired", map[string]string{"error": expiredMsg})
				return
			}
			// Every page at this tag gets the same bytes: the change is
			// rendered (Markdown, checks, anchoring) once, not per page.
			if ev.Write(h.rendered(reading, id, n, quiz).event()) != nil {
				return
			}
		}
	}
}

// RoomWorksheet is the room's hand-in.
func (h *Handlers) RoomWorksheet() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, reading, ok := h.room(w, r)
		if !ok {
			return
		}
		head := h.roomHead(r.Context(), id, Inline)
		head.Quiz = h.quiz(r, id)
		vr, ok := h.volumeRoom(w, id, reading.Tag)
		if !ok {
			return
		}
		var md []byte
		if vr != nil {
			md = VolumeWorksheet(vr, head, h.cfg.Store.Notes(id))
		} else {
			md = Worksheet(reading, head, h.cfg.Store.Notes(id))
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", "syncloop-worksheet-"+reading.Tag+"-room-"+id[:6]+".md"))
		w.Write(md)
	})
}
