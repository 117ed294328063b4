package classes

// The classes' HTTP side.
//
//	GET  /classes                    the form that makes a class
//	POST /classes                    make a class (same origin; rate-limited per client address);
//	                                 303 to the instructor page /classes/{id}?k=KEY
//	GET  /classes/{id}               the class page: students give a name and start or join a
//	                                 room ([data-class-start]); with the key, the instructor's panel
//	POST /classes/{id}/rooms         start a room of the class (same origin, a student's session: 403
//	                                 without): 303 to its driver link
//	GET  /classes/{id}/pairs.json    the class's rooms, for the students' page
//	GET  /classes/{id}/rooms.json    the instructor's overview (Authorization: Bearer KEY; 401 without)
//	GET  /classes/{id}/events        the overview, live (same key)
//	GET  /classes/{id}/handins.zip   one room-N-ROOM-ID.md worksheet per room (same key)
//	POST /classes/{id}/settings      {"name","budget","hide_notes","pod","due","extensions","release"}
//	                                 (same key; the last three handin.go's): the class as it is now
//	POST /classes/{id}/hello         {"name"} (same origin; per client 60 at once, then 1/s): a
//	                                 student's name on the roster, and their session
//	POST /classes/{id}/end           (same key) end the class: all its rooms end, it starts no more
//	POST /classes/{id}/rooms/{room}/end  (same key) end one room of the class

import (
	"archive/zip"
	"bytes"
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/internal/wake"
	"github.com/syncloop/syncloop/server/rooms"
)

// SiteFuncs are what classes need of the site around them (package
// site's pages, the same-origin rule, its tags); server/ fills them in.
type SiteFuncs struct {
	// Page writes the class page (templates/class.html) with data.
	Page func(w http.ResponseWriter, r *http.Request, title string, data *PageData)
	// Error answers err with the site's page that says why (site.Site's
	// Error: an *httperr.Error's status, heading, message and advice).
	Error      func(w http.ResponseWriter, r *http.Request, err error)
	SameOrigin func(r *http.Request) bool
	LoadTag    func(tag string)
}

// PageData is what templates/class.html renders.
type PageData struct {
	New           bool // the form that makes a class
	Class         ClassJSON
	DefaultTag    string
	DefaultBudget int
	MaxBudget     int
	AnonBudget    int    // a class made without the class token holds this many rooms at most
	TokenAsked    bool   // the server has a class token (serve --class-token)
	TTL           string // how long a class lives unwatched, as a reader reads it
}

// Config is the classes' configuration.
type Config struct {
	Store      *Store
	Deps       Deps
	Site       SiteFuncs
	DefaultTag string
	MaxBudget  int // a class's budget at most: the rooms classes may take (--max-rooms less the reserve)
	// Identify names the client a request counts against in every per-client limit
	// (clients.Identify.Client, one for the whole server); nil means
	// clients.Identify{}.Client: the connection's address.
	Identify func(r *http.Request) string
	// ClassToken, when set (serve --class-token), lets a creator who
	// presents it make a class of up to MaxBudget rooms; without it a
	// class, and all the classes of its creator's address together, hold
	// AnonBudget rooms at most (0 means DefaultAnonBudget).
	ClassToken string
	AnonBudget int
	// PerStudent is how many open rooms of a class one student holds; 0
	// means DefaultPerStudent.
	PerStudent int
	// Tick is how often an instructor's stream looks for a change; 0 means a second.
	Tick time.Duration
	// Changed, when set, wakes an instructor's stream at once when a
	// room, a note or a room's record of what fired changes, instead of at
	// its next Tick.
	Changed *wake.Signal
	// Sockets caps the instructors' streams one client holds open,
	// together with its feed and room sockets, and pings them; nil means
	// a cap of the classes' own with clients' defaults.
	Sockets *clients.Sockets
	Logger  *slog.Logger
}

// Handlers serve the routes above.
type Handlers struct {
	cfg     Config
	creates *rooms.KeyLimiter // classes made, per client
	starts  *rooms.KeyLimiter // rooms started, per client (one cannot spend a class's)
	hellos  *rooms.KeyLimiter // roster writes, per client
	done    chan struct{}     // closed by Close: the instructors' streams end
	close   sync.Once
}

