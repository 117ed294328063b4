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
	if sh.lines >= 0 && sh.first+uint64(sh.lines) <= f.hub.Next() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if sh.lines >= 0 && sh.first+uint64(sh.lines) <= f.hub.Next() {
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

// deliverLocked classifies lines, the first of which is the feed's line
// first, stored in stream message msg, publishes those the hub does not
// have yet under their stored sequence numbers, and records those of a
// case (fired.go). f.mu is held.
func (l *Service) deliverLocked(f *feed, first, msg uint64, lines []relay.Line, demo bool) {
	f.refreshClassifier(l.reading)
	f.hub.SetNext(first)
	next := f.hub.Next()
	out, cuts := f.lines[:0], f.cuts[:0]
	defer func() { clear(out); f.lines, f.cuts = out[:0], cuts[:0] }()
	version, startup := f.version, false
	var sites *classify.Sites // the log sites the version is told by, while it is not known
	if !demo && f.versionFrom != fromStartup {
		sites = l.logSites()
	}
	for i, in := range lines {
		if first+uint64(i) < next { // delivered already
			continue
		}
		line, cut := f.classify(in.Raw)
		// The classifier has parsed the entry already: an id that is the
		// entry's own journald cursor is where a journal command resumes.
		if line.Cursor != "" && line.Cursor == in.ID {
			f.lastCursor = in.ID
		}
		if line.Version != "" {
			version, startup = line.Version, true
		}
		if !demo {
			l.recordLocked(f, first+uint64(i), msg, &line, in.Raw)
			l.observeLocked(f, &line, sites)
		}
		out, cuts = append(out, line), append(cuts, cut)
	}
	l.prunePerhapsLocked(f)
	if !demo && f.demoStop != nil && f.isReady() {
		f.relayElsewhere()
	}
	f.publishToHub(out, cuts, demo)
	for i := range out {
		f.byCase[out[i].Case]++
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
