// Package site is syncloop's reading pages: the annotated loop at a tag,
// its pod_workers page, the Reading as JSON, the worksheet, the compare of
// two tags and a case's history, the status pages, and the static files.
// It owns the tags' Readings, loaded on demand and rendered once.
package site

import (
	"context"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/mod/semver"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/httperr"
)

// Config is what the pages need from the command line.
type Config struct {
	DefaultTag string // the tag / redirects to
	SourceDir  string // a local Kubernetes checkout served instead of the proxy
	CacheDir   string // "" means os.UserCacheDir()/syncloop
	Getenv     func(string) string
	Client     *http.Client // for the module proxy; nil means a default one
	Logger     *slog.Logger
	// Load fetches a Reading; nil means extractor.Load. Tests replace it.
	Load func(context.Context, extractor.Options) (*extractor.Reading, error)
	// LoadVolume fetches the second reading (the volume manager's); nil
	// means volume.Load. Tests replace it.
	LoadVolume func(context.Context, extractor.Options) (*volume.Reading, error)
	// Wait is how long a request waits for a Load before it answers with
	// the page that reloads; 0 means 400 ms (waitForLoad).
	Wait time.Duration
	// Identify names the client a request counts against in every per-client limit
	// (clients.Identify.Client, one for the whole server); nil means
	// clients.Identify{}.Client: the connection's address.
	Identify func(*http.Request) string
	// NewTagsPerHour is how many tags no one has fetched before (none in
	// memory or in the cache) one client may have fetched in an hour; 0
	// means DefaultNewTagsPerHour.
	NewTagsPerHour int
	// Quiz reports whether r is answered in quiz mode (a course's server,
	// serve --quiz; a class's student): every page without the site's
	// notes and what is derived from them: the cases' notes, the intro,
	// the pod_workers note, "Written by", element types, the two sets'
	// answer, reading.json's writers, sets and note symbols, the notes,
	// types and sets of the compare and history pages, and the answer key
	// (403). The source, the live pane and the readers' own worksheets
	// stay. nil means never.
	Quiz func(r *http.Request) bool
}

// The pages every tag has (Site.TagPage); a room shows the first two
// (Site.RoomPage).
const (
	PageIndex      = pageIndex
	PagePodWorkers = pagePodWorkers
	PageJSON       = pageJSON
	PageWorksheet  = pageWorksheet
	PageAnswerKey  = pageAnswerKey
)

// Static serves the embedded CSS, JS and chroma stylesheet under /static/;
// notFound answers for any other name.
func (s *Site) Static(notFound http.Handler) http.Handler { return s.static.handler(notFound) }

// Site is the reading pages. Close stops its background loads.
type Site struct {
	cfg    Config
	log    *slog.Logger
	tmpl   *template.Template
	static *assets

	// ctx is cancelled by Close; background loads run under it and wg.
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	loads   chan struct{} // semaphore: how many Loads may run at once
	wait    time.Duration // how long a request waits for a Load
	newTags *budget       // the tags never fetched that each client may have fetched

	mu   sync.Mutex
	tags map[string]*tagState // every tag asked for since start
	gen  int                  // bumped when the set of readable tags changes; pages list them
	disk []string             // tags cached on disk at start

	vols volumes // the second reading's, by tag (volume.go)
}

// New returns the pages. It starts loading cfg.DefaultTag in the
// background, so the first reader finds it ready more often than not.
func New(cfg Config) (*Site, error) {
	if cfg.DefaultTag == "" {
		cfg.DefaultTag = extractor.DefaultTag
	}
	if err := extractor.CheckTag(cfg.DefaultTag); err != nil {
		return nil, err
	}
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Load == nil {
		cfg.Load = extractor.Load
	}
	if cfg.Wait <= 0 {
		cfg.Wait = waitForLoad
	}
	if cfg.NewTagsPerHour <= 0 {
		cfg.NewTagsPerHour = DefaultNewTagsPerHour
	}
	static, err := sharedAssets()
	if err != nil {
		return nil, err
	}
	tmpl, err := parseTemplates(static)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Site{
		cfg:     cfg,
		log:     cfg.Logger,
		tmpl:    tmpl,
		static:  static,
		ctx:     ctx,
		cancel:  cancel,
		loads:   make(chan struct{}, 2),
		wait:    cfg.Wait,
		newTags: newBudget(cfg.NewTagsPerHour, time.Hour),
		tags:    make(map[string]*tagState),
	}
	if dir, err := extractor.CacheDir(s.options("")); err == nil {
		s.disk, _ = extractor.CachedTags(dir)
	}
	s.state(cfg.DefaultTag)
	return s, nil
}

// Close stops the background loads and waits for them.
func (s *Site) Close() {
	s.cancel()
	s.wg.Wait()
}

// Load starts loading tag's Reading, if it is not loaded or loading and
// costs no download (it is cached on disk): a tag never fetched is
// fetched for a request, which counts it against its client (a room made
// at a new tag, when its page is first opened).
func (s *Site) Load(tag string) {
	if extractor.CheckTag(tag) == nil && s.known(tag) {
		s.state(tag)
	}
}