// Close ends the instructors' open streams (the server is stopping: a
// stream would otherwise hold its shutdown for its whole grace).
func (h *Handlers) Close() { h.close.Do(func() { close(h.done) }) }

// NewHandlers returns the handlers.
func NewHandlers(cfg Config) *Handlers {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Tick <= 0 {
		cfg.Tick = time.Second
	}
	if cfg.MaxBudget <= 0 {
		cfg.MaxBudget = rooms.DefaultMaxRooms
	}
	if cfg.Identify == nil {
		cfg.Identify = clients.Identify{}.Client
	}
	if cfg.Sockets == nil {
		cfg.Sockets = clients.NewSockets(0, 0)
	}
	cfg.AnonBudget = min(cmp.Or(cfg.AnonBudget, DefaultAnonBudget), cfg.MaxBudget)
	cfg.PerStudent = cmp.Or(cfg.PerStudent, DefaultPerStudent)
	cfg.Deps.handIns = cfg.Store
	return &Handlers{cfg: cfg, done: make(chan struct{}),
		creates: rooms.NewKeyLimiter(1.0/60, 5, 10000),
		// A class's students start their rooms within a minute of each
		// other, from one address behind a NAT: the caps say how many,
		// this only how fast, per client.
		starts: rooms.NewKeyLimiter(2, 60, 10000),
		// Per client, not per class: a classroom behind one NAT (40
		// students, each page saying hello once a minute and on a new
		// name) is well within it, and one client flooding hellos
		// spends only its own.
		hellos: rooms.NewKeyLimiter(1, 60, 10000),
	}
}

// HideNotes reports whether room pages of class id are served without the
// site's notes and answer key.
func (h *Handlers) HideNotes(ctx context.Context, id string) bool {
	c, err := h.cfg.Store.Get(ctx, id)
	return err == nil && c.HideNotes && !c.released(h.cfg.Store.cfg.Now())
}

func (h *Handlers) budget(c Class) int { return min(c.Budget, h.maxBudget(c)) }

// maxBudget is the budget class c may be given: AnonBudget for a class
// made without the class token, else MaxBudget.
func (h *Handlers) maxBudget(c Class) int {
	if c.Creator != "" {
		return h.cfg.AnonBudget
	}
	return h.cfg.MaxBudget
}

// New is GET /classes.
func (h *Handlers) New() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.cfg.Site.Page(w, r, "Start a class", &PageData{New: true, DefaultTag: h.cfg.DefaultTag,
			DefaultBudget: min(DefaultBudget, h.cfg.AnonBudget), MaxBudget: h.cfg.MaxBudget, AnonBudget: h.cfg.AnonBudget,
			TokenAsked: h.cfg.ClassToken != "", TTL: days(h.cfg.Store.TTL())})
	})
}

func days(d time.Duration) string {
	if d >= 48*time.Hour && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// Create is POST /classes.
func (h *Handlers) Create() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.cfg.Site.SameOrigin(r) {
			httperr.Text(w, httperr.New(http.StatusForbidden, "cross-site request refused: start a class from this site's own page"))
			return
		}
		client := h.cfg.Identify(r)
		c, err := h.classFromForm(r, client)
		if err != nil { // (a form refused costs nothing of the rate)
			h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusBadRequest,
				Heading: "This class cannot be started",
				Message: err.Error(),
				Advice:  "Go back, correct the form and start it again.",
				Err:     err})
			return
		}
		if !h.creates.Allow(client, time.Now()) {
			w.Header().Set("Retry-After", "60")
			h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusTooManyRequests,
				Heading: "Too many classes from your address",
				Message: "One address starts 5 classes at once and one more a minute.",
				Advice:  "Use the class you started, or try again in a minute."})
			return
		}
		c, key, err := h.cfg.Store.Create(r.Context(), c)
		if err != nil {
			h.cfg.Logger.Error("classes: create", "err", err)
			h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusInternalServerError,
				Heading: "Could not start the class",
				Message: err.Error(),
				Advice:  "Try again in a moment.",
				Err:     err})
			return
		}
		h.cfg.Logger.Info("classes: created", "class", c.ID[:6]+"…", "tag", c.Tag, "budget", c.Budget, "remote", client)
		h.cfg.Site.LoadTag(c.Tag)
		http.Redirect(w, r, "/classes/"+c.ID+"?k="+url.QueryEscape(key), http.StatusSeeOther)
	})
}

