package classes

// The exercise's checklist as a room's readers see it: the same checks
// the instructor's grid shows (labcheck, read from the room's own stored
// journal, never the demo), for the students while they work.

import (
	"cmp"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/labcheck"
	"github.com/syncloop/syncloop/server/rooms"
)

// Checklist is GET /rooms/{id}/checks.json: the exercise's step 3 checked
// on room id's journal (labcheck.Result), for its class's pod, or
// probe-me in a room of no class. It shows what the room's live pane
// already shows its readers, so it asks for no key.
func (h *Handlers) Checklist() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := h.cfg.Deps
		id := chi.URLParam(r, "id")
		if d.Rooms == nil || d.LabCheck == nil || !rooms.ValidID(id) {
			jsonError(w, http.StatusNotFound, "no such room")
			return
		}
		room, err := d.Rooms.Get(id)
		if err != nil {
			jsonError(w, http.StatusNotFound, "no such room: it has expired, or its link is wrong")
			return
		}
		pod := labcheck.DefaultPod
		if room.Class != "" {
			if c, err := h.cfg.Store.Get(r.Context(), room.Class); err == nil {
				pod = cmp.Or(c.Pod, pod)
			}
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, d.LabCheck(r.Context(), rooms.FeedPrefix+room.ID, room.Tag, pod))
	})
}
