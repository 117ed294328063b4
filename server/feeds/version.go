package feeds

// A feed's kubelet version, and the tag its lines are read at. The
// version comes from the kubelet's start-up line, or, when the journal
// began after it, from where its lines are logged: the log sites of every
// tag the site knows (classify.Sites). The feed then reads its lines at
// that tag (its Reading is loaded for it), unless it is a room's, which
// reads the room's tag; and the record of what fired is classified anew
// at it (fired.go).

import (
	"context"
	"slices"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/relay"
)

// kubeletVersion is what a feed knows of its kubelet's version; the
// feed's mu guards it.
type kubeletVersion struct {
	version string
	// from says how version was learned: fromStartup, fromLogSites; also
	// names the other tags whose log sites fit its lines.
	from       string
	also       []string
	guess      *classify.Guess // the version from log sites
	guessSites *classify.Sites // the index guess narrows
	reguessing bool            // a guess from the stored lines is under way
	reguessed  *classify.Sites // the index the last one used
}

// sitesEvery is how often the index of log sites looks for Readings the
// site loaded since.
const sitesEvery = 5 * time.Second

// logSites is the index of the log sites of the Readings the site knows
// (nil when it knows none, or the service was not told how to ask).
func (s *Service) logSites() *classify.Sites {
	if s.cfg.KnownReadings == nil {
		return nil
	}
	// Every feed asks for every group of lines it delivers, under its own
	// lock: they share the index without waiting for each other.
	s.sitesMu.RLock()
	sites, fresh := s.sites, s.sites != nil && time.Since(s.sitesAt) < sitesEvery
	s.sitesMu.RUnlock()
	if fresh {
		return sites
	}
	s.sitesMu.Lock()
	defer s.sitesMu.Unlock()
	if s.sites != nil && time.Since(s.sitesAt) < sitesEvery {
		return s.sites
	}
	s.sitesAt = time.Now()
	rs := s.cfg.KnownReadings()
	if len(rs) == 0 {
		return s.sites
	}
	if s.sites == nil || !sameTags(s.sites.Tags(), rs) {
		s.sites = classify.NewSites(rs)
	}
	return s.sites
}

// sameTags reports whether the Readings rs are of the tags an index was
// built from: the same count is not enough, as the site evicts one tag and
// loads another.
func sameTags(tags []string, rs []*extractor.Reading) bool {
	if len(tags) != len(rs) {
		return false
	}
	for _, r := range rs {
		if !slices.Contains(tags, r.Tag) {
			return false
		}
	}
	return true
}

// observeLocked takes a delivered (non-demo) line into the feed's guess
// at its kubelet's version, while no start-up line has named it; sites is
// s.logSites(), asked once per group. f.mu is held.
func (f *feed) observeLocked(line *classify.Line, sites *classify.Sites) {
	if f.kubelet.from == fromStartup || line.Caller == "" || sites == nil {
		return
	}
	if f.kubelet.guess == nil || f.kubelet.guessSites != sites {
		f.kubelet.guess, f.kubelet.guessSites = sites.NewGuess(), sites
	}
	f.kubelet.guess.Observe(line)
}

// settleVersionLocked names the kubelet's version from its log sites when
// no start-up line did, and makes the feed read its lines at the
// kubelet's tag. f.mu is held.
func (f *feed) settleVersionLocked() {
	if f.kubelet.from != fromStartup && f.kubelet.guess != nil {
		if tag, ok := f.kubelet.guess.Tag(f.tag); ok {
			also := slices.DeleteFunc(f.kubelet.guess.Candidates(), func(t string) bool { return t == tag })
			if tag != f.kubelet.version || !slices.Equal(also, f.kubelet.also) {
				f.kubelet.version, f.kubelet.from, f.kubelet.also = tag, fromLogSites, also
				f.cls.SetVersion(tag)
				f.changed()
			}
		}
	}
	tag := classify.VersionTag(f.kubelet.version)
	if tag == "" || tag == f.tag || f.pinned || isTagDemo(f.name) || f.src.kind == sourceDemo {
		return
	}
	f.tag = tag
	f.newClassifier()
	if f.svc.cfg.LoadTag != nil {
		f.svc.cfg.LoadTag(tag)
	}
	f.refreshClassifier(f.svc.reading)
	f.changed()
}

// reguessLines bounds the stored lines a guess is made anew from.
const reguessLines = 50000

// reguessPerhapsLocked tells the kubelet's version anew from the feed's
// stored lines when the index of log sites changed since the guess began
// (the site loaded Readings meanwhile: a journal sent at once, before they
// were there, left nothing to guess by) and no start-up line named it.
// It runs in the background, once per index. f.mu is held.
func (f *feed) reguessPerhapsLocked() {
	if f.kubelet.from == fromStartup || f.kubelet.reguessing || !f.isReady() || f.hub.Next() <= 1 || f.src.kind == sourceDemo || isTagDemo(f.name) {
		return
	}
	sites := f.svc.logSites()
	if sites == nil || sites == f.kubelet.guessSites || sites == f.kubelet.reguessed {
		return
	}
	if !f.svc.enterBG() {
		return
	}
	f.kubelet.reguessing, f.kubelet.reguessed = true, sites
	upto := min(f.queue.storedTo.Load()-1, reguessLines) // the lines stored, not those only shown
	go func() {
		defer f.svc.bg.Done()
		g := sites.NewGuess()
		c := classify.New(nil) // callers and messages need no Reading
		ctx, cancel := context.WithTimeout(f.svc.ctx, time.Minute)
		defer cancel()
		err := f.scanStored(ctx, upto, func(_ uint64, sh storedHead, lines []relay.Line) {
			for i, in := range lines {
				if sh.first+uint64(i) <= upto && !sh.demo {
					line := c.ClassifyString(in.Raw)
					if line.Caller != "" {
						g.Observe(&line)
					}
				}
			}
		})
		f.mu.Lock()
		defer f.mu.Unlock()
		f.kubelet.reguessing = false
		if err != nil || f.kubelet.from == fromStartup {
			return
		}
		if f.kubelet.guessSites != sites || f.kubelet.guess == nil || f.kubelet.guess.Lines() < g.Lines() {
			f.kubelet.guess, f.kubelet.guessSites = g, sites
		}
		f.settleVersionLocked()
		f.refirePerhapsLocked()
	}()
}
