package feeds

// The record of what fired: per feed, per case of the loop, how many lines
// it logged, the first and the last, the pods they named, and where each
// line is stored (its feed sequence number and the stream message holding
// it). It is what proves a case's handler ran, for the whole life of the
// feed: the pane keeps only a tail, and at -v=4 noise pushes a case's
// lines out of it within a minute.
//
// It is built in deliverLocked, which every replica runs for every stored
// line, in the stream's order, exactly once (the publishing replica from
// its PubAck, the others and every restart from their ordered consumer,
// which starts at the stream's first message). So the record is derived
// from the stream alone: the same on every replica, rebuilt by a restart,
// and bounded by the feed's retention (prune drops what the stream no
// longer holds). Nothing is written anywhere: a KV copy would cost a round
// trip per classified line and could disagree with the stream it mirrors.
//
//	GET /feeds/{feed}/fired                  the record (JSON below)
//	GET /feeds/{feed}/fired/{case}/lines     the case's stored lines, as the
//	                                         feed socket sends them (NDJSON),
//	                                         read back from the stream by sequence
//
//	{"kubelet_version":"v1.33.0"|null,"version_from":"start-up line"|"log sites"|null,
//	 "read_at":"v1.33.0","cases":{"config":{"count":5,"first":ENTRY,"last":ENTRY,"pods":["default/p"]}}}
//	ENTRY: {"seq":N,"time":"…"|null,"raw":"<the line as the relay sent it>","cursor":"…"?}
//
// Demo lines never count: they are a simulated kubelet.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/relay"
)

// Where a feed's kubelet version was learned (FiredRecord.VersionFrom).
const (
	fromStartup  = "start-up line"
	fromLogSites = "log sites"
)

const (
	// maxFiredPods bounds the pods a case's record names.
	maxFiredPods = 256
	// pruneEvery is how many recorded lines go by between checks of what
	// the stream still holds.
	pruneEvery = 1 << 16
)

// firedEntry is one line of a case, as the record serves it.
type firedEntry struct {
	Seq    uint64     `json:"seq"`
	Time   *time.Time `json:"time"`
	Raw    string     `json:"raw"`
	Cursor string     `json:"cursor,omitempty"`
}

// firedLine is a case's first or last line as the record keeps it.
type firedLine struct {
	seq         uint64
	time        time.Time
	raw, cursor string
}

// entry is fl as served.
func (fl firedLine) entry() firedEntry {
	e := firedEntry{Seq: fl.seq, Raw: fl.raw, Cursor: fl.cursor}
	if !fl.time.IsZero() {
		t := fl.time
		e.Time = &t
	}
	return e
}

// firedAt is where a recorded line is stored: its feed sequence number and
// the stream message that holds it.
type firedAt struct{ seq, msg uint64 }

// firedCase is one case's record.
type firedCase struct {
	first, last firedLine
	pods        []string
	at          []firedAt // every line's place, in order
}

// firedLog is a feed's record of what fired, under a lock of its own: a
// leaf, taken under the feed's mu by the shown side that records, or
// alone by the record's readers (FeedFired, RecordedLines, the case's
// lines), who so never wait for delivery.
type firedLog struct {
	mu sync.Mutex
	firedRecord
}

// firedRecord is what a firedLog holds (and a rescan builds anew).
type firedRecord struct {
	cases    map[string]*firedCase
	sincePr  int  // lines recorded since the last prune
	pruning  bool // a prune is under way
	firstSeq uint64
	// by is the Reading the record's lines were classified against; stale
	// says some were classified against another (the feed's tag or its
	// Reading changed): the record is then classified anew (refire).
	by    *extractor.Reading
	stale bool
	// refire, while the record is classified anew, records the lines
	// delivered meanwhile; refireGen tells a finished one from one
	// started since.
	refire    *firedRecord
	refireGen int
	// vol is the volume reading's record (chains.go), labelled with
	// vol.by: another labeller than the feed's makes the record stale too.
	vol volRecord
	// any says a line was recorded (one may have been a volume line
	// before there was a labeller for it).
	any bool
}

