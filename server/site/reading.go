package site

// The reading pages of one tag, and what a reader sees while a tag is being
// fetched or when it cannot be.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/templates"
)

// The pages every tag has.
const (
	pageIndex      = "index"
	pagePodWorkers = "pod-workers"
	pageJSON       = "reading.json"
	pageWorksheet  = "worksheet.md" // the answer key's first address, kept for links to it
	pageAnswerKey  = "answer-key.md"
)

// pageData is what every HTML template gets.
type pageData struct {
	Title      string
	Page       string // pageIndex, pagePodWorkers, or "" for status pages
	Tag        string
	Tags       []string // tags readable without a fetch, for the switcher
	DefaultTag string
	V          *readingView
	Room       *Room        // set on a room's page (RoomPage)
	Compare    *compareView // the compare page (compare.go)
	History    *historyView // a case's history page (compare.go)
	Volume     *volumeView  // the second reading's page (volume_page.go)
	// VolumeCompare and VolumeHistory: the second reading's compare and
	// history (volume_compare.go, volume_history.go).
	VolumeCompare *volumeCompareView
	VolumeHistory *volumeHistoryView
	Class         any // a class's page (package classes: *classes.PageData)
	// Quiz: the request is answered in quiz mode (Config.Quiz): the site's
	// notes and answers are left out of this page and of every page of
	// the site it links to.
	Quiz bool

	// status pages
	Refresh bool   // reload in a moment: the tag is being fetched
	Heading string // what went wrong, or what is happening
	Message string // the error, as the extractor said it
	Advice  string // what to do next
}

func parseTemplates(a *assets) (*template.Template, error) {
	funcs := template.FuncMap{
		"asset":      a.url,
		"upstream":   extractor.UpstreamURL,
		"join":       strings.Join,
		"inc":        func(n int) int { return n + 1 },
		"diffLines":  diffLines,
		"compareURL": compareURL,
		"arrivalURL": arrivalURL,
		"dec":        func(n int) int { return n - 1 },
		"deref":      func(b *bool) bool { return b != nil && *b },
		// noteOr is what the volume page's vm-note template shows: the
		// note, or why there is none (hidden by the class, not written).
		"noteOr": func(n noteView, hidden bool, what string) any {
			return struct {
				Note   noteView
				Hidden bool
				What   string
			}{n, hidden, what}
		},
		"compareSuggest": func(tag, def string) string {
			if tag != def {
				return def
			}
			return cmp.Or(diff.PreviousMinor(tag), def)
		},
	}
	t, err := template.New("").Funcs(funcs).ParseFS(templates.FS, "*.html")
	if err != nil {
		return nil, fmt.Errorf("templates: %w", err)
	}
	return t, nil
}

func (s *Site) execute(name string, data pageData) ([]byte, error) {
	var b bytes.Buffer
	if err := s.tmpl.ExecuteTemplate(&b, name, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return b.Bytes(), nil
}

func (s *Site) Root() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/k8s/"+s.cfg.DefaultTag+"/", http.StatusFound)
	})
}

// Switch is the tag switcher's form target.
func (s *Site) Switch() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := strings.TrimSpace(r.URL.Query().Get("tag"))
		if tag == "" {
			tag = s.cfg.DefaultTag
		}
		if !strings.HasPrefix(tag, "v") {
			tag = "v" + tag
		}
		to := "/k8s/" + url.PathEscape(tag) + "/"
		if r.URL.Query().Get("page") == pagePodWorkers {
			to += "pod-workers" // the switcher on pod_workers stays on pod_workers
		}
		http.Redirect(w, r, to, http.StatusSeeOther)
	})
}

func (s *Site) Slash() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/k8s/"+url.PathEscape(chi.URLParam(r, "tag"))+"/", http.StatusMovedPermanently)
	})
}

func (s *Site) NotFound() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.statusPage(w, r, http.StatusNotFound, pageData{
			Heading: "Not found",
			Message: fmt.Sprintf("There is no page at %s.", r.URL.Path),
			Advice:  "The reading starts at the default tag's page.",
		})
	})
}