// DefaultProblem says why the default tag's Reading is not ready ("" when
// it is): still loading, failed, or not taken.
func (s *Site) DefaultProblem() string {
	tag := s.cfg.DefaultTag
	st := s.state(tag)
	if st == nil {
		return fmt.Sprintf("the default tag %s is not loaded (too many tags held)", tag)
	}
	select {
	case <-st.done:
		if st.err != nil {
			return fmt.Sprintf("the default tag %s failed to load: %v", tag, st.err)
		}
		return ""
	default:
		return fmt.Sprintf("the default tag %s is still loading", tag)
	}
}

// Error answers err with a status page: its status, what went wrong or
// is happening, and what to do next (an *httperr.Error; any other error
// is an internal one, its cause logged with the request).
func (s *Site) Error(w http.ResponseWriter, r *http.Request, err error) {
	e := httperr.Head(w, err)
	s.statusPage(w, r, e.Status, pageData{Heading: e.Heading, Message: e.Message, Advice: e.Advice})
}

// MaxTags bounds the tags remembered (loaded, loading or failed), so a
// stream of made-up tags cannot grow the server without end. Past it, the
// failed are forgotten first, then the loaded tag read least recently
// (not the default): its Reading stays in the disk cache, read again from
// there when it is next asked for.
const MaxTags = 64

// MaxLoading bounds the tags being fetched at once (cap(loads) of them
// download; the others wait their turn), leaving room among MaxTags for
// the loaded. It is more than a history page asks for (every minor release
// since v1.20.0).
const MaxLoading = 24

// errorTTL is how long a failed Load is remembered before a request retries.
var errorTTL = map[bool]time.Duration{
	true:  10 * time.Minute, // the tag itself is wrong: unknown, invalid, unsupported
	false: 20 * time.Second, // the network or the proxy: worth another try soon
}

// tagState is one tag's Reading and pages: loading until done is closed.
type tagState struct {
	tag    string
	done   chan struct{}
	failed time.Time // when err was set

	used time.Time // when last asked for; s.mu guards it

	// set once before done is closed
	reading *extractor.Reading
	view    *readingView // the tag's highlighted code and notes, built once
	err     error

	mu       sync.Mutex
	variants [2]pageSet // the pages as served outside quiz mode, and in it (variant)

	defs sync.Map // symbol → rendered /def answer (def.go)
}

// pageSet is a tag's pages, rendered for the generation gen of the
// readable tags (Site.gen).
type pageSet struct {
	pages map[string]*page
	gen   int
}

// options are the extractor options for tag.
func (s *Site) options(tag string) extractor.Options {
	o := extractor.Options{
		Tag:      tag,
		CacheDir: s.cfg.CacheDir,
		Symbols:  content.Symbols(),
		Getenv:   s.cfg.Getenv,
		Client:   s.cfg.Client,
		Logger:   s.log,
	}
	if s.cfg.SourceDir != "" && tag == s.cfg.DefaultTag {
		o.SourceDir = s.cfg.SourceDir
	}
	return o
}

// Reading returns tag's Reading once it is loaded, nil before.
func (s *Site) Reading(tag string) *extractor.Reading {
	s.mu.Lock()
	st := s.tags[tag]
	if st != nil {
		st.used = time.Now()
	}
	s.mu.Unlock()
	if st == nil {
		return nil
	}
	select {
	case <-st.done:
		return st.reading
	default:
		return nil
	}
}

// state returns tag's state, starting its Load when none is under way and
// none succeeded. The caller has checked the tag with extractor.CheckTag.
// It returns nil when too many tags are remembered to take another.
func (s *Site) state(tag string) *tagState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.tags[tag]; ok {
		st.used = time.Now()
		select {
		case <-st.done:
			if st.err == nil || time.Since(st.failed) < errorTTL[permanent(st.err)] {
				return st
			}
		default:
			return st
		}
	}
	if s.loading() >= MaxLoading {
		return nil
	}
	if len(s.tags) >= MaxTags && !s.evictFailed() && !s.evictLeastUsed() {
		return nil
	}
	st := &tagState{tag: tag, done: make(chan struct{}), used: time.Now()}
	s.tags[tag] = st
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		r, err := s.load(tag)
		var view *readingView
		if err == nil {
			r = s.withDefs(r, tag)
			view, err = newReadingView(r)
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if err != nil {
			st.err, st.failed = err, time.Now()
		} else {
			st.reading, st.view = r, view
			s.gen++
			if !slices.Contains(s.disk, tag) {
				s.disk = append(s.disk, tag) // cached by extractor.Load: readable once evicted
			}
		}
		close(st.done)
	}()
	return st
}

