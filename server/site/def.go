package site

// def.go answers GET /k8s/{tag}/def?sym=SYMBOL: the definition of a module
// symbol the page shows, from the tag's definitions index (extractor.Defs,
// cached beside its Reading), highlighted as the main code is, each module
// symbol in it a control again (static/peek.js opens them in place).

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
)

// defView is one definition as /def answers it.
type defView struct {
	Sym      string    `json:"sym"`
	Short    string    `json:"short"` // without the package path
	Kind     string    `json:"kind"`
	File     string    `json:"file"`
	Start    int       `json:"start"`
	End      int       `json:"end"`
	Upstream string    `json:"upstream"`
	HTML     string    `json:"html"`
	Impls    []defView `json:"impls,omitempty"` // an interface method's implementations
}

// withDefs returns r with its definitions index: r itself when it has one
// (it was just extracted), else a copy with the cached index, else r.
func (s *Site) withDefs(r *extractor.Reading, tag string) *extractor.Reading {
	if r.Defs != nil {
		return r
	}
	d, ok := extractor.CachedDefs(s.options(tag))
	if !ok {
		return r
	}
	c := *r
	c.Defs = d
	return &c
}

// Def serves a definition as JSON.
func (s *Site) Def() http.Handler {
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
		st, no := s.fetch(s.client(r), tag)
		if no != nil {
			w.Header().Set("Retry-After", strconv.Itoa(int(no.retry.Seconds())))
			defError(w, no.status, no.message+" "+no.advice)
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), s.wait)
		defer cancel()
		select {
		case <-st.done:
		case <-ctx.Done():
			w.Header().Set("Retry-After", "2")
			defError(w, http.StatusServiceUnavailable, tag+" is still being fetched; try again in a moment")
			return
		}
		if st.err != nil {
			defError(w, http.StatusNotFound, st.err.Error())
			return
		}
		if s.quiz(r) && declaresASet(st.reading, sym) {
			defError(w, http.StatusForbidden, "in quiz mode the two sets' declarations are yours to find: read the source the page shows, and write each set's file:line in the worksheet")
			return
		}
		body, status := s.defBody(st, sym)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(status)
		w.Write(body)
	})
}

// declaresASet reports whether sym's definition is one of the two sets'
// declarations the worksheet asks for (Reading.TwoSets): the answer a
// quiz's reader is to find, not to look up by name.
func declaresASet(r *extractor.Reading, sym string) bool {
	if r.Defs == nil {
		return false
	}
	d, ok := r.Defs.Decls[sym]
	if !ok {
		return false
	}
	for _, set := range r.TwoSets {
		if set.File == d.File && d.Start <= set.Line && set.Line <= d.End {
			return true
		}
	}
	return false
}

// defBody renders sym's definition at st's tag once and keeps it.
func (s *Site) defBody(st *tagState, sym string) ([]byte, int) {
	if b, ok := st.defs.Load(sym); ok {
		return b.([]byte), http.StatusOK
	}
	defs := st.reading.Defs
	if defs == nil {
		return errorJSON(fmt.Sprintf("no definitions index for %s: its Reading was cached by an older syncloop; remove the cache to extract it anew", st.tag)), http.StatusNotFound
	}
	d, ok := defs.Decls[sym]
	if !ok {
		msg := fmt.Sprintf("%s is not found at %s", sym, st.tag)
		if defs.HasDecl(sym) {
			msg = fmt.Sprintf("%s is declared at %s but is not among the definitions the loop reaches", sym, st.tag)
		}
		return errorJSON(msg), http.StatusNotFound
	}
	b, status := declJSON(st.tag, d, func(sym string) (*extractor.Decl, bool) {
		id, ok := defs.Decls[sym]
		return id, ok
	})
	if status == http.StatusOK {
		st.defs.Store(sym, b)
	}
	return b, status
}

// declJSON is a definition as /k8s/{tag}/def answers it: d highlighted at
// tag, with each implementation of its (an interface method's) that decl
// finds.
func declJSON(tag string, d *extractor.Decl, decl func(sym string) (*extractor.Decl, bool)) ([]byte, int) {
	v, err := renderDecl(tag, d)
	if err != nil {
		return errorJSON(err.Error()), http.StatusInternalServerError
	}
	for _, is := range d.Impls {
		if id, ok := decl(is); ok {
			iv, err := renderDecl(tag, id)
			if err != nil {
				return errorJSON(err.Error()), http.StatusInternalServerError
			}
			v.Impls = append(v.Impls, iv)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return errorJSON(err.Error()), http.StatusInternalServerError
	}
	return b, http.StatusOK
}

// renderDecl highlights a declaration: each line links its number to the
// line upstream (the page has its own L… ids; a peek must not repeat them).
func renderDecl(tag string, d *extractor.Decl) (defView, error) {
	h, err := highlightRefs(d.Text, d.Start, d.Refs)
	if err != nil {
		return defView{}, err
	}
	var b strings.Builder
	b.WriteString(`<pre class="chroma code peek-code">`)
	for n := d.Start; n <= h.last(); n++ {
		fmt.Fprintf(&b, `<span class="line" data-line="%d"><a class="ln" href="%s" title="line %d upstream">%d</a><span class="cl">%s`+"\n"+`</span></span>`,
			n, extractor.UpstreamURL(tag, d.File, n, n), n, n, h.lines[n-h.first])
	}
	b.WriteString(`</pre>`)
	return defView{
		Sym: d.Sym, Short: extractor.ShortSymbol(d.Sym), Kind: d.Kind, File: d.File, Start: d.Start, End: d.End,
		Upstream: extractor.UpstreamURL(tag, d.File, d.Start, d.End), HTML: b.String(),
	}, nil
}

func errorJSON(msg string) []byte {
	b, _ := json.Marshal(map[string]string{"error": msg})
	return b
}

func defError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(errorJSON(msg))
}