// statusPage renders a page that is not cached: a fetch under way or an error.
func (s *Site) statusPage(w http.ResponseWriter, r *http.Request, status int, d pageData) {
	d.Title = d.Heading
	d.DefaultTag = s.cfg.DefaultTag
	d.Tags, _ = s.readableTags()
	body, err := s.execute("status.html", d)
	if err != nil {
		s.log.Error("status page", "err", err)
		httperr.Text(w, &httperr.Error{Status: status, Heading: d.Heading, Message: d.Message, Advice: d.Advice, Err: err})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(body)
}

// waitForLoad is how long a request waits for a Load before answering with
// the "being fetched" page: long enough for a Reading read from disk.
const waitForLoad = 400 * time.Millisecond

// TagPage serves one of a tag's pages, from memory once the tag is
// loaded; before that a page that reloads itself, never a hung request.
func (s *Site) TagPage(kind string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := chi.URLParam(r, "tag")
		quiz := s.quiz(r)
		if refused(kind, quiz) {
			s.statusPage(w, r, http.StatusForbidden, pageData{Tag: tag,
				Heading: "This course hides the answer key",
				Message: "This server runs in quiz mode (serve --quiz): the site's own answers to the worksheet, its notes and who writes each channel are not served, so that the worksheet is yours to write.",
				Advice:  "Write your answers in the worksheet at the foot of the reading page (Export ▾ → My worksheet) and download that; your instructor has the answers.",
			})
			return
		}
		if p := s.cachedPage(tag, kind, quiz); p != nil {
			p.ServeHTTP(w, r)
			return
		}
		if err := extractor.CheckTag(tag); err != nil {
			s.loadFailed(w, r, tag, err)
			return
		}
		st, ok := s.loaded(w, r, tag, "")
		if !ok {
			return
		}
		p, err := s.pageFor(st, kind, quiz)
		if err != nil {
			s.log.Error("render", "tag", tag, "page", kind, "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Tag: tag, Heading: "Could not render the page", Message: err.Error()})
			return
		}
		p.ServeHTTP(w, r)
	})
}

// cachedPage is the page of kind at tag, as quiz mode serves it or not,
// when it is rendered and current: the common request, answered without
// what a tag not yet read needs (its check, the client's budget, a wait
// for the load, the list of tags the page names). nil when any of that is
// needed.
func (s *Site) cachedPage(tag, kind string, quiz bool) *page {
	s.mu.Lock()
	st := s.tags[tag]
	if st == nil || !isDone(st.done) || st.err != nil {
		s.mu.Unlock()
		return nil
	}
	st.used = time.Now()
	gen := s.gen
	s.mu.Unlock()
	st.mu.Lock()
	defer st.mu.Unlock()
	v := &st.variants[variant(quiz)]
	if v.pages == nil || v.gen != gen {
		return nil
	}
	return v.pages[kind]
}

// refused reports whether pages of kind are refused in quiz mode: the
// answer key.
func refused(kind string, quiz bool) bool {
	return quiz && (kind == pageAnswerKey || kind == pageWorksheet)
}

// quiz reports whether r is answered in quiz mode (Config.Quiz).
func (s *Site) quiz(r *http.Request) bool {
	return s.cfg.Quiz != nil && s.cfg.Quiz(r)
}

// CachedPage is the page of kind at tag that r asks for when it is
// rendered and current, as TagPage would serve it; nil otherwise (TagPage
// then has more to do).
func (s *Site) CachedPage(r *http.Request, tag, kind string) http.Handler {
	quiz := s.quiz(r)
	if refused(kind, quiz) {
		return nil
	}
	if p := s.cachedPage(tag, kind, quiz); p != nil {
		return p
	}
	return nil
}

// isDone reports whether ch is closed, without waiting.
func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// loaded waits up to s.wait for tag's Reading. When it is not ready, it
// answers itself, with the page that reloads until it is (for whom names
// who waits, e.g. " for this room"), or with why it cannot be, and reports
// false.
func (s *Site) loaded(w http.ResponseWriter, r *http.Request, tag, forWhom string) (*tagState, bool) {
	st := s.fetched(w, r, tag)
	if st == nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.wait)
	defer cancel()
	select {
	case <-st.done:
	case <-ctx.Done():
		w.Header().Set("Retry-After", "2")
		s.statusPage(w, r, http.StatusAccepted, pageData{
			Tag:     tag,
			Refresh: true,
			Heading: "Fetching k8s.io/kubernetes@" + tag + forWhom + "…",
			Message: "The first reading of a tag downloads its module zip (about 30 MB) through the Go module proxy, checks it against the checksum database and extracts the kubelet's loop. It takes a few seconds to a minute.",
			Advice:  "This page reloads itself every two seconds until the reading is ready.",
		})
		return nil, false
	}
	if st.err != nil {
		s.loadFailed(w, r, tag, st.err)
		return nil, false
	}
	return st, true
}

// permanent reports whether a Load error is about the tag itself, so
// retrying soon cannot help.
func permanent(err error) bool {
	return errors.Is(err, extractor.ErrInvalidTag) || errors.Is(err, extractor.ErrUnknownTag) ||
		errors.Is(err, extractor.ErrUnsupportedTag) || errors.Is(err, extractor.ErrNotKubernetes)
}

