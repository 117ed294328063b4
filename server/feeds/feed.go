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
	noteRoomNoJournal = "No journal in this room yet: whoever holds the driver link finds the relay command under More ▾."
	noteRoomHistory   = "No relay is attached now: these are the room's journal lines so far. Whoever holds the driver link finds the relay command under More ▾."
	noteJournalNow    = "A journal now feeds this server: the demo stopped. Reload the page to follow the journal."
	noteFileReplayed  = "the journal file was replayed to its end"
	noteDemoLetGo     = "an unwatched tag demo let go to make room for another"
)

// claimDemo claims a feed nothing feeds for the demo, and reports whether
// it did: of two browsers that ask at once, one starts the demo
// (startedDemo follows). f.mu is held.
func (f *feed) claimDemo() bool {
	if f.source != sourceNone {
		return false
	}
	f.source = sourceDemo
	return true
}

// startedDemo records the demo running into f, stopped by stop. f.mu is held.
func (f *feed) startedDemo(stop context.CancelFunc) {
	f.source, f.demoStop, f.note = sourceDemo, stop, noteDemo
	f.changed()
}

// stopDemo stops the feed's demo, if it runs here, and leaves the feed
// to nothing, with note saying why. f.mu is held.
func (f *feed) stopDemo(note string) {
	if f.demoStop != nil {
		f.demoStop()
	}
	f.source, f.demoStop, f.note = sourceNone, nil, note
	f.changed()
}

// relayAttached records one more relay on this replica; the demo stops
// for good on the first. f.mu is held.
func (f *feed) relayAttached() {
	f.relays++
	f.note = ""
	if f.demoStop != nil {
		f.demoStop()
		f.demoStop = nil
		f.note = noteRelayAttached
	}
	f.source = sourceRelay
	f.changed()
}

