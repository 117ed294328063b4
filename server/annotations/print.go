package annotations

// What a printed worksheet or annotation begins and ends with
// (static/print.js): whose it is, as worksheet.md begins, and the pins, as
// its "Fired" section does, each read again from the journal. Plain text:
// the page sets it as text.
//
//	GET  /rooms/{id}/worksheet.json   the room's
//	POST /k8s/{tag}/worksheet.json    {"notes":[…]}: a reader's own (nothing stored)

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// Paper is the printed hand-in's head and Fired section.
type Paper struct {
	Heading string     `json:"heading"` // worksheet.md's first line
	Title   string     `json:"title"`   // whose it is: which room of which class, or "My notes"
	Readers []string   `json:"readers"`
	Authors []string   `json:"authors"`
	Fired   []PaperPin `json:"fired"`
	Intro   string     `json:"intro"` // what the Fired section is
}

// PaperPin is one pin as the Fired section prints it.
type PaperPin struct {
	Heading string `json:"heading"`        // its case and time, and who pinned it
	Place   string `json:"place"`          // "Line N of the journal, cursor C; …", or why it is not printed
	Line    string `json:"line,omitempty"` // the entry as stored
}

func asTyped(s string) string { return s }

// PaperOf is the paper of notes at r's tag; head's Title is plain text.
func PaperOf(r *extractor.Reading, head Head, notes []Note) Paper {
	vs := make([]View, 0, len(notes))
	for _, n := range notes {
		vs = append(vs, View{Note: n})
	}
	p := Paper{Heading: fmt.Sprintf("syncloop worksheet: (*Kubelet).%s at %s %s", r.Function.Name, r.Module, r.Tag),
		Title: head.Title, Readers: head.Readers, Authors: authorsOf(vs), Fired: []PaperPin{}, Intro: firedIntro}
	if p.Readers == nil {
		p.Readers = []string{}
	}
	for _, fp := range firedPins(vs, head.Journal) {
		p.Fired = append(p.Fired, PaperPin{Heading: fp.heading(asTyped), Place: fp.place(asTyped), Line: fp.line.Raw})
	}
	return p
}

// roomHead is the head of room id's hand-in, its names written by esc:
// which room of which class it is (HTTPConfig.Title), who read in it, and
// the journal its pins are read from.
func (h *Handlers) roomHead(ctx context.Context, id string, esc func(string) string) Head {
	head := Head{Title: "Pair session " + id[:6] + "…"}
	if h.cfg.Title != nil {
		if t := h.cfg.Title(ctx, id, esc); t != "" {
			head.Title = t
		}
	}
	if h.cfg.Readers != nil {
		head.Readers = h.cfg.Readers(id)
	}
	head.Journal = Journal(ctx, h.cfg.Line, id)
	head.Chains = ChainJournal(ctx, h.cfg.Chain, id)
	return head
}

// RoomPaper is the room's printed head and Fired section.
func (h *Handlers) RoomPaper() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, reading, ok := h.room(w, r)
		if !ok {
			return
		}
		p := PaperOf(reading, h.roomHead(r.Context(), id, asTyped), h.cfg.Store.Notes(id))
		if vr, ok := h.volumeRoom(w, id, reading.Tag); !ok {
			return
		} else if vr != nil {
			p.Heading = volumeHeading(vr)
		}
		writeJSON(w, http.StatusOK, p)
	})
}

// LocalPaper is a reader's own printed head and Fired section.
func (h *Handlers) LocalPaper() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reading, notes, ok := h.local(w, r)
		if !ok {
			return
		}
		start := time.Now()
		p := PaperOf(reading, Head{Title: "My notes", Journal: Journal(r.Context(), h.cfg.Line, "")}, notes)
		h.charge(r, start)
		writeJSON(w, http.StatusOK, p)
	})
}
