package feeds

// Delivery: a stored message's lines, classified, into the feed's hub
// (its ring and fan-out to browsers), under their stored sequence numbers.

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/jsonstr"
	"github.com/syncloop/syncloop/server/relay"
)

// deliver gives the feed's hub the lines of a stored message it does not
// have yet: another replica's, or the history.
func (f *feed) deliver(m *streamMsg) {
	sh, err := m.head()
	if err != nil {
		f.svc.log.Warn("feeds: "+err.Error(), "feed", f.name)
		return
	}
	// Most messages this replica stored itself and gave its hub already:
	// told by the hub alone, without waiting for the feed's lock, which
	// ingest holds while it delivers them.
	end := sh.first + uint64(sh.lines)
	if sh.lines >= 0 && end <= f.queue.storedTo.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue.lines) > 0 && (sh.lines < 0 || end > f.queue.first) {
		if f.confirmLocked(m.header.Get(hdrOrigin), sh.first, m.seq, sh.demo) {
			// The lines shown, stored: recorded now, before the messages
			// after them (the PubAck may come later).
			return
		}
		// Another replica stored this message where lines shown here were
		// to go: they will be refused, and stored again after it.
		f.takeBackLocked()
	}
	if sh.lines >= 0 && end <= f.hub.Next() {
		return // delivered already: this replica stored it
	}
	lines, err := m.lines()
	if err != nil {
		f.svc.log.Warn("feeds: a stored message that cannot be read", "feed", f.name, "err", err)
		return
	}
	f.deliverLocked(sh.first, m.seq, lines, sh.demo)
}

// A line's delivery has two steps: shown (classified and published to
// the hub, so browsers have it) and recorded (what fired, the kubelet's
// version, the counters: what must follow the stream's order exactly).
// A stored message is shown and recorded at once. Lines a relay sends to
// this replica are shown as they arrive (showArriving), before JetStream
// has stored them, and recorded once it has: browsers do not wait for the
// store's round trip, nor for the publish before it, which under load
// were most of a line's way from relay to browser. Lines shown so are
// tentative (feed.tentQ) until recorded, from the PubAck or from this
// replica's consumer, whichever has the message first. If the store
// refuses them (another replica stored lines in their place, which its
// consumer then delivers), or they are published otherwise than shown,
// they are taken back (hub.Rewind; each browser that had them is told),
// and shown again as they are stored.

// shownLine is a line shown to browsers: as the relay sent it, and classified.
type shownLine struct {
	in   relay.Line
	line classify.Line
	cut  bool
	part string // the volume reading's part it belongs to, when the feed labels them (chains.go)
}

// shownQueue is the lines shown to browsers before they are stored, in
// the order ingest publishes them; f.mu guards it.
type shownQueue struct {
	first uint64      // the feed's sequence number of lines[0]; 0 while there are none
	lines []shownLine // shown, not recorded
	// pub is the Syncloop-Origin of the message being published with the
	// first pubN lines: the one whose PubAck or copy from the follower
	// records them. "": none is.
	pub  string
	pubN int
	// storedTo is the hub's next sequence number as of the last line it
	// was given that is stored: every line before it is. Read without
	// the lock.
	storedTo atomic.Uint64
	// storedIDs is the ids of the lines stored, as the hub has them (as
	// feedTail keeps them); seen adds those shown before they are stored.
	storedIDs, seen feedTail
}

// deliverLocked shows and records lines, the first of which is the feed's
// line first, stored in stream message msg. f.mu is held.
func (f *feed) deliverLocked(first, msg uint64, lines []relay.Line, demo bool) {
	f.takeBackLocked() // none are tentative here but lines refused
	skip, shown := f.showLocked(first, lines, demo, f.buf.shown[:0])
	if len(shown) > 0 {
		f.recordShownLocked(first+uint64(skip), msg, shown, demo)
	}
	clear(shown)
	f.buf.shown = shown[:0]
	// A stored message may move the hub past lines it never had (SetNext):
	// none of those is waited for either.
	f.queue.storedTo.Store(f.hub.Next())
}

