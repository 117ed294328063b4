package classes

// The instructor's writes to a class: ending it, ending one of its rooms,
// its settings (the routes' list is at the top of http.go).

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"
)

// End is POST /classes/{id}/end: the class ends, and every room of it.
// Its hand-ins stay downloadable, and its page says it has ended. Ending
// an ended class ends any room of it still open, and nothing more.
func (h *Handlers) End() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructor(w, r)
		if !ok {
			return
		}
		c, err := h.cfg.Store.Update(r.Context(), c.ID, func(c *Class) error {
			if c.Ended.IsZero() {
				c.Ended = h.cfg.Store.cfg.Now()
			}
			return nil
		})
		if err != nil {
			jsonError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		st := h.cfg.Deps.Rooms.Store()
		n := 0
		for _, room := range st.OfClass(c.ID) {
			if room.Ended {
				continue
			}
			if _, err := st.End(room.ID); err != nil {
				jsonError(w, http.StatusServiceUnavailable, fmt.Sprintf("the class ended, but room %s… did not: %v; end the class again", room.ID[:6], err))
				return
			}
			n++
		}
		h.cfg.Logger.Info("classes: ended", "class", c.ID[:6]+"…", "rooms_ended", n)
		writeJSON(w, http.StatusOK, classJSON(c))
	})
}

// EndRoom is POST /classes/{id}/rooms/{room}/end: the instructor ends one
// room of the class (a stray one, or a pair that is done).
func (h *Handlers) EndRoom() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructor(w, r)
		if !ok {
			return
		}
		st := h.cfg.Deps.Rooms.Store()
		room, err := st.Get(chi.URLParam(r, "room"))
		if err != nil || room.Class != c.ID {
			jsonError(w, http.StatusNotFound, "no such room in this class")
			return
		}
		if !room.Ended {
			if room, err = st.End(room.ID); err != nil {
				jsonError(w, http.StatusServiceUnavailable, err.Error())
				return
			}
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": room.ID, "ended": room.Ended})
	})
}

// Settings is POST /classes/{id}/settings.
func (h *Handlers) Settings() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructor(w, r)
		if !ok {
			return
		}
		var s Settings
		dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			jsonError(w, http.StatusBadRequest, "settings: "+err.Error())
			return
		}
		c, err := h.cfg.Store.Update(r.Context(), c.ID, func(c *Class) error {
			if !c.Ended.IsZero() { // what it was when it ended stays: its hand-ins are read by it
				return ErrEnded
			}
			return s.apply(c, h.maxBudget(*c))
		})
		if errors.Is(err, ErrEnded) {
			jsonError(w, http.StatusGone, ErrEnded.Error()+": its settings are kept as they were when it ended")
			return
		}
		if err != nil {
			jsonError(w, http.StatusBadRequest, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, classJSON(c))
	})
}
