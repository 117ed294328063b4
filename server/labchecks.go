package server

// The exercise's checks (package labcheck) for every room with a journal,
// kept up to date from the feeds' record of what fired: each feed's
// Checker is given the lines recorded since it last looked, case by case,
// so that a class's progress, asked for every few seconds, reads only
// what is new.

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/labcheck"
)

const (
	// labBatch is how many lines of a case one read takes, and labBudget
	// how many one look at a feed reads at most (the rest at the next).
	labBatch, labBudget = 2000, 20000
	// labFew is how many lines of a case read only for its V level one
	// read takes.
	labFew = 64
	// labIdle is how long a feed's checks are kept unasked.
	labIdle = time.Hour
)

// labChecks holds each feed's Checker.
type labChecks struct {
	feeds   *feeds.Service
	reading func(tag string) *extractor.Reading
	mu      sync.Mutex
	by      map[string]*labState
}

// labState is one feed's checks and how far they have read.
type labState struct {
	mu      sync.Mutex
	pod     string
	reading *extractor.Reading
	c       *labcheck.Checker
	after   map[string]uint64 // per case, the last line given to c
	seen    map[string]int    // per case, how many of the record's lines c has had
	used    time.Time
}

// labRank orders the cases: 0 for those whose every line the checks
// look at (config's ADD and REMOVE, liveness's failures), 1 for the rest.
func labRank(key string) int {
	if key == "config" || key == "liveness" {
		return 0
	}
	return 1
}

func newLabChecks(f *feeds.Service, reading func(tag string) *extractor.Reading) *labChecks {
	return &labChecks{feeds: f, reading: reading, by: map[string]*labState{}}
}

func (lc *labChecks) state(feed string, now time.Time) *labState {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for k, st := range lc.by {
		st.mu.Lock()
		idle := now.Sub(st.used) > labIdle
		st.mu.Unlock()
		if idle && k != feed {
			delete(lc.by, k)
		}
	}
	st := lc.by[feed]
	if st == nil {
		st = &labState{}
		lc.by[feed] = st
	}
	return st
}

// Check is the exercise checked on feed's journal (read at tag) for pod.
func (lc *labChecks) Check(ctx context.Context, feed, tag, pod string) labcheck.Result {
	reading := lc.reading(tag)
	counts := lc.feeds.FeedFired(feed)
	st := lc.state(feed, time.Now())
	st.mu.Lock()
	defer st.mu.Unlock()
	st.used = time.Now()
	reset := st.c == nil || st.pod != pod || st.reading != reading
	for k, n := range st.seen {
		// Fewer lines than given: the record was pruned or classified
		// anew; read it again.
		reset = reset || counts[k] < n
	}
	if reset {
		st.pod, st.reading = pod, reading
		st.c = labcheck.New(pod, feed, reading)
		st.after, st.seen = map[string]uint64{}, map[string]int{}
	}
	budget := labBudget
	// The cases the checks read whole first; then the others only for
	// their V levels: until a line proves -v=4, and then only their lines
	// before it (at -v=4 the first SYNC or housekeeping line proves it,
	// so an hour's journal costs a line or two of them). The proof is
	// the journal's earliest V(4) line, as labcheck.Journal's.
	keys := make([]string, 0, len(counts))
	for key := range counts {
		keys = append(keys, key)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(labRank(a), labRank(b)), cmp.Compare(a, b)) })
	for _, key := range keys {
		n, whole := counts[key], labRank(key) == 0
		for st.seen[key] < n && budget > 0 {
			batch, before := min(labBatch, budget), uint64(0)
			if !whole {
				batch, before = min(labFew, budget), st.c.Verbose()
			}
			last, more, err := lc.feeds.RecordedLines(ctx, feed, key, st.after[key], before, batch, func(seq uint64, line *classify.Line) {
				st.c.Add(&labcheck.Line{Seq: seq, Line: *line})
			})
			if err != nil {
				return st.c.Result() // read again at the next look
			}
			budget -= batch
			st.after[key] = last
			if !more {
				st.seen[key] = n // (lines past the proof need not be read)
			}
		}
	}
	return st.c.Result()
}
