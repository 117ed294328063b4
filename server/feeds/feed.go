package feeds

// The feed: one named stream of lines, its state, and what browsers are
// told of it.

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/hub"
	"github.com/syncloop/syncloop/server/relay"
)

// source is what feeds a feed's lines. A feed starts with sourceNone; the
// transitions below are the only writers of a feed's source and note.
//
//	none ──claimDemo/startedDemo──► demo ──stopDemo──► none
//	none, demo ──relayAttached, relayElsewhere──► relay
//	none ──startedJournal──► journal
type source uint8

const (
	sourceNone    source = iota // nothing yet, or its demo stopped
	sourceDemo                  // a simulated kubelet (demo.go)
	sourceRelay                 // a relay (ingest.go), here or through another replica
	sourceJournal               // the server's own journal (journal.go)
)

// String is the source as browsers are told it (hello.source).
func (s source) String() string {
	switch s {
	case sourceDemo:
		return "demo"
	case sourceRelay:
		return "relay"
	case sourceJournal:
		return "journal"
	}
	return "none"
}

// What a feed's note says, when it says the same in several places.
const (
	noteDemo          = "Lines of a simulated kubelet at this tag's real log sites. Attach a relay (syncloop relay) to see a real journal."
	noteRelayAttached = "a relay attached: the demo feed stopped; what follows is a real journal"
	noteRelayGone     = "the relay disconnected; it resends what was not stored when it reconnects"
	noteJournalNow    = "A journal now feeds this server: the demo stopped. Reload the page to follow the journal."
	noteFileReplayed  = "the journal file was replayed to its end"
	noteDemoLetGo     = "an unwatched tag demo let go to make room for another"
)

// claimDemo claims a feed nothing feeds for the demo, and reports whether
// it did: of two browsers that ask at once, one starts the demo
// (startedDemo follows). f.mu is held.
func (f *feed) claimDemo() bool {
	if f.src.kind != sourceNone {
		return false
	}
	f.src.kind = sourceDemo
	return true
}

// startedDemo records the demo running into f, stopped by stop. f.mu is held.
func (f *feed) startedDemo(stop context.CancelFunc) {
	f.src.kind, f.src.demoStop, f.src.note = sourceDemo, stop, noteDemo
	f.changed()
}

// stopDemo stops the feed's demo, if it runs here, and leaves the feed
// to nothing, with note saying why. f.mu is held.
func (f *feed) stopDemo(note string) {
	if f.src.demoStop != nil {
		f.src.demoStop()
	}
	f.src.kind, f.src.demoStop, f.src.note = sourceNone, nil, note
	f.changed()
}

// relayAttached records one more relay on this replica; the demo stops
// for good on the first. f.mu is held.
func (f *feed) relayAttached() {
	f.src.relays++
	f.src.note = ""
	if f.src.demoStop != nil {
		f.src.demoStop()
		f.src.demoStop = nil
		f.src.note = noteRelayAttached
	}
	f.src.kind = sourceRelay
	f.changed()
}

// relayDetached records one relay fewer on this replica: finished, its
// journal ended cleanly with the feed holding stored lines, or gone.
// f.mu is held.
func (f *feed) relayDetached(finished bool, stored uint64) {
	f.src.relays--
	if f.src.relays == 0 {
		f.src.note = noteRelayGone
		if finished {
			f.src.note = "relay finished: " + thousands(stored) + " lines"
		}
	}
	f.changed()
}

// thousands writes n with a comma between each three digits: 20,363.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// relayElsewhere stops the demo running here because a relay's lines
// reached the feed through another replica. f.mu is held.
func (f *feed) relayElsewhere() {
	f.src.demoStop()
	f.src.kind, f.src.demoStop, f.src.note = sourceRelay, nil, noteRelayAttached
	f.changed()
}

// startedJournal records the server's own journal (what: "journal
// command", "journal file") feeding f. f.mu is held.
func (f *feed) startedJournal(what string) {
	f.src.kind, f.src.note = sourceJournal, "fed by the server's "+what
	f.changed()
}