// loadFailed answers for a tag that cannot be read.
func (s *Site) loadFailed(w http.ResponseWriter, r *http.Request, tag string, err error) {
	d := pageData{Tag: tag, Message: err.Error()}
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, extractor.ErrInvalidTag):
		status = http.StatusNotFound
		d.Heading = fmt.Sprintf("%q is not a Kubernetes tag", tag)
		d.Advice = "Tags look like " + s.cfg.DefaultTag + "."
	case errors.Is(err, extractor.ErrUnknownTag):
		status = http.StatusNotFound
		d.Heading = "No tag " + tag + " of k8s.io/kubernetes"
		d.Advice = "Check the tag: the module proxy does not serve it."
	case errors.Is(err, extractor.ErrUnsupportedTag):
		status = http.StatusNotFound
		d.Heading = "Tag " + tag + " cannot be read here"
		d.Advice = "syncloop reads " + extractor.MinTag + " and later."
	case errors.Is(err, extractor.ErrProxyUnreachable), errors.Is(err, extractor.ErrNoProxy):
		status = http.StatusBadGateway
		d.Heading = "Could not fetch " + tag
		// Said to a visitor, who cannot pass the server a flag: what to do
		// now, and what to tell whoever runs the server.
		d.Advice = "This server could not reach the Go module proxy, or the checksum database that verifies the source, to fetch " + tag + ". Try again in a little while, or open a tag it already has. Whoever runs the server can check its GOPROXY, GOSUMDB and network, or serve a local Kubernetes checkout of that tag."
	case errors.Is(err, extractor.ErrChecksumMismatch):
		status = http.StatusBadGateway
		d.Heading = "The source of " + tag + " did not verify"
		d.Advice = "The module zip's hash does not match what it was checked against (the message above says which); syncloop will not show it."
	default:
		d.Heading = "Could not read " + tag
		d.Advice = "This page will try again in a little while; the server log says more."
	}
	s.statusPage(w, r, status, d)
}

// pageFor returns the tag's page of the kind, as quiz mode serves it or
// not, rendering the tag's pages when the list of readable tags (shown in
// the switcher) has changed.
func (s *Site) pageFor(st *tagState, kind string, quiz bool) (*page, error) {
	tags, gen := s.readableTags()
	st.mu.Lock()
	defer st.mu.Unlock()
	v := &st.variants[variant(quiz)]
	if v.pages != nil && v.gen == gen {
		return v.pages[kind], nil
	}
	pages := map[string]*page{}
	const htmlType, cache = "text/html; charset=utf-8", "no-cache"
	d := pageData{Tag: st.tag, Tags: tags, DefaultTag: s.cfg.DefaultTag, V: st.view, Quiz: quiz}
	if quiz {
		d.V = st.view.withoutNotes()
	}
	for kind, tmpl := range map[string]string{pageIndex: "index.html", pagePodWorkers: "pod-workers.html"} {
		d.Page = kind
		d.Title = map[string]string{
			pageIndex:      "syncLoopIteration at " + st.tag,
			pagePodWorkers: "pod_workers.go at " + st.tag,
		}[kind]
		body, err := s.execute(tmpl, d)
		if err != nil {
			return nil, err
		}
		pages[kind] = newPage(htmlType, body, cache)
	}
	switch {
	case v.pages != nil:
		pages[pageJSON], pages[pageWorksheet], pages[pageAnswerKey] = v.pages[pageJSON], v.pages[pageWorksheet], v.pages[pageAnswerKey]
	case quiz:
		// No answer key (refused), and a reading.json without answers.
		j, err := json.MarshalIndent(withoutAnswers(st.reading), "", "  ")
		if err != nil {
			return nil, err
		}
		pages[pageJSON] = newPage("application/json", append(j, '\n'), cache)
	default:
		j, err := json.MarshalIndent(st.reading, "", "  ")
		if err != nil {
			return nil, err
		}
		pages[pageJSON] = newPage("application/json", append(j, '\n'), cache)
		pages[pageAnswerKey] = newPage("text/markdown; charset=utf-8", answerKey(st.view), cache)
		pages[pageWorksheet] = pages[pageAnswerKey]
	}
	v.pages, v.gen = pages, gen
	return pages[kind], nil
}

// variant is the index of a tag's pages as quiz mode serves them or not
// (tagState.variants).
func variant(quiz bool) int {
	if quiz {
		return 1
	}
	return 0
}