// recordLocked records a delivered non-demo line. f.mu and f.fired.mu
// are held.
func (f *feed) recordLocked(seq, msg uint64, line *classify.Line, raw string) {
	r := &f.fired.firedRecord
	if by := f.cls.Reading(); by != r.by {
		if len(r.cases) > 0 {
			r.stale = true
		}
		r.by = by
	}
	if f.vols != r.vol.by {
		if r.any {
			r.stale = true
		}
		r.vol.by = f.vols
	}
	r.add(seq, msg, line, raw)
	if r.refire != nil {
		r.refire.add(seq, msg, line, raw)
	}
}

// merge appends the lines of later (all after r's) to r.
func (r *firedRecord) merge(later *firedRecord) {
	r.vol.merge(&later.vol)
	for key, lc := range later.cases {
		c := r.cases[key]
		if c == nil {
			if r.cases == nil {
				r.cases = make(map[string]*firedCase)
			}
			r.cases[key] = lc
			continue
		}
		c.last = lc.last
		c.at = append(c.at, lc.at...)
		for _, p := range lc.pods {
			if len(c.pods) < maxFiredPods && !slices.Contains(c.pods, p) {
				c.pods = append(c.pods, p)
			}
		}
	}
}

// refirePerhapsLocked classifies the record anew, from the stream, when
// its lines were classified against another Reading than the feed's now
// (its tag changed to its kubelet's, or the Reading arrived after the
// first lines). It waits for the Reading, and for the stored history to
// be delivered. f.mu is held.
func (f *feed) refirePerhapsLocked() {
	f.fired.mu.Lock()
	defer f.fired.mu.Unlock()
	r := &f.fired.firedRecord
	if len(r.cases) > 0 && r.by != f.cls.Reading() || r.vol.by != f.vols && r.any {
		r.stale = true
	}
	// It waits for the Reading, unless the volume Reading is what came.
	if !r.stale || r.refire != nil || !f.clsReading && f.vols == nil || !f.isReady() || !f.svc.enterBG() {
		return
	}
	r.refireGen++
	// Up to the last line recorded: the lines shown but not yet stored
	// (deliver.go) are recorded into r.refire as they are.
	gen, upto := r.refireGen, f.queue.storedTo.Load()-1
	r.refire = &firedRecord{vol: volRecord{by: f.vols, keep: true}}
	reading, version, vols := f.cls.Reading(), f.kubelet.version, f.vols
	go func() {
		defer f.svc.bg.Done()
		cls := classify.New(reading).Stream()
		cls.SetVersion(version)
		next := firedRecord{by: reading, vol: volRecord{by: vols}}
		ctx, cancel := context.WithTimeout(f.svc.ctx, 5*time.Minute)
		defer cancel()
		err := f.scanStored(ctx, upto, func(msg uint64, sh storedHead, lines []relay.Line) {
			for i, in := range lines {
				if seq := sh.first + uint64(i); seq <= upto && !sh.demo {
					line := cls.ClassifyString(in.Raw)
					next.add(seq, msg, &line, in.Raw)
				}
			}
		})
		f.fired.mu.Lock()
		defer f.fired.mu.Unlock()
		if r.refireGen != gen {
			return
		}
		if err != nil {
			r.refire = nil // tried again with the next line
			if f.svc.ctx.Err() == nil {
				f.svc.log.Warn("feeds: classifying the record of what fired anew", "feed", f.name, "err", err)
			}
			return
		}
		next.merge(r.refire)
		next.firstSeq, next.refireGen = r.firstSeq, r.refireGen
		next.stale = r.by != reading || r.vol.by != vols // the classifier changed again meanwhile
		next.by, next.vol.by = r.by, r.vol.by
		*r = next
		f.changed()
	}()
}