// classFromForm reads the form that makes a class, from client. A class
// made without the server's class token is its creator's: all their
// classes together hold AnonBudget rooms (Class.Creator).
func (h *Handlers) classFromForm(r *http.Request, client string) (Class, error) {
	c := Class{Tag: h.cfg.DefaultTag, Creator: hashKey(client), Allowance: h.cfg.AnonBudget}
	if tok := r.PostFormValue("class_token"); tok != "" {
		if h.cfg.ClassToken == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(h.cfg.ClassToken)) != 1 {
			return c, errors.New("the class token is not this server's (serve --class-token): leave it empty for a class of up to " + strconv.Itoa(h.cfg.AnonBudget) + " rooms")
		}
		c.Creator, c.Allowance = "", 0
	}
	c.Budget = min(DefaultBudget, h.maxBudget(c))
	var s Settings
	name := r.PostFormValue("name")
	s.Name = &name
	if b := strings.TrimSpace(r.PostFormValue("budget")); b != "" {
		n, err := strconv.Atoi(b)
		if err != nil {
			return c, fmt.Errorf("budget %q: a number of rooms, 1 to %d", b, h.cfg.MaxBudget)
		}
		s.Budget = &n
	}
	hide := r.PostFormValue("hide_notes") != ""
	s.HideNotes = &hide
	pod := r.PostFormValue("pod")
	s.Pod = &pod
	if t := strings.TrimSpace(r.PostFormValue("tag")); t != "" {
		if err := extractor.CheckTag(t); err != nil {
			return c, fmt.Errorf("tag: %v", err)
		}
		c.Tag = t
	}
	reading, ok := rooms.ParseReading(r.PostFormValue("reading"))
	if !ok {
		return c, errors.New("reading: leave it out for syncLoopIteration, or say volume-manager for the volume manager's reconciler")
	}
	c.Reading = reading
	return c, s.apply(&c, h.maxBudget(c))
}

// classOr404 returns the class the URL names, or answers with a page that
// says why there is none.
func (h *Handlers) classOr404(w http.ResponseWriter, r *http.Request) (Class, bool) {
	c, err := h.cfg.Store.Get(r.Context(), chi.URLParam(r, "id"))
	switch {
	case errors.Is(err, ErrNotFound):
		h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusNotFound,
			Heading: "No such class",
			Message: fmt.Sprintf("There is no class at this address: the link was cut short, or the class ended (a class ends %s after its instructor last opened it).", days(h.cfg.Store.TTL())),
			Advice:  "Ask your instructor for the class link again."})
		return c, false
	case err != nil:
		h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusServiceUnavailable,
			Heading: "Could not read the class",
			Message: err.Error(),
			Advice:  "Try again in a moment.",
			Err:     err})
		return c, false
	}
	return c, true
}

// Page is GET /classes/{id}.
func (h *Handlers) Page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.classOr404(w, r)
		if !ok {
			return
		}
		if k := r.URL.Query().Get("k"); k != "" {
			if _, err := h.cfg.Store.Instructor(r.Context(), c.ID, k); err != nil {
				h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusForbidden,
					Heading: "This instructor link is not valid",
					Message: "The key in this link is not this class's instructor key: it was cut short, or it belongs to another class.",
					Advice:  "Open the class as a student at /classes/" + c.ID + "."})
				return
			}
		}
		h.cfg.Site.Page(w, r, "Class "+cmp.Or(c.Name, c.ID[:6]+"…"), &PageData{Class: classJSON(c), DefaultTag: h.cfg.DefaultTag,
			MaxBudget: h.cfg.MaxBudget, TTL: days(h.cfg.Store.TTL())})
	})
}

