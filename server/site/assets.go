package site

// Static files: the embedded static/ directory plus the generated chroma
// stylesheet, each held as a page (bytes, gzip, ETag). Pages link them as
// /static/NAME?v=HASH; a request naming the current hash may cache the file
// for a year, any other must revalidate.

import (
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/static"
)

type assets struct {
	files map[string]*asset
}

type asset struct {
	page      *page // Cache-Control: no-cache
	immutable *page // the same bytes, cacheable for a year
	version   string
}

// sharedAssets are the static files, read and compressed once a process:
// they are the binary's own (embedded) and never change, so every Site
// serves the same ones. (A test binary opens a hundred Sites: gzip of the
// assets was 4 % of the server package's CPU.)
var sharedAssets = sync.OnceValues(newAssets)

func newAssets() (*assets, error) {
	a := &assets{files: map[string]*asset{}}
	add := func(name string, body []byte) {
		ctype := mime.TypeByExtension(path.Ext(name))
		switch path.Ext(name) {
		case ".js":
			ctype = "text/javascript; charset=utf-8"
		case ".css":
			ctype = "text/css; charset=utf-8"
		}
		p := newPage(ctype, body, "no-cache")
		a.files[name] = &asset{page: p, immutable: p.withCache("public, max-age=31536000, immutable"), version: strings.Trim(p.etag, `"`)[:10]}
	}
	err := fs.WalkDir(static.FS, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(static.FS, name)
		if err != nil {
			return err
		}
		add(name, body)
		return nil
	})
	if err != nil {
		return nil, err
	}
	css, err := chromaCSS()
	if err != nil {
		return nil, err
	}
	add("chroma.css", css)
	return a, nil
}

// url is the versioned URL of a static file, for templates.
func (a *assets) url(name string) string {
	f, ok := a.files[name]
	if !ok {
		return "/static/" + name
	}
	return "/static/" + name + "?v=" + f.version
}

// handler serves /static/*. Names are looked up, never joined to a file
// system path, so there is nothing to traverse; ".." is refused outright.
func (a *assets) handler(notFound http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := chi.URLParam(r, "*")
		if strings.Contains(name, "..") || strings.Contains(name, "\\") {
			httperr.Text(w, httperr.New(http.StatusBadRequest, "bad path"))
			return
		}
		f, ok := a.files[name]
		if !ok {
			notFound.ServeHTTP(w, r)
			return
		}
		if v := r.URL.Query().Get("v"); v != "" && v == f.version {
			f.immutable.ServeHTTP(w, r)
			return
		}
		f.page.ServeHTTP(w, r)
	})
}
