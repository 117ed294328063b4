package feeds

// Delivery: a stored message's lines, classified, into the feed's hub
// (its ring and fan-out to browsers), under their stored sequence numbers.

import (
	"bytes"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/relay"
)

// deliver gives the feed's hub the lines of a stored message it does not
// have yet: another replica's, or the history.
func (l *Service) deliver(f *feed, msg uint64, h nats.Header, data []byte, unz *[]byte) {
	sh, err := readHead(h)
	if err != nil {
		l.log.Warn("live: "+err.Error(), "feed", f.name)
		return
	}
	// Most messages this replica stored itself and gave its hub already:
	// told by the hub alone, without waiting for the feed's lock, which
	// ingest holds while it delivers them.
	end := sh.first + uint64(sh.lines)
	if sh.lines >= 0 && end <= f.storedTo.Load() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.tentQ) > 0 && (sh.lines < 0 || end > f.tentative) {
		if l.confirmLocked(f, h.Get(hdrOrigin), sh.first, msg, sh.demo) {
			// The lines shown, stored: recorded now, before the messages
			// after them (the PubAck may come later).
			return
		}
		// Another replica stored this message where lines shown here were
		// to go: they will be refused, and stored again after it.
		l.takeBackLocked(f)
	}
	if sh.lines >= 0 && end <= f.hub.Next() {
		return // delivered already: this replica stored it
	}
	lines, err := decodeStored(h, data, f.decoded[:0], unz)
	if err != nil {
		l.log.Warn("live: a stored message that cannot be read", "feed", f.name, "err", err)
		return
	}
	l.deliverLocked(f, sh.first, msg, lines, sh.demo)
	clear(lines)
	f.decoded = lines[:0]
	if cap(*unz) > 2*msgBytes {
		*unz = nil
	}
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
}

// deliverLocked shows and records lines, the first of which is the feed's
// line first, stored in stream message msg. f.mu is held.
func (l *Service) deliverLocked(f *feed, first, msg uint64, lines []relay.Line, demo bool) {
	l.takeBackLocked(f) // none are tentative here but lines refused
	skip, shown := l.showLocked(f, first, lines, demo, f.shown[:0])
	if len(shown) > 0 {
		l.recordShownLocked(f, first+uint64(skip), msg, shown, demo)
	}
	clear(shown)
	f.shown = shown[:0]
	// A stored message may move the hub past lines it never had (SetNext):
	// none of those is waited for either.
	f.storedTo.Store(f.hub.Next())
}

// showArrivingLocked shows a relay's lines as they arrive, before they
// are stored, when the hub has every line stored before them (and those
// shown before them): numbered from the hub's next, they are what ingest
// publishes next. Lines known to be stored already are left out, as
// ingest leaves them out. f.mu is held.
func (l *Service) showArrivingLocked(f *feed, lines []relay.Line) {
	next := f.hub.Next()
	if len(f.tentQ) == 0 && (next != f.storedTo.Load() || !f.isReady()) {
		return // the consumer is catching up: ingest shows them once stored
	}
	keep := f.arriving[:0]
	for _, in := range lines {
		if !f.seen.stored(in.ID) {
			keep = append(keep, in)
			f.seen.note(in.ID)
		}
	}
	if len(keep) > 0 {
		if len(f.tentQ) == 0 {
			f.tentative = next
		}
		_, f.tentQ = l.showLocked(f, next, keep, false, f.tentQ)
	}
	clear(keep)
	f.arriving = keep[:0]
}