// StartRoom is POST /classes/{id}/rooms: a room of the class started by
// a student of it, counted against the class's caps (rooms.ClassPlace),
// not the address's.
func (h *Handlers) StartRoom() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.cfg.Site.SameOrigin(r) {
			httperr.Text(w, httperr.New(http.StatusForbidden, "cross-site request refused: start a room from the class's page"))
			return
		}
		c, ok := h.classOr404(w, r)
		if !ok {
			return
		}
		if !c.Ended.IsZero() {
			h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusGone,
				Heading: "This class has ended",
				Message: "Its instructor ended it: it starts no more rooms, and its rooms are read-only.",
				Advice:  "Ask your instructor if you need to go on."})
			return
		}
		if !h.starts.Allow(h.cfg.Identify(r), time.Now()) {
			w.Header().Set("Retry-After", "5")
			h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusTooManyRequests,
				Heading: "Rooms are being started faster from your address than this server takes them",
				Message: "One address starts 60 rooms at once and two more a second.",
				Advice:  "Try again in a few seconds, or join a room already open."})
			return
		}
		st, _, err := h.cfg.Store.SessionOf(r, c.ID)
		if err != nil {
			h.notStudent(w, r, c, err, "start a room")
			return
		}
		client := h.cfg.Identify(r)
		room, key, err := h.cfg.Deps.Rooms.Store().CreateInClass(c.Tag, client, rooms.ClassPlace{Class: c.ID, Budget: h.budget(c),
			Creator: c.Creator, Allowance: c.Allowance, Student: st.ID, PerStudent: h.cfg.PerStudent, Reading: c.Reading})
		if h.refused(w, r, c, err) {
			return
		}
		switch {
		case errors.Is(err, rooms.ErrFull):
			w.Header().Set("Retry-After", "300")
			h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusServiceUnavailable,
				Heading: "This server has no room for another room",
				Message: "It holds as many rooms as it may (serve --max-rooms).",
				Advice:  "Join a room already open, or ask whoever runs this server to raise the limit."})
			return
		case err != nil:
			h.cfg.Logger.Error("classes: start a room", "class", c.ID[:6]+"…", "err", err)
			h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusInternalServerError,
				Heading: "Could not start a room",
				Message: err.Error(),
				Advice:  "Try again in a moment.",
				Err:     err})
			return
		}
		h.cfg.Logger.Info("classes: room started", "class", c.ID[:6]+"…", "room", room.ID[:6]+"…", "remote", client)
		h.cfg.Site.LoadTag(c.Tag)
		http.Redirect(w, r, "/rooms/"+room.ID+"?k="+url.QueryEscape(key), http.StatusSeeOther)
	})
}

// refused answers a room of class c refused by one of the class's caps,
// and reports whether it did.
func (h *Handlers) refused(w http.ResponseWriter, r *http.Request, c Class, err error) bool {
	switch {
	case errors.Is(err, rooms.ErrClassFull):
		w.Header().Set("Retry-After", "60")
		h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusTooManyRequests,
			Heading: "This class holds as many rooms as it may",
			Message: fmt.Sprintf("Its instructor set it to %d rooms at once.", h.budget(c)),
			Advice:  "Join a room already open (the class page lists them), or ask your instructor to end the rooms no one uses or raise the class's budget."})
	case errors.Is(err, rooms.ErrCreatorFull):
		w.Header().Set("Retry-After", "60")
		h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusTooManyRequests,
			Heading: "Your instructor's classes hold as many rooms as they may",
			Message: fmt.Sprintf("Classes made without this server's class token hold %d rooms in all.", c.Allowance),
			Advice:  "Join a room already open (the class page lists them), or ask your instructor to end the rooms no one uses."})
	case errors.Is(err, rooms.ErrStudentFull):
		h.cfg.Site.Error(w, r, &httperr.Error{Status: http.StatusTooManyRequests,
			Heading: "You hold as many rooms of this class as one student may",
			Message: fmt.Sprintf("One student holds %d open rooms of a class at once.", h.cfg.PerStudent),
			Advice:  "Use a room you started (the class page lists them), end one you no longer need, or join your partner's."})
	default:
		return false
	}
	return true
}

// Pairs is GET /classes/{id}/pairs.json.
func (h *Handlers) Pairs() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := h.cfg.Store.Get(r.Context(), chi.URLParam(r, "id"))
		if err != nil {
			jsonError(w, http.StatusNotFound, "no such class")
			return
		}
		p := h.cfg.Deps.pairs(c)
		p.Budget = h.budget(c)
		writeJSON(w, http.StatusOK, p)
	})
}