// publishing makes lines, about to be published from the feed's line
// first in the message whose Syncloop-Origin is pub, tentative, and
// reports whether they are (showTentativeLocked).
func (f *feed) publishing(pub string, first uint64, lines []relay.Line, demo bool) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.showTentativeLocked(pub, first, lines, demo)
}

// refused takes back the lines shown for the message pub, which the
// store refused, unless they were taken back meanwhile.
func (f *feed) refused(pub string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.queue.pub == pub {
		f.takeBackLocked()
	}
}

// published records lines stored from the feed's line first in stream
// message msg, published as pub: shown already (the PubAck records
// them), or shown now if the hub has every line before them; otherwise
// the follower delivers them.
func (f *feed) published(pub string, first, msg uint64, lines []relay.Line, demo bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// Counted as stored here, where it is stored: the metric is this
	// replica's, and up to date once the relay has its ack.
	f.counts.ingested += uint64(len(lines))
	if !f.confirmLocked(pub, first, msg, demo) && f.hub.Next() == first {
		f.deliverLocked(first, msg, lines, demo)
	}
}

// showArrivingLocked shows a relay's lines as they arrive, before they
// are stored, when the hub has every line stored before them (and those
// shown before them): numbered from the hub's next, they are what ingest
// publishes next. Lines known to be stored already are left out, as
// ingest leaves them out. f.mu is held.
func (f *feed) showArrivingLocked(lines []relay.Line) {
	next := f.hub.Next()
	if len(f.queue.lines) == 0 && (next != f.queue.storedTo.Load() || !f.isReady()) {
		return // the consumer is catching up: ingest shows them once stored
	}
	keep := f.buf.arriving[:0]
	for _, in := range lines {
		if !f.queue.seen.stored(in.ID) {
			keep = append(keep, in)
			f.queue.seen.note(in.ID)
		}
	}
	if len(keep) > 0 {
		if len(f.queue.lines) == 0 {
			f.queue.first = next
		}
		_, f.queue.lines = f.showLocked(next, keep, false, f.queue.lines)
	}
	clear(keep)
	f.buf.arriving = keep[:0]
}

// showTentativeLocked makes lines, about to be published from the feed's
// line first in the message whose Syncloop-Origin is pub, tentative, and
// reports whether they are: the lines shown as they arrived, when they
// are what is published; or, when nothing is tentative and the hub has
// every line before them, shown now. Lines tentative but not these are
// taken back. f.mu is held.
func (f *feed) showTentativeLocked(pub string, first uint64, lines []relay.Line, demo bool) bool {
	if len(f.queue.lines) > 0 && f.queue.pub == "" && f.queue.first == first && len(f.queue.lines) >= len(lines) && sameLines(f.queue.lines, lines) {
		f.queue.pub, f.queue.pubN = pub, len(lines)
		return true
	}
	f.takeBackLocked()
	if f.hub.Next() != first || len(lines) == 0 {
		return false
	}
	f.queue.first, f.queue.pub, f.queue.pubN = first, pub, len(lines)
	_, f.queue.lines = f.showLocked(first, lines, demo, f.queue.lines)
	return true
}

// sameLines reports whether the first lines of shown are lines.
func sameLines(shown []shownLine, lines []relay.Line) bool {
	for i, in := range lines {
		if shown[i].in != in {
			return false
		}
	}
	return true
}

