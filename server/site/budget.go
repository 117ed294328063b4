package site

// What one client may have fetched: a tag no one has read before costs a
// download of its module zip (about 30 MB) through the module proxy, so
// each client gets a few an hour. A tag in memory or in the disk cache
// costs nothing and is always served.

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/clients"
)

// DefaultNewTagsPerHour is Config.NewTagsPerHour's default: a reader
// comparing a few tags, or a class whose one address (a NAT) opens the
// tags of its clusters, stays well within it; a history page's minor
// releases, chosen by the server, do not count.
const DefaultNewTagsPerHour = 20

// perClientLoads is how many of the MaxLoading places one client's new
// tags may hold at once: a few, so that no one client fills them and the
// others' new tags wait behind it.
const perClientLoads = max(2, MaxLoading/8)

// budget counts, per client, the new tags each had fetched within the
// last window, up to max, and the loads of them under way, up to
// perClientLoads.
type budget struct {
	max    int
	window time.Duration

	mu      sync.Mutex
	taken   map[string][]time.Time       // by client, oldest first
	loading map[string][]<-chan struct{} // by client: each load's done, nil while reserved
}

func newBudget(max int, window time.Duration) *budget {
	return &budget{max: max, window: window, taken: map[string][]time.Time{}, loading: map[string][]<-chan struct{}{}}
}

// take counts one more for client at now; when client took max within
// the window, it counts nothing and says how long until one is free.
func (b *budget) take(client string, now time.Time) (retry time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.takeLocked(client, now)
}

func (b *budget) takeLocked(client string, now time.Time) (retry time.Duration, ok bool) {
	if len(b.taken) > 4096 { // forget the clients whose window has passed
		for c, ts := range b.taken {
			if now.Sub(ts[len(ts)-1]) >= b.window {
				delete(b.taken, c)
			}
		}
	}
	ts := b.taken[client]
	for len(ts) > 0 && now.Sub(ts[0]) >= b.window {
		ts = ts[1:]
	}
	if len(ts) >= b.max {
		b.taken[client] = ts
		return ts[0].Add(b.window).Sub(now), false
	}
	b.taken[client] = append(ts, now)
	return 0, true
}

// reserve takes for client one new tag of its budget and one place among
// the loads, atomically: so that a client's many requests at once cannot
// all pass the checks before any load is counted. hold or unreserve must
// follow. It reports the client's loads under way when they are too many.
// Uncharged, it takes only the place (a history page's minor releases).
func (b *budget) reserve(client string, now time.Time, charge bool) (retry time.Duration, busy int, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.loading) > 4096 { // forget the clients whose loads are done
		for c, ls := range b.loading {
			if !slices.ContainsFunc(ls, func(done <-chan struct{}) bool { return done == nil || !isDone(done) }) {
				delete(b.loading, c)
			}
		}
	}
	ls := b.loading[client][:0]
	for _, done := range b.loading[client] {
		if done == nil || !isDone(done) {
			ls = append(ls, done)
		}
	}
	if len(ls) == 0 {
		delete(b.loading, client)
	} else {
		b.loading[client] = ls
	}
	if len(ls) >= perClientLoads {
		return 0, len(ls), false
	}
	if charge {
		if retry, ok := b.takeLocked(client, now); !ok {
			return retry, 0, false
		}
	}
	b.loading[client] = append(ls, nil)
	return 0, 0, true
}

// hold counts the load whose done is given in the place reserve took.
func (b *budget) hold(client string, done <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if i := slices.Index(b.loading[client], nil); i >= 0 {
		b.loading[client][i] = done
	}
}

// unreserve gives back what reserve took when no load was started.
func (b *budget) unreserve(client string, charged bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if ts := b.taken[client]; charged && len(ts) > 0 {
		b.taken[client] = ts[:len(ts)-1]
	}
	if i := slices.Index(b.loading[client], nil); i >= 0 {
		b.loading[client] = slices.Delete(b.loading[client], i, i+1)
	}
}

// tagRefusal says why a tag's load was not started for a client, as a
// status, when to retry, and a page's words.
type tagRefusal struct {
	busy                     bool // the client's places are taken: it waits its turn
	status                   int
	retry                    time.Duration
	heading, message, advice string
}

func (e *tagRefusal) Error() string { return e.message + " " + e.advice }