// scanStored gives fn each stored message of the feed in order, decoded,
// up to the one holding the feed's line upto.
func (f *feed) scanStored(ctx context.Context, upto uint64, fn func(msg uint64, sh storedHead, lines []relay.Line)) error {
	if upto == 0 {
		return nil
	}
	it := f.svc.feedStream(f.name).reader(ctx, 0)
	defer it.close()
	for it.next() {
		m := it.msg()
		sh, err := m.head()
		if err != nil {
			return err
		}
		lines, err := m.lines()
		if err != nil {
			return err
		}
		fn(m.seq, sh, lines)
		if sh.first+uint64(len(lines)) > upto || m.pending == 0 {
			return nil
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return ctx.Err()
}

// add records a classified line: the feed's line seq, stored in stream
// message msg, sent by the relay as raw.
func (r *firedRecord) add(seq, msg uint64, line *classify.Line, raw string) {
	r.any = true
	r.vol.add(seq, msg, line, raw)
	if line.Case == "" {
		return
	}
	if r.cases == nil {
		r.cases = make(map[string]*firedCase)
	}
	c := r.cases[line.Case]
	if c == nil {
		c = &firedCase{}
		r.cases[line.Case] = c
	}
	e := firedLine{seq: seq, time: line.Time, raw: raw, cursor: line.Cursor}
	if len(e.raw) > displayLimit {
		e.raw = cutUTF8(e.raw, displayLimit)
	}
	c.note(firedAt{seq, msg}, e, line.Pods)
	r.sincePr++
}

// note records one line of the case, stored at at, kept as e.
func (c *firedCase) note(at firedAt, e firedLine, pods []string) {
	if len(c.at) == 0 {
		c.first = e
	}
	c.last = e
	c.at = append(c.at, at)
	for _, p := range pods {
		if len(c.pods) < maxFiredPods && !slices.Contains(c.pods, p) {
			c.pods = append(c.pods, p)
		}
	}
}

// dropBefore forgets the lines before the feed's line seq (no longer
// stored). It returns, per case whose first line went, the place of its
// new first line, to be read back from the stream.
func (r *firedRecord) dropBefore(seq uint64) map[string]firedAt {
	if seq <= r.firstSeq {
		return nil
	}
	r.firstSeq = seq
	refirst := r.vol.dropBefore(seq, nil)
	return dropCasesBefore(r.cases, seq, "", refirst)
}

// dropCasesBefore forgets cases' lines before the feed's line seq, and
// adds to refirst (made when nil), under prefix and its key, the place of
// the new first line of each case whose first line went.
func dropCasesBefore(cases map[string]*firedCase, seq uint64, prefix string, refirst map[string]firedAt) map[string]firedAt {
	for key, c := range cases {
		i, _ := slices.BinarySearchFunc(c.at, seq, func(a firedAt, s uint64) int { return cmp.Compare(a.seq, s) })
		if i == 0 {
			continue
		}
		c.at = slices.Delete(c.at, 0, i)
		if len(c.at) == 0 {
			delete(cases, key)
			continue
		}
		if refirst == nil {
			refirst = make(map[string]firedAt)
		}
		refirst[prefix+key] = c.at[0]
	}
	return refirst
}

// FiredCase is one case of FiredRecord.
type FiredCase struct {
	Count int        `json:"count"`
	First firedEntry `json:"first"`
	Last  firedEntry `json:"last"`
	Pods  []string   `json:"pods"`
}

// FiredRecord is what GET /feeds/{feed}/fired answers.
type FiredRecord struct {
	KubeletVersion *string              `json:"kubelet_version"`
	VersionFrom    *string              `json:"version_from"`
	ReadAt         string               `json:"read_at"`
	Cases          map[string]FiredCase `json:"cases"`
}

// firedLocked is the feed's record as served. f.mu is held.
func (f *feed) firedLocked() FiredRecord {
	f.fired.mu.Lock()
	defer f.fired.mu.Unlock()
	out := FiredRecord{ReadAt: f.tag, Cases: make(map[string]FiredCase, len(f.fired.cases))}
	if f.kubelet.version != "" {
		v, from := f.kubelet.version, f.kubelet.from
		out.KubeletVersion = &v
		if from != "" {
			out.VersionFrom = &from
		}
	}
	for key, c := range f.fired.cases {
		out.Cases[key] = FiredCase{Count: len(c.at), First: c.first.entry(), Last: c.last.entry(), Pods: slices.Clone(c.pods)}
		if out.Cases[key].Pods == nil {
			fc := out.Cases[key]
			fc.Pods = []string{}
			out.Cases[key] = fc
		}
	}
	return out
}

// enterBG registers a goroutine the record starts while f.mu is held:
// s.enter would take s.mu, which is taken before a feed's mu elsewhere.
// bgMu is a leaf lock. False once the service closes.
func (s *Service) enterBG() bool {
	s.bgMu.Lock()
	defer s.bgMu.Unlock()
	if s.bgClosed {
		return false
	}
	s.bg.Add(1)
	return true
}

// closeBG waits for the record's goroutines (s.ctx is done: they end).
func (s *Service) closeBG() {
	s.bgMu.Lock()
	s.bgClosed = true
	s.bgMu.Unlock()
	s.bg.Wait()
}

// prunePerhapsLocked starts a prune of the feed's record when enough
// lines were recorded since the last. f.mu is held.
func (f *feed) prunePerhapsLocked() {
	f.fired.mu.Lock()
	defer f.fired.mu.Unlock()
	if f.fired.sincePr >= pruneEvery && !f.fired.pruning {
		f.fired.pruning, f.fired.sincePr = true, 0
		if f.svc.enterBG() {
			go func() {
				defer f.svc.bg.Done()
				ctx, cancel := context.WithTimeout(f.svc.ctx, publishTimeout)
				defer cancel()
				if err := f.pruneFired(ctx); err != nil && f.svc.ctx.Err() == nil {
					f.svc.log.Warn("feeds: pruning the record of what fired", "feed", f.name, "err", err)
				}
			}()
		} else {
			f.fired.pruning = false
		}
	}
}

// firstStored is the feed's sequence number of its first stored line (0:
// nothing stored).
func (f *feed) firstStored(ctx context.Context) (uint64, error) {
	info, err := f.stream.Info(ctx)
	if err != nil {
		return 0, err
	}
	if info.State.Msgs == 0 {
		return 0, nil
	}
	m, err := f.stream.GetMsg(ctx, info.State.FirstSeq)
	if err != nil {
		return 0, err
	}
	sh, err := readHead(m.Header)
	if err != nil {
		return 0, err
	}
	return sh.first, nil
}

// pruneFired drops from the record the lines the stream no longer holds
// (its limits evicted them), and reads back each case's new first line.
func (f *feed) pruneFired(ctx context.Context) error {
	defer func() {
		f.fired.mu.Lock()
		f.fired.pruning = false
		f.fired.mu.Unlock()
	}()
	first, err := f.firstStored(ctx)
	if err != nil || first == 0 {
		return err
	}
	f.fired.mu.Lock()
	refirst := f.fired.dropBefore(first)
	f.fired.mu.Unlock()
	for key, at := range refirst {
		var e firedLine
		err := f.readLines(ctx, []firedAt{at}, func(seq uint64, in relay.Line) error {
			line := classify.New(nil).ClassifyString(in.Raw)
			e = firedLine{seq: seq, time: line.Time, raw: in.Raw, cursor: line.Cursor}
			if len(e.raw) > displayLimit {
				e.raw = cutUTF8(e.raw, displayLimit)
			}
			return nil
		})
		if err != nil {
			return err
		}
		f.fired.mu.Lock()
		c := f.fired.cases[key]
		if part, ok := strings.CutPrefix(key, volKey); ok {
			c = f.fired.vol.parts[part]
		}
		if c != nil && len(c.at) > 0 && c.at[0] == at {
			c.first = e
		}
		f.fired.mu.Unlock()
	}
	return nil
}

// readLines reads the lines at the places given (in order) back from the
// feed's stream, one stream message at a time, and gives each to fn.
func (f *feed) readLines(ctx context.Context, at []firedAt, fn func(seq uint64, in relay.Line) error) error {
	var (
		lines []relay.Line
		unz   []byte
		cur   uint64 // the stream message lines holds
		first uint64 // its first line's feed sequence number
	)
	for _, a := range at {
		if a.msg != cur {
			var m *jetstream.RawStreamMsg
			err := broker.Retry(ctx, followWithin, func(ctx context.Context) error {
				var err error
				m, err = f.stream.GetMsg(ctx, a.msg)
				return err
			})
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				continue // evicted since
			}
			if err != nil {
				return fmt.Errorf("feed %s: message %d: %w", f.name, a.msg, err)
			}
			sh, err := readHead(m.Header)
			if err != nil {
				return fmt.Errorf("feed %s: message %d: %w", f.name, a.msg, err)
			}
			if lines, err = decodeStored(m.Header, m.Data, lines[:0], &unz); err != nil {
				return fmt.Errorf("feed %s: message %d: %w", f.name, a.msg, err)
			}
			cur, first = a.msg, sh.first
		}
		i := a.seq - first
		if a.seq < first || i >= uint64(len(lines)) {
			return fmt.Errorf("feed %s: line %d is not in message %d", f.name, a.seq, a.msg)
		}
		if err := fn(a.seq, lines[i]); err != nil {
			return err
		}
	}
	return nil
}

// HandleFired answers GET /feeds/{feed}/fired: the feed's record of what
// fired.
func (s *Service) HandleFired() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.admit(w, r, false, false) {
			return
		}
		f := s.storedFeedOr404(w, r)
		if f == nil {
			return
		}
		f.mu.Lock()
		f.refreshClassifier(s.reading)
		f.reguessPerhapsLocked()
		f.refirePerhapsLocked()
		rec := f.firedLocked()
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(rec)
	})
}