// load reads tag's Reading from the cache, or has it loaded: at most
// cap(s.loads) at once, the others waiting their turn.
func (s *Site) load(tag string) (*extractor.Reading, error) {
	if r, ok := extractor.Cached(s.options(tag)); ok {
		return r, nil
	}
	select {
	case s.loads <- struct{}{}:
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
	defer func() { <-s.loads }()
	start := time.Now()
	r, err := s.cfg.Load(s.ctx, s.options(tag))
	if err != nil {
		s.log.Warn("load failed", "tag", tag, "err", err)
		return nil, err
	}
	s.log.Info("loaded", "tag", tag, "source", r.Source, "cases", len(r.Function.Cases), "took", time.Since(start).Round(time.Millisecond))
	return r, nil
}

// evictFailed forgets the failed tags; s.mu is held. It reports whether
// any room was made.
func (s *Site) evictFailed() bool {
	n := len(s.tags)
	for tag, st := range s.tags {
		select {
		case <-st.done:
			if st.err != nil {
				delete(s.tags, tag)
			}
		default:
		}
	}
	return len(s.tags) < n
}

// loading counts the tags being fetched; s.mu is held.
func (s *Site) loading() int {
	n := 0
	for _, st := range s.tags {
		select {
		case <-st.done:
		default:
			n++
		}
	}
	return n
}

// evictLeastUsed forgets the loaded tag asked for least recently, but
// never the default; s.mu is held. It reports whether it found one.
func (s *Site) evictLeastUsed() bool {
	var lru *tagState
	for tag, st := range s.tags {
		select {
		case <-st.done:
			if st.err == nil && tag != s.cfg.DefaultTag && (lru == nil || st.used.Before(lru.used)) {
				lru = st
			}
		default:
		}
	}
	if lru == nil {
		return false
	}
	delete(s.tags, lru.tag)
	return true
}

// readableTags are the tags a reader can switch to without a fetch: those
// cached on disk at start and those loaded since, newest first; and the
// generation of that list.
func (s *Site) readableTags() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tags := slices.Clone(s.disk)
	for tag, st := range s.tags {
		select {
		case <-st.done:
			if st.err == nil {
				tags = append(tags, tag)
			}
		default:
		}
	}
	slices.SortFunc(tags, func(a, b string) int { return semver.Compare(b, a) })
	return slices.Compact(tags), s.gen
}

// Room is what a room's page needs beyond the reading: the room's id and
// its feed.
type Room struct {
	ID   string
	Feed string
	// HideNotes: the room's class hides the site's notes and answer key
	// (its readers write their own): the page is rendered without them.
	HideNotes bool
	// Ended: a driver ended the room; its page says so and is read-only.
	Ended bool
	// Class is the id of the room's class, "" for none.
	Class string
}

// RoomPage renders the reading page of kind (PageIndex, PagePodWorkers,
// PageVolume) at tag, with the room's bar; false when it answered
// otherwise (the tag loading, an error).
func (s *Site) RoomPage(w http.ResponseWriter, r *http.Request, kind, tag string, room Room) bool {
	if kind == PageVolume {
		return s.roomVolume(w, r, tag, room)
	}
	tmpl, title := "index.html", "syncLoopIteration"
	if kind == pagePodWorkers {
		tmpl, title = "pod-workers.html", "pod_workers.go"
	}
	st, ok := s.loaded(w, r, tag, " for this room")
	if !ok {
		return false
	}
	tags, _ := s.readableTags()
	v := st.view
	quiz := s.quiz(r)
	room.HideNotes = room.HideNotes || quiz
	if room.HideNotes {
		v = v.withoutNotes()
	}
	body, err := s.execute(tmpl, pageData{
		Title: "Pair session · " + title + " at " + tag, Page: kind,
		Tag: tag, Tags: tags, DefaultTag: s.cfg.DefaultTag, V: v,
		Room: &room, Quiz: quiz,
	})
	if err != nil {
		s.log.Error("render room", "err", err)
		s.statusPage(w, r, http.StatusInternalServerError, pageData{Heading: "Could not render the room", Message: err.Error()})
		return false
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
	return true
}

// ClassPage renders a class's page (templates/class.html, package classes)
// with class as its data.
func (s *Site) ClassPage(w http.ResponseWriter, r *http.Request, title string, class any) {
	body, err := s.execute("class.html", pageData{Title: title, Page: "class", Tag: s.cfg.DefaultTag, DefaultTag: s.cfg.DefaultTag, Class: class, Quiz: s.quiz(r)})
	if err != nil {
		s.log.Error("render class", "err", err)
		s.statusPage(w, r, http.StatusInternalServerError, pageData{Heading: "Could not render the class", Message: err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write(body)
}

// TagReady waits until tag's Reading is loaded, or says why it cannot be.
// A tag never fetched counts against client (Config.Identify), as a
// page asked for by that client would: a room's driver switching its tag.
func (s *Site) TagReady(ctx context.Context, client, tag string) error {
	st, no := s.fetch(client, tag)
	if no != nil {
		return no
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	select {
	case <-st.done:
		return st.err
	case <-ctx.Done():
		return fmt.Errorf("%s did not load in time; try again", tag)
	}
}