// instructor returns the class if the request bears its instructor key,
// else answers 401 (no key, or not this class's) or 404 itself.
func (h *Handlers) instructor(w http.ResponseWriter, r *http.Request) (Class, bool) {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	c, err := h.cfg.Store.Instructor(r.Context(), chi.URLParam(r, "id"), strings.TrimSpace(key))
	switch {
	case errors.Is(err, ErrNotFound):
		jsonError(w, http.StatusNotFound, "no such class")
		return c, false
	case !ok || errors.Is(err, ErrBadKey):
		w.Header().Set("WWW-Authenticate", `Bearer realm="syncloop class"`)
		jsonError(w, http.StatusUnauthorized, "the class's instructor key is needed: Authorization: Bearer KEY, the key of the instructor link")
		return c, false
	case err != nil:
		jsonError(w, http.StatusServiceUnavailable, err.Error())
		return c, false
	}
	return c, true
}

// watched is an instructor looking at class c: the class lives on, and so
// do its rooms (ended ones too: their hand-ins are wanted). A room is
// touched only once it has been idle half its TTL, so that its last
// activity stays its students' (what the overview shows).
func (h *Handlers) watched(ctx context.Context, c Class) {
	h.cfg.Store.Touch(ctx, c)
	st := h.cfg.Deps.Rooms.Store()
	for _, r := range st.OfClass(c.ID) {
		if time.Since(r.LastActive) > st.TTL()/2 {
			st.Touch(r.ID)
		}
	}
}

// RoomsJSON is GET /classes/{id}/rooms.json.
func (h *Handlers) RoomsJSON() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructor(w, r)
		if !ok {
			return
		}
		h.watched(r.Context(), c)
		roster, err := h.cfg.Store.Students(r.Context(), c.ID)
		if err != nil {
			jsonError(w, http.StatusServiceUnavailable, err.Error())
			return
		}
		writeJSON(w, http.StatusOK, h.cfg.Deps.overview(c, roster))
	})
}

// Events is GET /classes/{id}/events: the overview whenever it changes.
// The stream holds one of its client's sockets (Config.Sockets) until the
// page goes, the class is gone, or a write misses its deadline (the page
// stopped reading: clients.Events).
func (h *Handlers) Events() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructor(w, r)
		if !ok {
			return
		}
		client := h.cfg.Identify(r)
		if !h.cfg.Sockets.Acquire(w, client) {
			return
		}
		defer h.cfg.Sockets.Release(client)
		ev, err := h.cfg.Sockets.Events(w)
		if err != nil {
			return
		}
		defer ev.Close()
		h.stream(r, ev, c)
	})
}

// stream sends class c's overview on ev, each time it changes, until the
// request ends, the class is gone, the server closes or a write fails.
func (h *Handlers) stream(r *http.Request, ev *clients.Events, c Class) {
	tick := time.NewTicker(h.cfg.Tick)
	defer tick.Stop()
	var sent []byte
	var roster []Student
	lastWatch, lastRoster := time.Time{}, time.Time{}
	for {
		// Taken before the overview is read: a change while it is read or
		// sent wakes the wait below.
		changed := h.cfg.Changed.C()
		now := time.Now()
		if now.Sub(lastRoster) >= rosterEvery {
			// The class as it is now (its settings changed, it ended:
			// another replica may have taken the change) and its
			// roster. A failed read keeps what was last read.
			nc, err := h.cfg.Store.Get(r.Context(), c.ID)
			if errors.Is(err, ErrNotFound) {
				ev.Send("gone", []byte("{}"))
				return
			}
			if err == nil {
				c = nc
			}
			if st, err := h.cfg.Store.Students(r.Context(), c.ID); err == nil {
				roster = st
			}
			lastRoster = now
		}
		if now.Sub(lastWatch) >= rooms.FlushEvery {
			// Its rooms kept alive while it is watched.
			h.watched(r.Context(), c)
			lastWatch = now
		}
		b, err := json.Marshal(h.cfg.Deps.overview(c, roster))
		if err != nil {
			return
		}
		if !bytes.Equal(b, sent) {
			if ev.Send("overview", b) != nil {
				return
			}
			sent = b
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		case <-ev.Pings():
			if ev.Ping() != nil {
				return
			}
		case <-tick.C:
		case <-changed:
			if !h.settle(r.Context(), now) {
				return
			}
		}
	}
}