// fetch returns tag's state for client, starting its load when none is
// under way. A tag held or cached on disk costs nothing. A tag no one has
// read here costs one of the client's Config.NewTagsPerHour, and holds one
// of its perClientLoads places until it is read; and no tag is taken while
// MaxLoading are being read. The caller has checked the tag.
func (s *Site) fetch(client, tag string) (*tagState, *tagRefusal) {
	return s.fetchAs(client, tag, true)
}

// historyClient is whom a history page's minor releases are fetched for:
// chosen by the server, they cost no reader's new tags, but hold no more
// of the load places than one client's.
const historyClient = "(history)"

// fetchAs is fetch, charged to client's new tags an hour or not.
func (s *Site) fetchAs(client, tag string, charge bool) (*tagState, *tagRefusal) {
	if s.known(tag) {
		if st := s.state(tag); st != nil {
			return st, nil
		}
		return nil, s.fullRefusal(tag)
	}
	retry, busy, ok := s.newTags.reserve(client, time.Now(), charge)
	switch {
	case busy > 0:
		return nil, &tagRefusal{
			busy:    true,
			status:  http.StatusTooManyRequests,
			retry:   10 * time.Second,
			heading: "Your address is fetching tags already",
			message: fmt.Sprintf("This server reads at most %d tags no one has read here before at once for one address, and yours has %d being read; %s waits its turn.", perClientLoads, busy, tag),
			advice:  "Try again once those are ready (a few seconds to a minute each), or read a tag already cached.",
		}
	case !ok:
		return nil, s.spentRefusal(tag, retry)
	}
	st := s.state(tag)
	if st == nil {
		s.newTags.unreserve(client, charge)
		return nil, s.fullRefusal(tag)
	}
	s.newTags.hold(client, st.done)
	return st, nil
}

func (s *Site) fullRefusal(tag string) *tagRefusal {
	return &tagRefusal{
		status:  http.StatusServiceUnavailable,
		retry:   30 * time.Second,
		heading: "Too many tags at once",
		message: fmt.Sprintf("This server is fetching %d tags and cannot take %s now.", MaxLoading, tag),
		advice:  "Try again in a minute, or read a tag already cached.",
	}
}

// known reports whether tag costs no download: it is held, the default,
// or cached on disk.
func (s *Site) known(tag string) bool {
	s.mu.Lock()
	st := s.tags[tag]
	// A failed load tried again is a fetch; one failed recently is not.
	held := st != nil && (!isDone(st.done) || st.err == nil || time.Since(st.failed) < errorTTL[permanent(st.err)])
	s.mu.Unlock()
	if held || tag == s.cfg.DefaultTag {
		return true
	}
	_, cached := extractor.Cached(s.options(tag))
	return cached
}

// client is who r counts against.
func (s *Site) client(r *http.Request) string {
	if s.cfg.Identify != nil {
		return s.cfg.Identify(r)
	}
	return clients.Identify{}.Client(r)
}

// fetched is fetch for r's client; when it is refused, it answers with
// the refusal's page and returns nil.
func (s *Site) fetched(w http.ResponseWriter, r *http.Request, tag string) *tagState {
	st, no := s.fetch(s.client(r), tag)
	if no == nil {
		return st
	}
	s.refuseTag(w, r, tag, no)
	return nil
}

// refuseTag answers r with why tag is not fetched for it.
func (s *Site) refuseTag(w http.ResponseWriter, r *http.Request, tag string, no *tagRefusal) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(no.retry.Seconds()))))
	s.statusPage(w, r, no.status, pageData{Tag: tag, Heading: no.heading, Message: no.message, Advice: no.advice})
}

// spentRefusal says a client has had its new tags this hour; tag can be
// fetched after retry.
func (s *Site) spentRefusal(tag string, retry time.Duration) *tagRefusal {
	secs := math.Ceil(retry.Seconds())
	return &tagRefusal{
		status:  http.StatusTooManyRequests,
		retry:   time.Duration(secs) * time.Second,
		heading: "Too many new tags from your address",
		message: fmt.Sprintf("Reading a tag no one has read here before downloads its source (about 30 MB) through the Go module proxy, so this server fetches at most %d such tags an hour for one address, and yours has had them.", s.cfg.NewTagsPerHour),
		advice:  fmt.Sprintf("Tags already read here open at once (the tag switcher lists them); %s can be fetched in %v.", tag, (time.Duration(secs) * time.Second).Round(time.Second)),
	}
}
