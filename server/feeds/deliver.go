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
	if f.tentative != 0 && (sh.lines < 0 || end > f.tentative) {
		if h.Get(hdrOrigin) == l.origin && sh.first == f.tentative {
			// The lines shown, stored: recorded now, before the messages
			// after them (the PubAck may come later).
			l.confirmLocked(f, sh.first, msg)
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
// A stored message is shown and recorded at once. Lines this replica
// stores itself are shown while JetStream stores them, and recorded from
// its PubAck: browsers do not wait for the store's round trip, which under
// load was most of a line's way from relay to browser. Lines shown so are
// tentative until recorded; if the store refuses them (another replica
// stored lines in their place, which its consumer then delivers), they are
// taken back (hub.Rewind, and each browser that had them is told).

// deliverLocked shows and records lines, the first of which is the feed's
// line first, stored in stream message msg. f.mu is held.
func (l *Service) deliverLocked(f *feed, first, msg uint64, lines []relay.Line, demo bool) {
	l.takeBackLocked(f) // none are tentative here but lines refused
	if skip := l.showLocked(f, first, lines, demo); skip < len(lines) {
		l.recordShownLocked(f, first+uint64(skip), msg, lines[skip:], demo)
	}
	f.storedTo.Store(f.hub.Next())
}

// showTentativeLocked shows lines before JetStream acknowledged them,
// when the hub has every line before them and nothing else is tentative,
// and reports whether it did. f.mu is held.
func (l *Service) showTentativeLocked(f *feed, first uint64, lines []relay.Line, demo bool) bool {
	if f.tentative != 0 || f.hub.Next() != first || len(lines) == 0 {
		return false
	}
	f.tentative, f.tentativeIn, f.tentativeDemo = first, lines, demo
	l.showLocked(f, first, lines, demo)
	return true
}

// confirmLocked records the tentative lines shown from first, stored in
// stream message msg, and reports whether they were tentative still (not
// recorded or taken back since): from the PubAck, or from the consumer
// when it has the message first. f.mu is held.
func (l *Service) confirmLocked(f *feed, first, msg uint64) bool {
	if f.tentative != first || first == 0 {
		return false
	}
	lines, demo := f.tentativeIn, f.tentativeDemo
	f.tentative, f.tentativeIn = 0, nil
	l.recordShownLocked(f, first, msg, lines, demo)
	f.storedTo.Store(f.hub.Next())
	return true
}

// takeBackLocked takes back the tentative lines, if any: out of the hub,
// whose browsers are told, and out of what the classifier has seen (it
// starts anew from what is known of the feed). f.mu is held.
func (l *Service) takeBackLocked(f *feed) {
	if f.tentative == 0 {
		return
	}
	f.hub.Rewind(f.tentative)
	f.tentative, f.tentativeIn = 0, nil
	clear(f.lines)
	f.lines, f.cuts = f.lines[:0], f.cuts[:0]
	f.cls, f.clsReading = classify.New(nil).Stream(), false
	f.cls.SetVersion(f.version)
	f.refreshClassifier(l.reading)
}

// showLocked classifies the lines the hub does not have yet, the first of
// lines being the feed's line first, and publishes them to the hub under
// their sequence numbers. It returns how many it skipped (the hub had
// them); the classified lines stay in f.lines for recordShownLocked.
// f.mu is held.
func (l *Service) showLocked(f *feed, first uint64, lines []relay.Line, demo bool) (skip int) {
	f.refreshClassifier(l.reading)
	f.hub.SetNext(first)
	if next := f.hub.Next(); next > first {
		skip = int(min(next-first, uint64(len(lines))))
	}
	out, cuts := f.lines[:0], f.cuts[:0]
	for _, in := range lines[skip:] {
		line, cut := f.classify(in.Raw)
		out, cuts = append(out, line), append(cuts, cut)
	}
	f.lines, f.cuts = out, cuts
	f.publishToHub(out, cuts, demo)
	return skip
}

// recordShownLocked records the lines showLocked showed last (f.lines,
// classified from lines, the first the feed's line first, stored in stream
// message msg): what fired (fired.go), where a journal resumes, the
// kubelet's version, the counters. f.mu is held.
func (l *Service) recordShownLocked(f *feed, first, msg uint64, lines []relay.Line, demo bool) {
	out := f.lines
	defer func() { clear(out); f.lines, f.cuts = out[:0], f.cuts[:0] }()
	version, startup := f.version, false
	var sites *classify.Sites // the log sites the version is told by, while it is not known
	if !demo && f.versionFrom != fromStartup {
		sites = l.logSites()
	}
	for i := range out {
		line, in := &out[i], lines[i]
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
	l.prunePerhapsLocked(f)
	if !demo && f.demoStop != nil && f.isReady() {
		f.relayElsewhere()
	}
	if !demo && len(out) > 0 {
		f.real += uint64(len(out))
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
func (f *feed) publishToHub(lines []classify.Line, cuts []bool, demo bool) {
	first := f.hub.Next()
	data := f.entries[:0]
	for i := range lines {
		f.scratch = appendEntry(f.scratch[:0], first+uint64(i), &lines[i], demo, cuts[i])
		data = append(data, f.keep(f.scratch))
	}
	if cap(f.scratch) > 4*arenaSize {
		f.scratch = nil
	}
	f.hub.PublishN(len(data), func(i int, seq uint64) []byte {
		if seq != first+uint64(i) { // cannot happen while ingest is the only publisher
			return appendEntry(nil, seq, &lines[i], demo, cuts[i])
		}
		return data[i]
	})
	clear(data)
	f.entries = data[:0]
}