// changeGap is how soon after an overview a change makes the next one: a
// busy class's lines and notes coalesce into at most one overview per gap.
const changeGap = 100 * time.Millisecond

// settle waits out changeGap after the overview read at last, and reports
// false once the stream must end.
func (h *Handlers) settle(ctx context.Context, last time.Time) bool {
	d := changeGap - time.Since(last)
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-h.done:
		return false
	case <-t.C:
		return true
	}
}

// rosterEvery is how often an instructor's stream reads the class and its
// roster: a name given, a setting changed, the class ended show within it.
const rosterEvery = 2 * time.Second

// Handins is GET /classes/{id}/handins.zip: every room's worksheet, as the
// room's own download renders it, named room-N-ROOM-ID.md, N as the
// instructor's page numbers the rooms (a room id may begin with "-",
// which a shell would read as an option).
func (h *Handlers) Handins() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, ok := h.instructor(w, r)
		if !ok {
			return
		}
		var buf bytes.Buffer
		z := zip.NewWriter(&buf)
		if err := h.zipHandins(r.Context(), c, z); err != nil {
			jsonError(w, http.StatusInternalServerError, err.Error())
			return
		}
		if err := z.Close(); err != nil {
			jsonError(w, http.StatusInternalServerError, err.Error())
			return
		}
		name := "syncloop-handins-" + strings.ToLower(c.ID[:6]) + ".zip"
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", name))
		w.Write(buf.Bytes())
	})
}

// handin is the worksheet of room, the class's n-th, or why there is
// none yet.
func (h *Handlers) handin(ctx context.Context, c Class, n int, room rooms.Room) []byte {
	reading := h.cfg.Deps.Reading(room.Tag)
	if reading == nil {
		h.cfg.Site.LoadTag(room.Tag)
		return fmt.Appendf(nil, "# syncloop worksheet: Room %d (%s)\n\nThe source at %s was still being fetched: download the hand-ins again in a moment.\n", n, room.ID, room.Tag)
	}
	head := annotations.Head{Title: roomTitle(c, n, room, annotations.Inline), Readers: room.Readers, Journal: annotations.Journal(ctx, h.cfg.Deps.Line, room.ID)}
	if room.Reading == rooms.ReadingVolume {
		vr := h.cfg.Deps.volumeReading(room.Tag)
		if vr == nil {
			return fmt.Appendf(nil, "# syncloop worksheet: Room %d (%s)\n\nThe volume manager at %s was still being read: download the hand-ins again in a moment.\n", n, room.ID, room.Tag)
		}
		return annotations.VolumeWorksheet(vr, head, h.cfg.Deps.Notes(room.ID))
	}
	return annotations.Worksheet(reading, head, h.cfg.Deps.Notes(room.ID))
}

// roomTitle is the title of room's hand-in, the class's n-th: which room
// of which class, the class's name written by esc.
func roomTitle(c Class, n int, room rooms.Room, esc func(string) string) string {
	title := fmt.Sprintf("Room %d of the class “%s”: pair session %s…", n, esc(c.Name), room.ID[:6])
	if room.Ended {
		title += " (ended)"
	}
	return title
}

// RoomTitle is roomTitle for a room of a class, numbered as the
// instructor's page numbers it; "" for a room outside a class (the room's
// own worksheet.md says whose it is with it).
func (h *Handlers) RoomTitle(ctx context.Context, room rooms.Room, esc func(string) string) string {
	if room.Class == "" {
		return ""
	}
	c, err := h.cfg.Store.Get(ctx, room.Class)
	if err != nil {
		return ""
	}
	n := 1 + slices.IndexFunc(h.cfg.Deps.Rooms.Store().OfClass(c.ID), func(r rooms.Room) bool { return r.ID == room.ID })
	return roomTitle(c, n, room, esc)
}

// jsonError answers code with msg, which says what to do next, as the
// classes' JSON routes answer: {"error": msg} (httperr.JSON).
func jsonError(w http.ResponseWriter, code int, msg string) {
	httperr.JSON(w, httperr.New(code, msg))
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}