// confirmLocked records the tentative lines published in the message
// whose Syncloop-Origin is pub, from the feed's line first, stored in
// stream message msg, and reports whether they were tentative still (not
// recorded or taken back since): from the PubAck, or from the consumer
// when it has the message first. f.mu is held.
func (f *feed) confirmLocked(pub string, first, msg uint64, demo bool) bool {
	if pub == "" || f.queue.pub != pub || f.queue.first != first {
		return false
	}
	n := f.queue.pubN
	f.queue.pub, f.queue.pubN = "", 0
	f.recordShownLocked(first, msg, f.queue.lines[:n], demo)
	// The lines shown since stay, moved to the front: the queue keeps its
	// array (sliced from the front, it would be copied anew as it grew).
	k := copy(f.queue.lines, f.queue.lines[n:])
	clear(f.queue.lines[k:])
	f.queue.lines, f.queue.first = f.queue.lines[:k], first+uint64(n)
	if k == 0 {
		f.queue.first = 0
	}
	return true
}

// takeBackLocked takes back the tentative lines, if any: out of the hub,
// whose browsers are told, and out of what the classifier and the id
// filter have seen (they start anew from what is stored). f.mu is held.
func (f *feed) takeBackLocked() {
	if len(f.queue.lines) == 0 {
		return
	}
	f.hub.Rewind(f.queue.first)
	clear(f.queue.lines)
	f.queue.lines, f.queue.first, f.queue.pub, f.queue.pubN = f.queue.lines[:0], 0, "", 0
	f.queue.seen = f.queue.storedIDs.clone()
	f.newClassifier()
	f.refreshClassifier(f.svc.reading)
}

// showLocked classifies the lines the hub does not have yet, the first of
// lines being the feed's line first, publishes them to the hub under
// their sequence numbers, and appends them to dst. It returns how many it
// skipped (the hub had them). f.mu is held.
func (f *feed) showLocked(first uint64, lines []relay.Line, demo bool, dst []shownLine) (skip int, shown []shownLine) {
	f.refreshClassifier(f.svc.reading)
	f.hub.SetNext(first)
	if next := f.hub.Next(); next > first {
		skip = int(min(next-first, uint64(len(lines))))
	}
	n0 := len(dst)
	f.svc.refreshVolumesLocked(f)
	for _, in := range lines[skip:] {
		line, cut := f.classify(in.Raw)
		sl := shownLine{in: in, line: line, cut: cut}
		if f.vols != nil && !demo {
			if lb, ok := f.vols.Label(&sl.line); ok {
				sl.part = lb.Part
			}
		}
		dst = append(dst, sl)
	}
	f.publishToHub(dst[n0:], demo)
	return skip, dst
}

// recordShownLocked records lines shown, the first the feed's line first,
// stored in stream message msg: what fired (fired.go), the ids stored,
// where a journal resumes, the kubelet's version, the counters. f.mu is
// held.
func (f *feed) recordShownLocked(first, msg uint64, shown []shownLine, demo bool) {
	version, startup := f.kubelet.version, false
	f.svc.refreshVolumesLocked(f)
	var sites *classify.Sites // the log sites the version is told by, while it is not known
	if !demo && f.kubelet.from != fromStartup {
		sites = f.svc.logSites()
	}
	f.fired.mu.Lock()
	for i := range shown {
		line, in := &shown[i].line, shown[i].in
		f.queue.storedIDs.note(in.ID)
		f.queue.seen.note(in.ID)
		// The classifier has parsed the entry already: an id that is the
		// entry's own journald cursor is where a journal command resumes.
		if line.Cursor != "" && line.Cursor == in.ID {
			f.counts.lastCursor = in.ID
		}
		if line.Version != "" {
			version, startup = line.Version, true
		}
		if !demo {
			f.recordLocked(first+uint64(i), msg, line, in.Raw)
			f.observeLocked(line, sites)
		}
		f.counts.byCase[line.Case]++
	}
	f.fired.mu.Unlock()
	// Every line up to these is recorded (and stored): what classifying the
	// record anew reads from the stream (refirePerhapsLocked), and what the
	// consumer skips without the lock (deliver).
	f.queue.storedTo.Store(first + uint64(len(shown)))
	f.prunePerhapsLocked()
	if !demo && f.src.demoStop != nil && f.isReady() {
		f.relayElsewhere()
	}
	if !demo && len(shown) > 0 {
		f.counts.real += uint64(len(shown))
		f.counts.lastReal = time.Now()
		f.svc.cfg.Changed.Notify() // what fired changed: an instructor's overview shows it
	}
	if startup && (version != f.kubelet.version || f.kubelet.from != fromStartup) {
		f.kubelet.version, f.kubelet.from, f.kubelet.also = version, fromStartup, nil
		f.changed()
	}
	if !demo {
		f.settleVersionLocked()
		f.reguessPerhapsLocked()
	}
	f.refirePerhapsLocked()
}

func cutUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// appendEntry appends a line's message for browsers to b:
// {"seq":N,"line":{…},"demo":true?,"cut":true?,"part":"…"?,"lat":{…}?},
// part being the volume reading's part the line belongs to (what the pane
// on that reading's page labels it with), lat the line's stamps when in
// has them (latency.go): {"age":µs,"read":µs,"recv":µs}.
func appendEntry(b []byte, seq uint64, line *classify.Line, demo, cut bool, part string, in *relay.Line) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"line":`...)
	if lb, err := line.AppendJSON(b); err == nil {
		b = lb
	} else { // a time encoding/json refuses too: keep the text
		b, _ = (&classify.Line{Raw: line.Raw, Format: classify.FormatRaw, Verbosity: -1}).AppendJSON(b)
	}
	if demo {
		b = append(b, `,"demo":true`...)
	}
	if cut {
		b = append(b, `,"cut":true`...)
	}
	if part != "" {
		b = jsonstr.Append(append(b, `,"part":`...), part)
	}
	if in != nil && in.Recv != 0 {
		b = strconv.AppendInt(append(b, `,"lat":{"age":`...), in.Age, 10)
		b = strconv.AppendInt(append(b, `,"read":`...), in.Read, 10)
		b = strconv.AppendInt(append(b, `,"recv":`...), in.Recv, 10)
		b = append(b, '}')
	}
	return append(b, '}')
}

// arenaSize is the size of the blocks a feed's ring entries are cut from.
// One allocation per block instead of one per line: at a thousand lines a
// second the ring's churn was a large share of the garbage collector's
// work. A block is freed once the ring has let go of its every entry.
const arenaSize = 64 << 10

// keep copies an encoded entry into the feed's arena and returns the copy,
// whose capacity ends where it does. f.mu is held.
func (f *feed) keep(b []byte) []byte {
	if len(b) > arenaSize/8 {
		return bytes.Clone(b)
	}
	if len(f.buf.arena)+len(b) > cap(f.buf.arena) {
		f.buf.arena = make([]byte, 0, arenaSize)
	}
	i := len(f.buf.arena)
	f.buf.arena = append(f.buf.arena, b...)
	return f.buf.arena[i:len(f.buf.arena):len(f.buf.arena)]
}

// publishToHub encodes lines for browsers and publishes them to the feed's
// hub (its ring and fan-out). f.mu is held:
// ingest is the hub's only publisher, so the sequence numbers the hub
// assigns are known before it does.
func (f *feed) publishToHub(lines []shownLine, demo bool) {
	first := f.hub.Next()
	data := f.buf.entries[:0]
	for i := range lines {
		f.buf.scratch = appendEntry(f.buf.scratch[:0], first+uint64(i), &lines[i].line, demo, lines[i].cut, lines[i].part, &lines[i].in)
		data = append(data, f.keep(f.buf.scratch))
	}
	if cap(f.buf.scratch) > 4*arenaSize {
		f.buf.scratch = nil
	}
	f.hub.PublishNAt(len(data), func(i int, seq uint64) ([]byte, int64) {
		if seq != first+uint64(i) { // cannot happen while ingest is the only publisher
			return appendEntry(nil, seq, &lines[i].line, demo, lines[i].cut, lines[i].part, &lines[i].in), lines[i].in.Recv
		}
		return data[i], lines[i].in.Recv
	})
	clear(data)
	f.buf.entries = data[:0]
}