// relayDetached records one relay fewer on this replica: finished, its
// journal ended cleanly with the feed holding stored lines, or gone.
// f.mu is held.
func (f *feed) relayDetached(finished bool, stored uint64) {
	f.relays--
	if f.relays == 0 {
		f.note = noteRelayGone
		if finished {
			f.note = "relay finished: " + thousands(stored) + " lines"
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
	f.demoStop()
	f.source, f.demoStop, f.note = sourceRelay, nil, noteRelayAttached
	f.changed()
}

// startedJournal records the server's own journal (what: "journal
// command", "journal file") feeding f. f.mu is held.
func (f *feed) startedJournal(what string) {
	f.source, f.note = sourceJournal, "fed by the server's "+what
	f.changed()
}

// journalReplayed records that the journal file was read to its end. f.mu is held.
func (f *feed) journalReplayed() {
	f.note = noteFileReplayed
	f.changed()
}

// roomWaiting says, on a room's feed nothing feeds yet that has no note,
// what the room waits for; stored: the feed has lines from before. f.mu
// is held.
func (f *feed) roomWaiting(stored bool) {
	if f.source != sourceNone || f.note != "" {
		return
	}
	f.note = noteRoomNoJournal
	if stored {
		// The feed's history came back from its file after a restart.
		f.note = noteRoomHistory
	}
	f.changed()
}

// feed is one named stream of lines.
type feed struct {
	name, tag string
	hub       *hub.Hub
	gone      atomic.Bool   // let go by DropFeed: its browsers are told so
	status    atomic.Uint64 // bumped when statusMsg would change
	asked     time.Time     // when live.feed last returned it; guarded by live.mu

	subject string           // its JetStream subject
	stream  jetstream.Stream // its JetStream stream; set before started is closed
	// started is closed once the feed's stream is followed (or could not
	// be: startErr); until then the feed is a placeholder in Service.feeds,
	// which holds its name while JetStream is asked, outside Service.mu.
	started    chan struct{}
	startErr   error
	ready      chan struct{} // closed once the lines stored before this replica followed it are in the hub
	readyOnce  sync.Once
	stopFollow func() // stops the consumer; nil until follow succeeds

	// pubMu serializes this replica's publishing to the feed; it guards
	// tail and the publishing scratch space.
	pubMu  sync.Mutex
	tail   feedTail
	kept   []relay.Line
	msgBuf []byte // a stored message's data (compressed)
	recBuf []byte // its records before compression

	mu         sync.Mutex       // serializes delivery to the hub; guards the fields below
	cls        *classify.Stream // per feed: it follows the kubelet's version
	clsReading bool             // cls was built with a Reading
	lastCursor string
	// What feeds it, and what its browsers are told of that: written only
	// by the transitions below (a test holds them to it).
	source   source
	relays   int                // relays attached on this replica
	demoStop context.CancelFunc // stops the demo while source is sourceDemo and it runs here
	note     string
	version  string
	ingested uint64
	byCase   map[string]uint64
	fired    firedRecord // what fired (fired.go)
	// vols labels the volume reading's lines at volsTag (nil: its Reading
	// is not loaded; asked again volRecheck after volsAsked).
	vols      *classify.Volumes
	volsTag   string
	volsAsked time.Time
	// versionFrom says how version was learned: fromStartup, fromLogSites;
	// versionAlso names the other tags whose log sites fit its lines.
	versionFrom string
	versionAlso []string
	guess       *classify.Guess // the version from log sites (version.go)
	guessSites  *classify.Sites // the index guess narrows
	pinned      bool            // a room's feed: it reads the room's tag (SetFeedTag)
	reguessing  bool            // a guess from the stored lines is under way (version.go)
	reguessed   *classify.Sites // the index the last one used
	// real counts the lines a journal, not the demo, delivered here, and
	// lastReal is when the last one came (FeedRelayed).
	real     uint64
	lastReal time.Time

	// tentQ is the lines shown before they were stored, numbered from
	// tentative (0 while there are none), in the order ingest publishes
	// them (deliver.go).
	tentative uint64
	tentQ     []shownLine
	// tentPub is the Syncloop-Origin of the message being published with
	// the first tentPubN lines of tentQ: the one whose PubAck or copy from
	// the consumer records them. "": none is.
	tentPub  string
	tentPubN int
	// storedTo is the hub's next sequence number as of the last line it
	// was given that is stored: every line before it is. Read without mu.
	storedTo atomic.Uint64
	// storedIDs is the ids of the lines stored, as the hub has them (as
	// feedTail keeps them); seen adds those shown before they are stored.
	storedIDs, seen feedTail

	// Scratch space of delivery, reused from message to message.
	shown    []shownLine
	arriving []relay.Line
	decoded  []relay.Line
	entries  [][]byte
	scratch  []byte
	arena    []byte // the block ring entries are being cut from
}

// stop stops the feed's consumer.
func (f *feed) stop() {
	f.pubMu.Lock()
	stop := f.stopFollow
	f.stopFollow = nil
	f.pubMu.Unlock()
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
	f.cls.SetVersion(f.version)
}

func (f *feed) refreshClassifier(reading func(string) *extractor.Reading) {
	if f.clsReading {
		return
	}
	if r := reading(f.tag); r != nil {
		f.cls, f.clsReading = classify.New(r).Stream(), true
		// The new stream has not seen the start-up line: a kubelet of
		// another version is still matched by message.
		f.cls.SetVersion(f.version)
	}
}

// classify classifies raw and cuts what is kept of it for display.
func (f *feed) classify(raw string) (classify.Line, bool) {
	return classifyForDisplay(f.cls, raw)
}

// changed tells the feed's browsers that its status changed. f.mu is held.
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
	s := statusMsg{Feed: f.name, Tag: f.tag, KubeletVersion: f.version, Source: f.source.String(), Demo: f.source == sourceDemo, Relays: f.relays, Note: f.note,
		VersionTag: classify.VersionTag(f.version), VersionFrom: f.versionFrom, VersionAlso: f.versionAlso}
	if s.VersionTag != "" {
		s.VersionLink = "/k8s/" + s.VersionTag + "/" // a page at another tag offers it
	}
	return s
}

// SetFeedTag makes the named feed classify by tag from its next line on,
// creating the feed if needed.
func (l *Service) SetFeedTag(name, tag string) {
	f, err := l.feed(name)
	if err != nil {
		l.log.Warn("rooms: feed", "feed", name, "err", err)
		return
	}
	// Whether the feed has stored lines is known once it is followed (its
	// tail is read then); its hub gets them a little later.
	f.pubMu.Lock()
	stored := f.tail.next > 1
	f.pubMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.roomWaiting(stored || f.hub.Next() > 1)
	f.pinned = true
	if f.tag == tag {
		return
	}
	f.tag = tag
	f.newClassifier()
	f.refreshClassifier(l.reading)
	f.changed()
}

// FeedVersion is the kubelet version the named feed's journal reported,
// "" when it has not (or there is no such feed).
func (l *Service) FeedVersion(name string) string {
	l.mu.Lock()
	f := l.feeds[name]
	l.mu.Unlock()
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}
