package site

// GET /k8s/{tag}/volume-manager/def?sym=SYMBOL: a definition the second
// reading's page opens in place (static/peek.js, told the address by the
// page's data-def-base), from the reading's own definitions index
// (volume.Reading.Decls), answered as the first reading's /def is.

import (
	"context"
	"fmt"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
)

// VolumeDef serves a definition of the second reading as JSON.
func (s *Site) VolumeDef() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := chi.URLParam(r, "tag")
		sym := r.URL.Query().Get("sym")
		if err := extractor.CheckTag(tag); err != nil {
			defError(w, http.StatusNotFound, err.Error())
			return
		}
		if sym == "" || len(sym) > 300 {
			defError(w, http.StatusBadRequest, "give the symbol as ?sym=pkg/path.(*Type).Method")
			return
		}
		st := s.volume(tag)
		if _, cached := volume.Cached(s.options(tag)); st == nil && cached {
			st = s.startVolume(tag) // read before this server started: no fetch
		}
		if st == nil {
			defError(w, http.StatusNotFound, "the volume manager at "+tag+" is not read here yet: open /k8s/"+tag+"/volume-manager first")
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.wait)
		defer cancel()
		select {
		case <-st.done:
		case <-ctx.Done():
			w.Header().Set("Retry-After", "2")
			defError(w, http.StatusServiceUnavailable, "the volume manager at "+tag+" is still being read; try again in a moment")
			return
		}
		if st.err != nil {
			defError(w, http.StatusNotFound, st.err.Error())
			return
		}
		body, status := volumeDefBody(st, tag, sym)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(status)
		w.Write(body)
	})
}

// volumeDefBody renders sym's definition, and its implementations', once.
func volumeDefBody(st *volState, tag, sym string) ([]byte, int) {
	if b, ok := st.defs.Load(sym); ok {
		return b.([]byte), http.StatusOK
	}
	d, ok := st.reading.DeclOf(sym)
	if !ok {
		return errorJSON(fmt.Sprintf("%s is not among the volume manager's definitions at %s", sym, tag)), http.StatusNotFound
	}
	b, status := declJSON(tag, d, st.reading.DeclOf)
	if status == http.StatusOK {
		st.defs.Store(sym, b)
	}
	return b, status
}
