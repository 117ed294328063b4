package site

// The second reading, the volume manager's reconciler (extractor/volume),
// at /k8s/{tag}/volume-manager.json: loaded as the first reading is (from
// the disk cache, else fetched and verified, a new tag counting against
// the client's budget, at most cap(s.loads) fetches at once), a request
// waiting s.wait before it gets the page that reloads, and the JSON
// rendered once per tag.

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
)

// PageVolumeJSON names the second reading's JSON, as served.
const PageVolumeJSON = "volume-manager.json"

// volumes holds each tag's second reading; its zero value is ready.
type volumes struct {
	mu sync.Mutex
	m  map[string]*volState
}

// volState is one tag's second reading: loading until done is closed.
type volState struct {
	done chan struct{}
	// set before done is closed
	reading *volume.Reading
	page    *page // the JSON
	quiz    *page // the JSON in quiz mode (volumeWithoutAnswers)
	err     error
	failed  time.Time

	mu   sync.Mutex
	view *volumeView // built on the page's first request
	html *page       // the page, rendered for gen (volume_page.go)
	gen  int
}

// VolumeJSON serves /k8s/{tag}/volume-manager.json.
func (s *Site) VolumeJSON() http.Handler { return s.volumeHandler(false) }

// volumeHandler serves the second reading's page (html) or JSON.
func (s *Site) volumeHandler(html bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag := chi.URLParam(r, "tag")
		st, ok := s.volumeLoaded(w, r, tag)
		if !ok {
			return
		}
		quiz := s.quiz(r)
		if !html {
			if quiz {
				st.quiz.ServeHTTP(w, r)
			} else {
				st.page.ServeHTTP(w, r)
			}
			return
		}
		p, err := s.volumeHTML(st, tag, quiz)
		if err != nil {
			s.log.Error("render", "tag", tag, "page", PageVolume, "err", err)
			s.statusPage(w, r, http.StatusInternalServerError, pageData{Tag: tag, Heading: "Could not render the page", Message: err.Error()})
			return
		}
		p.ServeHTTP(w, r)
	})
}

// volumeLoaded is tag's second reading once loaded; false when it
// answered otherwise (loading, refused, failed).
func (s *Site) volumeLoaded(w http.ResponseWriter, r *http.Request, tag string) (*volState, bool) {
	if err := extractor.CheckTag(tag); err != nil {
		s.loadFailed(w, r, tag, err)
		return nil, false
	}
	st := s.volume(tag)
	if st == nil {
		if !s.volumeAdmitted(w, r, tag) {
			return nil, false
		}
		if st = s.startVolume(tag); st == nil {
			w.Header().Set("Retry-After", "30")
			s.statusPage(w, r, http.StatusServiceUnavailable, pageData{Tag: tag, Heading: "Too many tags at once",
				Message: "This server holds as many volume manager readings as it may.", Advice: "Try again in a minute."})
			return nil, false
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.wait)
	defer cancel()
	select {
	case <-st.done:
	case <-ctx.Done():
		w.Header().Set("Retry-After", "2")
		s.statusPage(w, r, http.StatusAccepted, pageData{Tag: tag, Refresh: true,
			Heading: "Reading the volume manager at k8s.io/kubernetes@" + tag + "…",
			Message: "The first reading of a tag's volume manager reads its module zip (fetched through the Go module proxy and checked against the checksum database when this server does not have it) and derives the reconciler's entry, phases, sets and log sites.",
			Advice:  "This page reloads itself every two seconds until the reading is ready."})
		return nil, false
	}
	if st.err != nil {
		s.loadFailed(w, r, tag, st.err)
		return nil, false
	}
	return st, true
}

// volume is tag's state when one is held and worth keeping: loaded,
// loading, or failed lately.
func (s *Site) volume(tag string) *volState {
	s.vols.mu.Lock()
	defer s.vols.mu.Unlock()
	st := s.vols.m[tag]
	if st == nil || !isDone(st.done) || st.err == nil || time.Since(st.failed) < errorTTL[permanent(st.err)] {
		return st
	}
	delete(s.vols.m, tag)
	return nil
}

// volumeAdmitted admits a tag whose second reading is not cached as a new
// tag is: it may cost a download, so it spends the asking client's new
// tags an hour (budget.go), unless the tag has been read here already.
func (s *Site) volumeAdmitted(w http.ResponseWriter, r *http.Request, tag string) bool {
	opts := s.options(tag)
	if _, ok := volume.Cached(opts); ok || opts.SourceDir != "" || s.known(tag) {
		return true
	}
	retry, ok := s.newTags.take(s.client(r), time.Now())
	if !ok {
		s.refuseTag(w, r, tag, s.spentRefusal(tag, retry))
	}
	return ok
}

// startVolume starts loading tag's second reading (or returns the load
// another request started); nil when MaxTags are held and none failed.
func (s *Site) startVolume(tag string) *volState {
	s.vols.mu.Lock()
	defer s.vols.mu.Unlock()
	if st := s.vols.m[tag]; st != nil {
		return st
	}
	if s.vols.m == nil {
		s.vols.m = map[string]*volState{}
	}
	if len(s.vols.m) >= MaxTags && !s.vols.evict() {
		return nil
	}
	st := &volState{done: make(chan struct{})}
	s.vols.m[tag] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer close(st.done)
		r, err := s.loadVolume(tag)
		if err == nil {
			var full, quiz []byte
			if full, err = json.MarshalIndent(r, "", "  "); err == nil {
				quiz, err = json.MarshalIndent(volumeWithoutAnswers(r), "", "  ")
			}
			if err == nil {
				st.reading = r
				st.page = newPage("application/json", append(full, '\n'), "no-cache")
				st.quiz = newPage("application/json", append(quiz, '\n'), "no-cache")
			}
		}
		if err != nil {
			st.err, st.failed = err, time.Now()
		}
	}()
	return st
}

// evict forgets one finished reading (a failed one first); v.mu is held.
func (v *volumes) evict() bool {
	var loaded string
	for tag, st := range v.m {
		if !isDone(st.done) {
			continue
		}
		if st.err != nil {
			delete(v.m, tag)
			return true
		}
		loaded = tag
	}
	if loaded == "" {
		return false
	}
	delete(v.m, loaded) // the disk cache keeps it
	return true
}

// loadVolume reads tag's second reading from the disk cache, or has it
// derived, at most cap(s.loads) loads of either reading at once.
func (s *Site) loadVolume(tag string) (*volume.Reading, error) {
	opts := s.options(tag)
	if r, ok := volume.Cached(opts); ok {
		return r, nil
	}
	select {
	case s.loads <- struct{}{}:
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
	defer func() { <-s.loads }()
	load := s.cfg.LoadVolume
	if load == nil {
		load = volume.Load
	}
	start := time.Now()
	r, err := load(s.ctx, opts)
	if err != nil {
		s.log.Warn("volume manager load failed", "tag", tag, "err", err)
		return nil, err
	}
	s.log.Info("loaded the volume manager", "tag", tag, "parts", len(r.Parts), "took", time.Since(start).Round(time.Millisecond))
	return r, nil
}
