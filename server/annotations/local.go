package annotations

// A reader's own notes, with no room: they stay in the browser, which
// sends them to be rendered, checked and anchored (POST /k8s/{tag}/notes)
// or handed in (POST /k8s/{tag}/worksheet.md), with nothing stored. Each
// client's renders are bounded, at once and by what they cost.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations/anchor"
)

// Limits of a reader's own notes sent to be rendered (POST /k8s/{tag}/notes
// and worksheet.md): the same as a room's, and a rate per client in
// milliseconds of rendering. What a body costs is not its size: Markdown
// such as 8 KB of "[a](" takes goldmark ~100 ms, ordinary notes of the
// same size ~1 ms. So a client is charged what its request took, and
// refused while in debt. A page sends all its notes 200 ms after typing
// stops: ordinary notes, even a full set, cost a few ms of the 100 a
// second a client has.
const (
	// maxLocalBody is 400 notes of 8 KB in a room's 256 KB, with room for
	// the JSON around them (ids, quotes, times, escapes).
	maxLocalBody  = MaxRoomBytes + MaxRoomNotes*1024
	renderMsRate  = 100  // ms of rendering a second per client (a tenth of a core)
	renderMsBurst = 5000 // a full set of the costliest notes, once
	// A client's render is charged when it is done: one at a time per
	// client, so that it cannot start many on one allowance, and a few at a
	// time in all, so that many clients cannot take every core; the slots
	// go to the clients waiting in turn (gate.go).
	rendersAtOnce = 4
)

// localBody is a reader's own notes, sent to be rendered or handed in.
type localBody struct {
	Notes []struct {
		ID     string `json:"id"`
		Text   string `json:"text"`
		Author string `json:"author"`
		// A local comment keeps the quote made when it was written.
		Quote   *anchor.Quote `json:"quote,omitempty"`
		At      time.Time     `json:"at"`
		Created time.Time     `json:"created"`
	} `json:"notes"`
}

// local decodes and checks a reader's own notes for the tag in the URL.
// When it returns true, the caller renders them and then calls charge.
func (h *Handlers) local(w http.ResponseWriter, r *http.Request) (*extractor.Reading, []Note, bool) {
	if h.cfg.SameOrigin != nil && !h.cfg.SameOrigin(r) {
		jsonError(w, http.StatusForbidden, "cross-site request refused")
		return nil, nil, false
	}
	tag := chi.URLParam(r, "tag")
	if extractor.CheckTag(tag) != nil {
		jsonError(w, http.StatusNotFound, "not a Kubernetes tag")
		return nil, nil, false
	}
	reading := h.cfg.Reading(tag)
	if reading == nil {
		jsonError(w, http.StatusServiceUnavailable, "the source at "+tag+" is still being fetched: try again in a moment")
		return nil, nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLocalBody))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		jsonError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the notes are over %d KB together: a reader's notes hold what a room's do (%d notes, %d KB each, %d KB together)", maxLocalBody>>10, MaxRoomNotes, MaxNoteBytes>>10, MaxRoomBytes>>10))
		return nil, nil, false
	}
	if err != nil {
		jsonError(w, http.StatusBadRequest, "could not read the notes")
		return nil, nil, false
	}
	if !h.renders.Allow(h.cfg.Identify(r), time.Now()) {
		w.Header().Set("Retry-After", "2")
		jsonError(w, http.StatusTooManyRequests, "too many notes sent to be shown at once: they are kept in this browser, and shown again in a moment")
		return nil, nil, false
	}
	var b localBody
	if err := json.Unmarshal(body, &b); err != nil {
		jsonError(w, http.StatusBadRequest, "the notes are not JSON of the expected shape")
		return nil, nil, false
	}
	if len(b.Notes) > MaxRoomNotes {
		jsonError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("%d notes: a reader's notes are at most %d", len(b.Notes), MaxRoomNotes))
		return nil, nil, false
	}
	var notes []Note
	total := 0
	for _, n := range b.Notes {
		if !ValidID(n.ID) {
			continue
		}
		note := Note{ID: n.ID, Text: CleanText(n.Text), Rev: 1, At: n.At, Created: n.Created}
		if len(note.Text) > MaxNoteBytes {
			jsonError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("note %s is %d KB: a note holds at most %d KB", n.ID, len(note.Text)>>10, MaxNoteBytes>>10))
			return nil, nil, false
		}
		note.Author, _ = CleanName(n.Author)
		if Kind(n.ID) == "comment" {
			if n.Quote == nil || n.Quote.Valid() != nil {
				continue
			}
			note.Quote = n.Quote
		}
		if total += size(note); total > MaxRoomBytes {
			jsonError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the notes are over %d KB together", MaxRoomBytes>>10))
			return nil, nil, false
		}
		notes = append(notes, note)
	}
	// The caller renders, then calls charge.
	if ok, waited := h.gate.enter(r.Context(), h.cfg.Identify(r), renderWait); !ok {
		w.Header().Set("Retry-After", "1")
		if !waited {
			jsonError(w, http.StatusTooManyRequests, "your notes are being shown already: they are kept in this browser, and shown again in a moment")
			return nil, nil, false
		}
		jsonError(w, http.StatusServiceUnavailable, "busy showing other notes: yours are kept in this browser, and shown again in a moment")
		return nil, nil, false
	}
	return reading, notes, true
}

// Quote makes the quote of lines at a tag, for a reader's own comment:
//
//	GET /k8s/{tag}/quote?start=N&end=M
func (h *Handlers) Quote() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := chi.URLParam(r, "tag")
		reading := h.cfg.Reading(tag)
		if extractor.CheckTag(tag) != nil || reading == nil {
			jsonError(w, http.StatusNotFound, "the source at this tag is not loaded")
			return
		}
		start, _ := strconv.Atoi(r.URL.Query().Get("start"))
		end, _ := strconv.Atoi(r.URL.Query().Get("end"))
		q, err := anchor.New(reading, start, end)
		if err != nil {
			jsonError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, q)
	})
}

// LocalViews renders a reader's own notes at the tag.
func (h *Handlers) LocalViews() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reading, notes, ok := h.local(w, r)
		if !ok {
			return
		}
		start := time.Now()
		if !h.spendChecks(w, r, "", reading, notes) {
			h.charge(r, start)
			return
		}
		vs := views(reading, notes, h.quiz(r, ""))
		h.charge(r, start)
		writeJSON(w, http.StatusOK, map[string]any{"views": vs})
	})
}

// LocalWorksheet is a reader's own hand-in at the tag.
func (h *Handlers) LocalWorksheet() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reading, notes, ok := h.local(w, r)
		if !ok {
			return
		}
		start := time.Now()
		if !h.spendChecks(w, r, "", reading, notes) {
			h.charge(r, start)
			return
		}
		md := Worksheet(reading, Head{Title: "My notes", Journal: Journal(r.Context(), h.cfg.Line, ""), Quiz: h.quiz(r, "")}, notes)
		h.charge(r, start)
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(md)
	})
}

// renderMs is what a render that took d is charged: its milliseconds,
// rounded up, so that no render is free however fast.
func renderMs(d time.Duration) int {
	return int((d + time.Millisecond - 1) / time.Millisecond)
}

// charge ends a render that began at start, and takes what it cost from
// the client's allowance.
func (h *Handlers) charge(r *http.Request, start time.Time) {
	client := h.cfg.Identify(r)
	now := time.Now()
	h.renders.Charge(client, now, renderMs(now.Sub(start)))
	h.gate.leave(client)
}