// showTentativeLocked makes lines, about to be published from the feed's
// line first in the message whose Syncloop-Origin is pub, tentative, and
// reports whether they are: the lines shown as they arrived, when they
// are what is published; or, when nothing is tentative and the hub has
// every line before them, shown now. Lines tentative but not these are
// taken back. f.mu is held.
func (l *Service) showTentativeLocked(f *feed, pub string, first uint64, lines []relay.Line, demo bool) bool {
	if len(f.tentQ) > 0 && f.tentPub == "" && f.tentative == first && len(f.tentQ) >= len(lines) && sameLines(f.tentQ, lines) {
		f.tentPub, f.tentPubN = pub, len(lines)
		return true
	}
	l.takeBackLocked(f)
	if f.hub.Next() != first || len(lines) == 0 {
		return false
	}
	f.tentative, f.tentPub, f.tentPubN = first, pub, len(lines)
	_, f.tentQ = l.showLocked(f, first, lines, demo, f.tentQ)
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
func (l *Service) confirmLocked(f *feed, pub string, first, msg uint64, demo bool) bool {
	if pub == "" || f.tentPub != pub || f.tentative != first {
		return false
	}
	n := f.tentPubN
	f.tentPub, f.tentPubN = "", 0
	l.recordShownLocked(f, first, msg, f.tentQ[:n], demo)
	// The lines shown since stay, moved to the front: the queue keeps its
	// array (sliced from the front, it would be copied anew as it grew).
	k := copy(f.tentQ, f.tentQ[n:])
	clear(f.tentQ[k:])
	f.tentQ, f.tentative = f.tentQ[:k], first+uint64(n)
	if k == 0 {
		f.tentative = 0
	}
	return true
}

// takeBackLocked takes back the tentative lines, if any: out of the hub,
// whose browsers are told, and out of what the classifier and the id
// filter have seen (they start anew from what is stored). f.mu is held.
func (l *Service) takeBackLocked(f *feed) {
	if len(f.tentQ) == 0 {
		return
	}
	f.hub.Rewind(f.tentative)
	clear(f.tentQ)
	f.tentQ, f.tentative, f.tentPub, f.tentPubN = f.tentQ[:0], 0, "", 0
	f.seen = f.storedIDs.clone()
	f.newClassifier()
	f.refreshClassifier(l.reading)
}

// showLocked classifies the lines the hub does not have yet, the first of
// lines being the feed's line first, publishes them to the hub under
// their sequence numbers, and appends them to dst. It returns how many it
// skipped (the hub had them). f.mu is held.
func (l *Service) showLocked(f *feed, first uint64, lines []relay.Line, demo bool, dst []shownLine) (skip int, shown []shownLine) {
	f.refreshClassifier(l.reading)
	f.hub.SetNext(first)
	if next := f.hub.Next(); next > first {
		skip = int(min(next-first, uint64(len(lines))))
	}
	n0 := len(dst)
	for _, in := range lines[skip:] {
		line, cut := f.classify(in.Raw)
		dst = append(dst, shownLine{in: in, line: line, cut: cut})
	}
	f.publishToHub(dst[n0:], demo)
	return skip, dst
}

// recordShownLocked records lines shown, the first the feed's line first,
// stored in stream message msg: what fired (fired.go), the ids stored,
// where a journal resumes, the kubelet's version, the counters. f.mu is
// held.
func (l *Service) recordShownLocked(f *feed, first, msg uint64, shown []shownLine, demo bool) {
	version, startup := f.version, false
	l.refreshVolumesLocked(f)
	var sites *classify.Sites // the log sites the version is told by, while it is not known
	if !demo && f.versionFrom != fromStartup {
		sites = l.logSites()
	}
	for i := range shown {
		line, in := &shown[i].line, shown[i].in
		f.storedIDs.note(in.ID)
		f.seen.note(in.ID)
		// The classifier has parsed the entry already: an id that is the
		// entry's own journald cursor is where a journal command resumes.
		if line.Cursor != "" && line.Cursor == in.ID {
			f.lastCursor = in.ID
		}
		if line.Version != "" {
			version, startup = line.Version, true
		}
		if !demo {
			l.recordLocked(f, first+uint64(i), msg, line, in.Raw)
			l.observeLocked(f, line, sites)
		}
		f.byCase[line.Case]++
	}
	// Every line up to these is recorded (and stored): what classifying the
	// record anew reads from the stream (refirePerhapsLocked), and what the
	// consumer skips without the lock (deliver).
	f.storedTo.Store(first + uint64(len(shown)))
	l.prunePerhapsLocked(f)
	if !demo && f.demoStop != nil && f.isReady() {
		f.relayElsewhere()
	}
	if !demo && len(shown) > 0 {
		f.real += uint64(len(shown))
		f.lastReal = time.Now()
	}
	if startup && (version != f.version || f.versionFrom != fromStartup) {
		f.version, f.versionFrom, f.versionAlso = version, fromStartup, nil
		f.changed()
	}
	if !demo {
		l.settleVersionLocked(f)
		l.reguessPerhapsLocked(f)
	}
	l.refirePerhapsLocked(f)
}

func cutUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// appendEntry appends a line's message for browsers to b:
// {"seq":N,"line":{…},"demo":true?,"cut":true?}.
func appendEntry(b []byte, seq uint64, line *classify.Line, demo, cut bool) []byte {
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
	if len(f.arena)+len(b) > cap(f.arena) {
		f.arena = make([]byte, 0, arenaSize)
	}
	i := len(f.arena)
	f.arena = append(f.arena, b...)
	return f.arena[i:len(f.arena):len(f.arena)]
}

// publishToHub encodes lines for browsers and publishes them to the feed's
// hub (its ring and fan-out). f.mu is held:
// ingest is the hub's only publisher, so the sequence numbers the hub
// assigns are known before it does.
func (f *feed) publishToHub(lines []shownLine, demo bool) {
	first := f.hub.Next()
	data := f.entries[:0]
	for i := range lines {
		f.scratch = appendEntry(f.scratch[:0], first+uint64(i), &lines[i].line, demo, lines[i].cut)
		data = append(data, f.keep(f.scratch))
	}
	if cap(f.scratch) > 4*arenaSize {
		f.scratch = nil
	}
	f.hub.PublishN(len(data), func(i int, seq uint64) []byte {
		if seq != first+uint64(i) { // cannot happen while ingest is the only publisher
			return appendEntry(nil, seq, &lines[i].line, demo, lines[i].cut)
		}
		return data[i]
	})
	clear(data)
	f.entries = data[:0]
}