// journalReplayed records that the journal file was read to its end. f.mu is held.
func (f *feed) journalReplayed() {
	f.src.note = noteFileReplayed
	f.changed()
}

// ownerWaiting takes its owner's notes (Owned) and says, on an owned feed
// nothing feeds yet that has no note, what its owner waits for
// (waiting); stored: the feed has lines from before (history). f.mu is
// held.
func (f *feed) ownerWaiting(waiting, history string, stored bool) {
	f.src.waiting, f.src.history = waiting, history
	note := f.src.waiting
	if stored {
		// The feed's history came back from its file after a restart.
		note = f.src.history
	}
	if f.src.kind != sourceNone || f.src.note != "" || note == "" {
		return
	}
	f.src.note = note
	f.changed()
}

// feed is one named stream of lines: its stream, this replica's writer
// of it (pub), its hub, and what the shown side knows of it, each part
// a type of its own. Locks, in the order they are taken: pub.mu (the
// publisher), mu (the shown side: everything below it), fired.mu (the
// record of what fired, a leaf).
type feed struct {
	svc    *Service // what it belongs to: the Readings, the log sites, the logger, the goroutines
	name   string
	hub    *hub.Hub
	stream jetstream.Stream // its JetStream stream; set before started is closed
	gone   atomic.Bool      // let go by DropFeed: its browsers are told so
	status atomic.Uint64    // bumped when statusMsg would change
	asked  time.Time        // when Service.feed last returned it; guarded by Service.mu
	// started is closed once the feed's stream is followed (or could not
	// be: startErr); until then the feed is a placeholder in Service.feeds,
	// which holds its name while JetStream is asked, outside Service.mu.
	started    chan struct{}
	startErr   error
	ready      chan struct{} // closed once the lines stored before this replica followed it are in the hub
	readyOnce  sync.Once
	stopFollow func() // stops the follower; nil until follow succeeds; guarded by pub.mu

	pub publisher // this replica's writer of the stream (publish.go)

	mu         sync.Mutex       // serializes delivery to the hub; guards the fields below
	tag        string           // the tag its lines are read at
	pinned     bool             // its owner set its tag (SetFeedTag): the version does not move it
	cls        *classify.Stream // per feed: it follows the kubelet's version
	clsReading bool             // cls was built with a Reading
	src        feedSource       // what feeds it (the transitions above)
	kubelet    kubeletVersion   // its kubelet's version (version.go)
	queue      shownQueue       // the lines shown before they are stored (deliver.go)
	counts     feedCounts
	fired      firedLog // what fired (fired.go), under its own lock
	buf        deliveryScratch
	// vols labels the volume reading's lines at volsTag (nil: its Reading
	// is not loaded; asked again volRecheck after volsAsked): what the
	// record of the volume reading's parts and chains is built with
	// (chains.go).
	vols      *classify.Volumes
	volsTag   string
	volsAsked time.Time
}

// feedSource is what feeds a feed, and what its browsers are told of
// that: written only by the transitions above (a test holds them to it).
type feedSource struct {
	kind     source
	relays   int                // relays attached on this replica
	demoStop context.CancelFunc // stops the demo while kind is sourceDemo and it runs here
	note     string
	// waiting and history are its owner's notes for while nothing feeds
	// it (Owned).
	waiting, history string
}

// feedCounts is what the feed's lines are counted as.
type feedCounts struct {
	ingested uint64            // stored by this replica
	byCase   map[string]uint64 // delivered here, per case
	// real counts the lines a journal, not the demo, delivered here, and
	// lastReal is when the last one came (FeedRelayed).
	real       uint64
	lastReal   time.Time
	lastCursor string // the last journald cursor stored: where a journal resumes
}

// deliveryScratch is the shown side's scratch space, reused from message
// to message.
type deliveryScratch struct {
	shown    []shownLine
	arriving []relay.Line
	entries  [][]byte
	scratch  []byte
	arena    []byte // the block ring entries are being cut from
}

