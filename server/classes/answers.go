package classes

// One question across every room of the class, side by side, with who
// wrote each answer: what the grid's column header opens.
//
//	GET /classes/{id}/items/{item}.json   (the instructor's key) Answers

import (
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
)

// Answer is one room's answer to an item.
type Answer struct {
	Room     string    `json:"room"`
	N        int       `json:"n"`
	Text     string    `json:"text"` // as the reader wrote it (the page shows it as text)
	By       string    `json:"by"`
	At       time.Time `json:"at,omitzero"`
	State    string    `json:"state"`
	Warnings []string  `json:"warnings"`
}

// Answers is what GET /classes/{id}/items/{item}.json answers.
type Answers struct {
	Item    Item     `json:"item"`
	Answers []Answer `json:"answers"`
}

// answers is item of every room of class c, in the rooms' order.
func (d Deps) answers(c Class, item Item) Answers {
	out := Answers{Item: item, Answers: []Answer{}}
	for i, r := range d.Rooms.Store().OfClass(c.ID) {
		a := Answer{Room: r.ID, N: i + 1, State: StateEmpty, Warnings: []string{}}
		for _, n := range d.Notes(r.ID) {
			if n.ID != item.ID {
				continue
			}
			a.Text, a.By, a.At = strings.TrimSpace(n.Text), n.Author, n.At
			var warn []string
			if sh, ok := d.sheetOf(r.Reading, r.Tag); ok {
				a.State, warn = sh.state(n)
			} else {
				a.State = StateWritten
			}
			if warn != nil {
				a.Warnings = warn
			}
		}
		out.Answers = append(out.Answers, a)
	}
	return out
}

// ItemAnswers is GET /classes/{id}/items/{item}.json.
func (h *Handlers) ItemAnswers() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructorAny(w, r)
		if !ok {
			return
		}
		sh, loaded := h.cfg.Deps.sheetOf(c.Reading, c.Tag)
		if !loaded {
			h.cfg.Site.LoadTag(c.Tag)
			w.Header().Set("Retry-After", "5")
			jsonError(w, http.StatusServiceUnavailable, errNoReading.Error())
			return
		}
		id := strings.TrimSuffix(chi.URLParam(r, "item"), ".json")
		for _, it := range sh.items {
			if it.ID == id {
				writeJSON(w, http.StatusOK, h.cfg.Deps.answers(c, it))
				return
			}
		}
		jsonError(w, http.StatusNotFound, "no such worksheet item at "+c.Tag+": progress.json lists the items")
	})
}