// storedFeedOr404 is the request's feed if the server has it; otherwise
// it answers 404 (or 503) and returns nil.
func (s *Service) storedFeedOr404(w http.ResponseWriter, r *http.Request) *feed {
	f, err := s.existingFeed(chi.URLParam(r, "feed"))
	if e := feedError(f, err); e != nil {
		httperr.Text(w, e)
		return nil
	}
	select { // the record is whole once the stored lines are delivered
	case <-f.ready:
	case <-r.Context().Done():
		return nil
	case <-time.After(followWithin):
		httperr.Text(w, errStillReading)
		return nil
	}
	return f
}

// classifyForDisplay classifies raw with cls and cuts what is kept of it
// for display.
func classifyForDisplay(cls *classify.Stream, raw string) (classify.Line, bool) {
	line := cls.ClassifyString(raw)
	if line.Format == classify.FormatJournalJSON {
		// The entry's JSON is not shown: its MESSAGE is Text, the fields
		// shown are Cursor, Host, PID and Ident. It was most of every
		// browser's copy of the line (a real entry is 1-2 KB, _CMDLINE
		// and all) and so of the feed's history; the feed's file keeps it.
		line.Raw = ""
	}
	cut := false
	if len(line.Raw) > displayLimit {
		line.Raw, cut = cutUTF8(line.Raw, displayLimit), true
	}
	if len(line.Message) > displayLimit {
		line.Message, cut = cutUTF8(line.Message, displayLimit), true
	}
	return line, cut
}

// FeedFired is how many lines of each case a journal (never the demo)
// fired in the named feed, from its record (fired.go), nil when none did.
func (s *Service) FeedFired(name string) map[string]int {
	s.mu.Lock()
	f := s.feeds[name]
	s.mu.Unlock()
	if f == nil || !f.isStarted() || f.startErr != nil {
		return nil
	}
	f.fired.mu.Lock()
	defer f.fired.mu.Unlock()
	if len(f.fired.cases) == 0 {
		return nil
	}
	out := make(map[string]int, len(f.fired.cases))
	for key, c := range f.fired.cases {
		out[key] = len(c.at)
	}
	return out
}