// stop stops the feed's consumer.
func (f *feed) stop() {
	f.pub.mu.Lock()
	stop := f.stopFollow
	f.stopFollow = nil
	f.pub.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// waitStarted waits until f is followed, and returns it, or why it could not be.
func (f *feed) waitStarted() (*feed, error) {
	<-f.started
	if f.startErr != nil {
		return nil, f.startErr
	}
	return f, nil
}

// isStarted reports whether f is followed (or failed to be), not a placeholder.
func (f *feed) isStarted() bool { return isClosed(f.started) }

func (f *feed) markReady() { f.readyOnce.Do(func() { close(f.ready) }) }

func (f *feed) isReady() bool { return isClosed(f.ready) }

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// newClassifier starts the feed's classifier anew, knowing the kubelet's
// version and no Reading until refreshClassifier finds its tag's.
func (f *feed) newClassifier() {
	f.cls, f.clsReading = classify.New(nil).Stream(), false
	f.cls.SetVersion(f.kubelet.version)
}

func (f *feed) refreshClassifier(reading func(string) *extractor.Reading) {
	if f.clsReading {
		return
	}
	if r := reading(f.tag); r != nil {
		f.cls, f.clsReading = classify.New(r).Stream(), true
		// The new stream has not seen the start-up line: a kubelet of
		// another version is still matched by message.
		f.cls.SetVersion(f.kubelet.version)
	}
}

// classify classifies raw and cuts what is kept of it for display.
func (f *feed) classify(raw string) (classify.Line, bool) {
	return classifyForDisplay(f.cls, raw)
}

// changed tells the feed's browsers that its status changed: after a
// change under f.mu, or of the record under f.fired.mu.
func (f *feed) changed() {
	f.status.Add(1)
	f.hub.Poke()
}

// statusMsg is the feed's state as browsers see it.
type statusMsg struct {
	Feed           string `json:"feed"`
	Tag            string `json:"tag"`
	KubeletVersion string `json:"kubelet_version,omitempty"`
	VersionLink    string `json:"version_link,omitempty"` // the reading at the kubelet's own tag
	// VersionTag is the tag the kubelet's version reads at
	// (classify.VersionTag: the one test of a version's shape);
	// VersionFrom says how the version was learned ("start-up line", "log
	// sites"), and VersionAlso the other tags whose log sites fit.
	VersionTag  string   `json:"version_tag,omitempty"`
	VersionFrom string   `json:"version_from,omitempty"`
	VersionAlso []string `json:"version_also,omitempty"`
	Source      string   `json:"source"`
	Demo        bool     `json:"demo"`
	Relays      int      `json:"relays"`
	Note        string   `json:"note,omitempty"`
	Next        uint64   `json:"next,omitempty"`
	Reset       bool     `json:"reset,omitempty"`
}

func (f *feed) statusMsg() statusMsg {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := statusMsg{Feed: f.name, Tag: f.tag, KubeletVersion: f.kubelet.version, Source: f.src.kind.String(), Demo: f.src.kind == sourceDemo, Relays: f.src.relays, Note: f.src.note,
		VersionTag: classify.VersionTag(f.kubelet.version), VersionFrom: f.kubelet.from, VersionAlso: f.kubelet.also}
	if s.VersionTag != "" {
		s.VersionLink = "/k8s/" + s.VersionTag + "/" // a page at another tag offers it
	}
	return s
}

// SetFeedTag makes the named feed classify by tag from its next line on,
// creating the feed if needed: its owner moved it to another tag.
func (s *Service) SetFeedTag(name, tag string) {
	f, err := s.feed(name)
	if err != nil {
		s.log.Warn("feeds: a feed's tag not set", "feed", name, "tag", tag, "err", err)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pinTagLocked(tag)
}

// pinTagLocked makes f read tag, whatever its kubelet's version says.
// f.mu is held.
func (f *feed) pinTagLocked(tag string) {
	f.pinned = true
	if f.tag == tag {
		return
	}
	f.tag = tag
	f.newClassifier()
	f.refreshClassifier(f.svc.reading)
	f.changed()
}

// FeedVersion is the kubelet version the named feed's journal reported,
// "" when it has not (or there is no such feed).
func (s *Service) FeedVersion(name string) string {
	s.mu.Lock()
	f := s.feeds[name]
	s.mu.Unlock()
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kubelet.version
}
