package site

// What one client may have fetched: a tag no one has read before costs a
// download of its module zip (about 30 MB) through the module proxy, so
// each client gets a few an hour. A tag in memory or in the disk cache
// costs nothing and is always served.

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// DefaultNewTagsPerHour is Config.NewTagsPerHour's default: a reader
// comparing a few tags, or a class whose one address (a NAT) opens the
// tags of its clusters, stays well within it; a history page's minor
// releases, chosen by the server, do not count.
const DefaultNewTagsPerHour = 20

// unattributed is the client that what no request asked for counts
// against: a room's driver switching it to a tag.
const unattributed = "(no request)"

// budget counts, per client, what each took within the last window, up
// to max.
type budget struct {
	max    int
	window time.Duration

	mu    sync.Mutex
	taken map[string][]time.Time // by client, oldest first
}

func newBudget(max int, window time.Duration) *budget {
	return &budget{max: max, window: window, taken: map[string][]time.Time{}}
}

// take counts one more for client at now; when client took max within
// the window, it counts nothing and says how long until one is free.
func (b *budget) take(client string, now time.Time) (retry time.Duration, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
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

// admit reports whether client may have tag: always when the tag is held
// or cached on disk, else when the client has fetched fewer than
// Config.NewTagsPerHour tags in the last hour; when not, how long until
// it may.
func (s *Site) admit(client, tag string) (retry time.Duration, ok bool) {
	if s.known(tag) {
		return 0, true
	}
	return s.newTags.take(client, time.Now())
}

// known reports whether tag costs no download: it is held, the default,
// or cached on disk.
func (s *Site) known(tag string) bool {
	s.mu.Lock()
	_, held := s.tags[tag]
	s.mu.Unlock()
	if held || tag == s.cfg.DefaultTag {
		return true
	}
	_, cached := extractor.Cached(s.options(tag))
	return cached
}

// client is who r counts against.
func (s *Site) client(r *http.Request) string {
	if s.cfg.ClientAddr != nil {
		return s.cfg.ClientAddr(r)
	}
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// admitted is admit for r's client; when it is not, it answers 429 with
// when to retry, and reports false.
func (s *Site) admitted(w http.ResponseWriter, r *http.Request, tag string) bool {
	retry, ok := s.admit(s.client(r), tag)
	if ok {
		return true
	}
	secs := int(math.Ceil(retry.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	s.statusPage(w, r, http.StatusTooManyRequests, pageData{
		Tag:     tag,
		Heading: "Too many new tags from your address",
		Message: fmt.Sprintf("Reading a tag no one has read here before downloads its source (about 30 MB) through the Go module proxy, so this server fetches at most %d such tags an hour for one address, and yours has had them.", s.cfg.NewTagsPerHour),
		Advice:  fmt.Sprintf("Tags already read here open at once (the tag switcher lists them); %s can be fetched in %v.", tag, (time.Duration(secs) * time.Second).Round(time.Second)),
	})
	return false
}
