// Package feeds is the live side of the site: one hub per feed (a ring of
// recent lines and a fan-out to browsers), fed by relays over the ingest
// websocket, by the server's own journal command or file, or by the demo
// feed, and stored in a JetStream stream (live_stream.go). It owns its
// state; the rooms reach a room's feed only through Service's methods
// (live_rooms.go).
//
// Ingest protocol (GET /feeds/{feed}/ingest, websocket, relay → server):
//
//	request header   Authorization: Bearer <token>    (serve --token, or a room's own token; 401 otherwise)
//	relay → server   {"lines":[{"id":"<journald __CURSOR, or relay-run-seq>","raw":"<line>"}, …]}
//	server → relay   {"ack":"<id of the batch's last line>"}
//
// A message is at most 1 MiB (larger: closed with 1009, message too big).
// The server acknowledges a batch once JetStream has stored its lines
// (live_stream.go), so a server killed before the ack has them, and
// recognizes the relay's resend: a line already stored is skipped, not
// stored twice. The relay resends everything unacknowledged after it
// reconnects, to this server or another replica.
//
// Export (GET /feeds/{feed}/export[?after=SEQ]): the feed's stored lines
// as NDJSON, one per line exactly as the relay sent it (a journald entry
// whole, with __CURSOR), in order, up to the last one stored when the
// request began; demo lines are left out.
//
// Browser protocol (GET /feeds/{feed}/ws[?after=SEQ[&of=FEED]][&tag=TAG],
// websocket, same origin only, server → browser): each websocket message
// holds one or more JSON values separated by "\n". While the default feed
// is the demo, a page at another tag (?tag=) gets that tag's own demo feed
// ("demo-TAG", started on demand, let go when no browser watched it for a
// while); hello.feed names the feed served, and of= the feed after= counts
// in (another one: the browser takes the history anew):
//
//	{"hello":{"feed","tag","kubelet_version","version_link","source","demo","relays","note","next","reset"}}
//	{"seq":N,"line":<classify.Line>,"demo":true?,"cut":true?}   history (seq > after), then the live tail
//	                (for a journald JSON entry, line.raw is "": line.text is its MESSAGE)
//	{"skipped":N}   N lines were dropped because this browser fell behind, or
//	                are no longer in the ring when it resumes after a long absence
//	{"status":{…as hello, without next and reset}}   the feed's source or kubelet version changed
//
// A browser socket opens only a feed the server has (the default, a live
// room's, one a relay sent to): any other name answers 404 before the
// upgrade. The server pings it every Config.PingEvery and closes it when a
// ping goes unanswered; a feed let go closes it with CloseFeedGone.
//
// "cut" marks a line cut at 64 KiB. "reset" says the server's sequence
// numbers restarted below after, so the browser's lines are not comparable:
// it clears them and takes the history anew.
package feeds

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/demo"
	"github.com/syncloop/syncloop/server/hub"
	"github.com/syncloop/syncloop/server/jsonstr"
	"github.com/syncloop/syncloop/server/relay"
)

// CloseFeedGone is the websocket close code of a feed socket whose feed
// was let go (its room expired): 4000 plus the HTTP status that says the
// same, in the range the websocket protocol leaves to applications. A
// browser that sees a 4xxx close stops reconnecting and says why
// (static/live.js); any other close (1001 going away, 1006 a dropped
// connection, 1008 too slow) is worth another try.
const CloseFeedGone websocket.StatusCode = 4404

const (
	defaultFeed = "default"
	// MaxFeeds caps the feeds a server holds, the tags' demos apart.
	MaxFeeds = 64
	// maxTagDemos caps the tags' demo feeds (tagDemo), which do not count
	// toward MaxFeeds: past it, an unwatched one is let go, or a page at
	// one more tag keeps the server's own demo.
	maxTagDemos  = 8
	ingestLimit  = 1 << 20  // bytes per ingest message
	displayLimit = 64 << 10 // bytes of a line kept for display
	frameLimit   = 64 << 10 // bytes per browser message: the buffer each browser's writer keeps
	// A browser's writer that sent fewer than coalesceBelow lines waits
	// coalesceFor before the next message, so lines arriving one by one
	// share a write; the wait is well under what a reader notices.
	coalesceBelow = 64
	coalesceFor   = 10 * time.Millisecond
)

// feedNameRE is what a feed may be called: it is also part of a NATS subject.
var feedNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// Config is what the feeds need from the server's command line.
type Config struct {
	DefaultTag  string // the tag the default feed (and its demo) reads
	IngestToken string // bearer token a relay must present; "" disables ingest
	JournalCmd  string // a command whose output feeds the default feed (serve --journal-cmd)
	JournalFile string // a saved journal replayed into the default feed
	RingSize    int    // lines kept per feed for late joiners; 0 means 5000
	// HistoryBytes bounds the recent lines all feeds keep together (their
	// messages to browsers), shared equally by the feeds; 0 means
	// DefaultHistoryBytes.
	HistoryBytes int
	// FeedBytes bounds what JetStream keeps of each feed (compressed); 0
	// means DefaultFeedBytes. A tag's demo keeps at most 4 MiB; nothing is
	// kept longer than a week. All feeds together: MaxStoredBytes.
	FeedBytes  int64
	DemoPeriod time.Duration // pace of the demo feed; 0 means its default, negative turns it off
	// DemoIdle is how long a tag's demo feed runs with no browser
	// watching; 0 means two minutes.
	DemoIdle time.Duration
	// FeedToken, when set, names the ingest token of a feed that has its
	// own (ok true): that feed takes that token instead of IngestToken.
	FeedToken func(feed string) (token string, ok bool)
	NATSName  string // this replica's name in NATS; "" means "syncloop"
	// KnownReadings, when set, returns the Readings of the tags the site
	// knows: a journal that shows no start-up line is told its kubelet's
	// version by their log sites (version.go). LoadTag starts loading a
	// tag's Reading: a feed then reads its lines at its kubelet's tag.
	KnownReadings func() []*extractor.Reading
	LoadTag       func(tag string)
	// Sockets caps the browser sockets per client (shared with the rooms'
	// sockets) and pings them; nil means a cap of its own with the
	// defaults. TrustedProxies may name the client (clients.Addr).
	Sockets *clients.Sockets
	// Space, when set, says whether there is disk for a new feed
	// (broker.Space); a feed is refused while it returns an error.
	Space          func() error
	TrustedProxies []netip.Prefix
	IPv6Prefix     int // bits that name an IPv6 client; 0 means clients.DefaultIPv6Prefix
	Logger         *slog.Logger
}

// Service owns the feeds: per-feed hubs, ingest from relays, the demo feed.
type Service struct {
	cfg            Config
	reading        func(tag string) *extractor.Reading
	log            *slog.Logger
	b              *broker.Broker
	closeBroker    bool                   // Close closes b too (tests that make a live alone)
	demoHeld       atomic.Bool            // this replica holds the cluster's demo lease (live_stream.go)
	vacantAfter    time.Duration          // vacantAfter, shorter in tests
	demoIdle       time.Duration          // demoIdle, shorter in tests
	demoStreamIdle time.Duration          // demoStreamIdle, shorter in tests
	sockets        *clients.Sockets       // shared with the rooms' sockets (sockets.go)
	synced         func() <-chan struct{} // broker.Synced; a test's own in tests
	followFeed     func(*feed) error      // follow; a test's own in tests
	frames         sync.Pool              // *[]byte: browser message buffers
	sitesMu        sync.RWMutex           // guards sites and sitesAt (version.go)
	sites          *classify.Sites
	sitesAt        time.Time
	ingestBufs     sync.Pool // *bytes.Buffer: relays' messages while they are read and decoded

	ctx    context.Context // ends on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine and websocket handler
	// The record of what fired's goroutines (fired.go), started under a
	// feed's mu: their own leaf lock, not mu.
	bgMu     sync.Mutex
	bgClosed bool
	bg       sync.WaitGroup

	mu     sync.Mutex
	feeds  map[string]*feed
	closed bool
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
	source     string // "none", "demo", "relay", "journal"
	relays     int
	demoStop   context.CancelFunc
	note       string
	version    string
	ingested   uint64
	byCase     map[string]uint64
	fired      firedRecord // what fired (fired.go)
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
	// lastReal is when the last one came (live_rooms.go).
	real     uint64
	lastReal time.Time

	// Scratch space of delivery, reused from message to message.
	decoded []relay.Line
	lines   []classify.Line
	cuts    []bool
	entries [][]byte
	scratch []byte
	arena   []byte // the block ring entries are being cut from
}

// New starts the live side on b's JetStream; reading returns the Reading for a tag once
// it is loaded (nil before), so classifiers can be built lazily.
func New(cfg Config, b *broker.Broker, reading func(tag string) *extractor.Reading) (*Service, error) {
	if cfg.RingSize <= 0 {
		cfg.RingSize = 5000
	}
	if cfg.HistoryBytes <= 0 {
		cfg.HistoryBytes = DefaultHistoryBytes
	}
	if reading == nil {
		reading = func(string) *extractor.Reading { return nil }
	}
	if cfg.Sockets == nil {
		cfg.Sockets = clients.NewSockets(0, 0)
	}
	if cfg.DemoIdle <= 0 {
		cfg.DemoIdle = demoIdle
	}
	l := &Service{cfg: cfg, reading: reading, log: cfg.Logger, b: b, feeds: make(map[string]*feed), vacantAfter: vacantAfter, demoIdle: cfg.DemoIdle, demoStreamIdle: demoStreamIdle,
		sockets: cfg.Sockets, synced: b.Synced}
	l.followFeed = l.follow
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	l.frames.New = func() any { b := make([]byte, 0, 4<<10); return &b }
	l.ingestBufs.New = func() any { return new(bytes.Buffer) }
	l.ctx, l.cancel = context.WithCancel(context.Background())
	if err := l.migrateLegacy(l.ctx); err != nil {
		l.cancel()
		return nil, err
	}

	f, err := l.feed(defaultFeed)
	if err != nil {
		l.Close()
		return nil, err
	}
	l.sweep()
	l.logSites() // the site starts loading the Readings it has cached: their log sites tell versions
	switch {
	case cfg.JournalCmd != "":
		l.startJournal(f, "journal command", func(ctx context.Context, after string, emit relay.Emit) error {
			return relay.RunCommand(ctx, cfg.JournalCmd, after, emit, l.log)
		})
	case cfg.JournalFile != "":
		l.startJournal(f, "journal file", func(ctx context.Context, after string, emit relay.Emit) error {
			return relay.ReplayFile(ctx, cfg.JournalFile, 0, after, emit)
		})
	case cfg.DemoPeriod >= 0: // a negative period turns the demo off (tests)
		l.startDemo(f)
	}
	return l, nil
}

// Close stops every feed goroutine and closes websockets with a proper code.
func (l *Service) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	feeds := slices.Collect(maps.Values(l.feeds))
	l.mu.Unlock()
	l.cancel()
	for _, f := range feeds {
		<-f.started // its follow ends soon: l.ctx is done
		f.stop()
		f.hub.Close()
	}
	l.wg.Wait()
	l.closeBG()
	if l.closeBroker {
		l.b.Close()
	}
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

// enter registers a handler or goroutine with the live side; false once closed.
func (l *Service) enter() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	l.wg.Add(1)
	return true
}

var (
	errTooManyFeeds = errors.New("too many feeds")
	errTooManyDemos = errors.New("too many tags' demos are watched")
	errStorage      = errors.New("the feeds' storage (JetStream) is unavailable")
	errBadBatch     = errors.New("not an ingest message")
)

// existingFeed returns the named feed if the server has it, nil if not:
// what a browser asks for. A feed with lines stored (a relay sent to it
// before the server restarted, or through another replica) is had, and
// opened. Browsers never create feeds, so made-up names cannot fill the
// server's feeds and shut out a room's relay.
func (l *Service) existingFeed(name string) (*feed, error) {
	l.mu.Lock()
	f := l.feeds[name]
	if f != nil {
		f.asked = time.Now()
	}
	l.mu.Unlock()
	if f != nil {
		return f.waitStarted()
	}
	if !feedNameRE.MatchString(name) {
		return nil, nil
	}
	if stored, err := l.hasStored(name); err != nil {
		return nil, errStorage
	} else if !stored {
		return nil, nil
	}
	return l.feed(name)
}

// feed returns the named feed, creating it (with its stored history) on
// first use: the server's own feeds (the default, rooms') and those a relay
// with a valid token sends to. Its stream is made and followed outside
// l.mu: while JetStream elects a leader (up to followWithin), other feeds
// are looked up as usual.
func (l *Service) feed(name string) (*feed, error) {
	if !feedNameRE.MatchString(name) {
		return nil, fmt.Errorf("feed name %q: use letters, digits, '.', '_' or '-' (at most 64)", name)
	}
	l.mu.Lock()
	if f, ok := l.feeds[name]; ok {
		f.asked = time.Now()
		l.mu.Unlock()
		return f.waitStarted()
	}
	if l.closed {
		l.mu.Unlock()
		return nil, errStorage
	}
	tagDemo := isTagDemo(name)
	if tagDemo {
		if l.countLocked(true) >= maxTagDemos && !l.evictDemoLocked() {
			l.mu.Unlock()
			return nil, errTooManyDemos
		}
	} else if l.countLocked(false) >= MaxFeeds && !l.evictVacantLocked() {
		l.mu.Unlock()
		return nil, errTooManyFeeds
	}
	if l.cfg.Space != nil {
		// A nearly full disk takes no new journal; the feeds there go on.
		if err := l.cfg.Space(); err != nil {
			l.mu.Unlock()
			return nil, err
		}
	}
	f := &feed{
		name:    name,
		tag:     l.cfg.DefaultTag,
		hub:     hub.New(l.cfg.RingSize),
		asked:   time.Now(),
		source:  "none",
		byCase:  make(map[string]uint64),
		subject: feedSubject(name),
		started: make(chan struct{}),
		ready:   make(chan struct{}),
	}
	if tagDemo {
		f.tag = strings.TrimPrefix(name, demoFeedPrefix) // a tag's demo feed reads its tag
	}
	f.cls = classify.New(nil).Stream()
	l.feeds[name] = f // a placeholder until started: it counts, and a second caller waits for it
	l.shareHistory()
	l.mu.Unlock()

	if err := l.followFeed(f); err != nil {
		l.log.Error("live: feed not followed", "feed", name, "err", err)
		l.mu.Lock()
		if l.feeds[name] == f {
			delete(l.feeds, name)
			l.shareHistory()
		}
		l.mu.Unlock()
		f.hub.Close()
		f.startErr = errStorage
	}
	close(f.started)
	return f.waitStarted()
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

// isTagDemo reports whether name is a tag's demo feed ("demo-v1.20.0").
func isTagDemo(name string) bool {
	t, ok := strings.CutPrefix(name, demoFeedPrefix)
	return ok && extractor.CheckTag(t) == nil
}

// countLocked counts the tags' demo feeds (demos) or the other feeds. The
// two have separate caps (maxTagDemos, MaxFeeds), so that pages opened at
// many tags cannot take the feeds relays and rooms need. l.mu is held.
func (l *Service) countLocked(demos bool) int {
	n := 0
	for name := range l.feeds {
		if isTagDemo(name) == demos {
			n++
		}
	}
	return n
}

// evictDemoLocked lets go of the tag demo no browser watches that was
// asked for least recently, if any, and reports whether it did. l.mu is
// held.
func (l *Service) evictDemoLocked() bool {
	var oldest *feed
	for name, f := range l.feeds {
		if isTagDemo(name) && f.isStarted() && f.hub.Stats().Subscribers == 0 && (oldest == nil || f.asked.Before(oldest.asked)) {
			oldest = f
		}
	}
	if oldest == nil {
		return false
	}
	oldest.mu.Lock()
	stopDemo := oldest.demoStop
	oldest.source, oldest.demoStop = "none", nil
	oldest.mu.Unlock()
	if stopDemo != nil {
		stopDemo()
	}
	l.letGoLocked(oldest, "an unwatched tag demo let go to make room for another")
	return true
}

// letGoLocked forgets f on this replica: its consumer stops, its hub
// closes (its browsers are told). Its stored lines stay. l.mu is held.
func (l *Service) letGoLocked(f *feed, why string) {
	delete(l.feeds, f.name)
	l.shareHistory()
	f.stop()
	f.hub.Close()
	l.log.Info("live: "+why, "feed", f.name)
}

// vacantAfter is how long a feed must have gone unasked-for before it may
// be let go as vacant: a handler that just got it subscribes well within.
const vacantAfter = 10 * time.Second

// evictVacantLocked lets go of the vacant feed asked for least recently, if
// any: one with no lines, no browser, no relay and no source (a relay that
// connected and sent nothing, a room's feed no one used). It reports
// whether a feed was let go. l.mu is held.
func (l *Service) evictVacantLocked() bool {
	var oldest *feed
	for name, f := range l.feeds {
		if name == defaultFeed || isTagDemo(name) || time.Since(f.asked) < l.vacantAfter || !f.isStarted() {
			continue
		}
		if st := f.hub.Stats(); st.Stored > 0 || st.Subscribers > 0 {
			continue
		}
		f.mu.Lock()
		// A relay gone without sending a line leaves source "relay" and nothing else.
		busy := f.relays > 0 || f.ingested > 0 || (f.source != "none" && f.source != "relay")
		f.mu.Unlock()
		if !busy && (oldest == nil || f.asked.Before(oldest.asked)) {
			oldest = f
		}
	}
	if oldest == nil {
		return false
	}
	l.letGoLocked(oldest, "vacant feed let go to make room for another")
	return true
}

// DefaultHistoryBytes is Config.HistoryBytes's default.
const DefaultHistoryBytes = 64 << 20

// shareHistory gives each feed an equal share of Config.HistoryBytes as
// its ring's byte limit. Lines are bounded in number (RingSize) and in
// size (64 KiB shown), but not what 64 feeds times 5,000 lines of any size
// may hold: this is what bounds the server's memory. l.mu is held.
func (l *Service) shareHistory() {
	if len(l.feeds) == 0 {
		return
	}
	share := l.cfg.HistoryBytes / len(l.feeds)
	for _, f := range l.feeds {
		f.hub.SetByteLimit(share)
	}
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

// publish encodes lines for browsers and publishes them. f.mu is held:
// ingest is the hub's only publisher, so the sequence numbers the hub
// assigns are known before it does.
func (f *feed) publish(lines []classify.Line, cuts []bool, demo bool) {
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

// ingest stores lines in the feed's stream, skipping those stored
// already, and returns the id to acknowledge (the batch's last) once
// JetStream has them. Browsers get them through the feed's consumer.
func (l *Service) ingest(f *feed, lines []relay.Line, isDemo bool) (string, error) {
	var last string
	for _, in := range lines {
		if in.ID != "" {
			last = in.ID
		}
	}
	if err := l.store(f, lines, isDemo); err != nil {
		return "", err
	}
	return last, nil
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
	s := statusMsg{Feed: f.name, Tag: f.tag, KubeletVersion: f.version, Source: f.source, Demo: f.source == "demo", Relays: f.relays, Note: f.note,
		VersionTag: classify.VersionTag(f.version), VersionFrom: f.versionFrom, VersionAlso: f.versionAlso}
	if s.VersionTag != "" {
		s.VersionLink = "/k8s/" + s.VersionTag + "/" // a page at another tag offers it
	}
	return s
}

// startDemo runs the demo feed into f until a relay attaches. A tag's own
// demo (tagDemo) also stops once no browser has watched it for l.demoIdle,
// or once the server's feed is no longer a demo, and is then let go.
func (l *Service) startDemo(f *feed) {
	if !l.enter() {
		return
	}
	ctx, stop := context.WithCancel(l.ctx)
	f.mu.Lock()
	f.source, f.demoStop = "demo", stop
	f.note = "Lines of a simulated kubelet at this tag's real log sites. Attach a relay (syncloop relay) to see a real journal."
	f.changed()
	tag := f.tag
	f.mu.Unlock()
	ofTag := isTagDemo(f.name)
	ofRoom := f.name != defaultFeed && !ofTag
	go func() {
		defer l.wg.Done()
		defer stop()
		var r *extractor.Reading
		for r == nil {
			if r = l.reading(tag); r == nil && relay.Sleep(ctx, 500*time.Millisecond) != nil {
				return
			}
		}
		d := demo.New(r, time.Now().UnixNano())
		// One replica per cluster runs a demo: the default one's lease is
		// "demo", a tag's is its feed's name.
		lease, held := "demo", &l.demoHeld
		if ofTag || ofRoom {
			lease, held = f.name, new(atomic.Bool)
		}
		held = l.demoLease(ctx, lease, held)
		idleSince := time.Now()
		for {
			line, wait := d.Next(time.Now())
			if len(line) > 0 && held.Load() {
				if _, err := l.ingest(f, []relay.Line{{Raw: string(line)}}, true); err != nil {
					l.log.Error("live: demo feed", "feed", f.name, "err", err)
				}
			}
			if l.cfg.DemoPeriod > 0 {
				wait = l.cfg.DemoPeriod
			}
			if relay.Sleep(ctx, max(wait, 10*time.Millisecond)) != nil {
				return
			}
			if ofRoom {
				// The room switched its tag: the demo simulates the new one.
				f.mu.Lock()
				cur := f.tag
				f.mu.Unlock()
				if nr := l.reading(cur); cur != tag && nr != nil {
					tag, d = cur, demo.New(nr, time.Now().UnixNano())
				}
				if f.hub.Stats().Subscribers > 0 {
					idleSince = time.Now()
				}
				if time.Since(idleSince) >= l.demoIdle && l.stopRoomDemo(f, ctx) {
					return
				}
				continue
			}
			if !ofTag {
				continue
			}
			if f.hub.Stats().Subscribers > 0 {
				idleSince = time.Now()
			}
			if time.Since(idleSince) >= l.demoIdle && l.dropIdleDemo(f) {
				return
			}
			if !l.defaultIsDemo() {
				f.mu.Lock()
				f.source, f.demoStop = "none", nil
				f.note = "A journal now feeds this server: the demo stopped. Reload the page to follow the journal."
				f.changed()
				f.mu.Unlock()
				return
			}
		}
	}()
}

// demoIdle is how long a tag's demo feed runs with no browser watching.
const demoIdle = 2 * time.Minute

// demoFeedPrefix starts the name of a tag's demo feed: "demo-v1.20.0".
const demoFeedPrefix = "demo-"

// defaultIsDemo reports whether the server's own feed is the demo.
func (l *Service) defaultIsDemo() bool {
	l.mu.Lock()
	f := l.feeds[defaultFeed]
	l.mu.Unlock()
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.source == "demo"
}

// tagDemo is the demo feed of tag, started if it is not running: what a
// page at a tag other than the default's shows while the server's own feed
// is the demo (which simulates the default tag's kubelet). It is nil when
// tag's Reading is not loaded.
func (l *Service) tagDemo(tag string) (*feed, error) {
	if l.reading(tag) == nil {
		return nil, nil
	}
	f, err := l.feed(demoFeedPrefix + tag)
	if errors.Is(err, errTooManyDemos) {
		l.log.Warn("live: every tag demo is watched; this page gets the server's demo", "tag", tag, "max", maxTagDemos)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	start := f.source == "none"
	if start {
		f.source = "demo" // claimed: two browsers at once start one demo
	}
	f.mu.Unlock()
	if start {
		l.startDemo(f)
	}
	return f, nil
}

// dropIdleDemo lets go of a tag's demo feed no browser asked for since
// l.demoIdle, and reports whether it did. Its stored lines stay (bounded
// as every feed's): another replica may still be running it.
func (l *Service) dropIdleDemo(f *feed) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.feeds[f.name] != f || time.Since(f.asked) < l.demoIdle || f.hub.Stats().Subscribers > 0 {
		return false
	}
	l.letGoLocked(f, "idle demo feed let go")
	return true
}

// startJournal runs the server's own journal source into f.
func (l *Service) startJournal(f *feed, what string, run func(ctx context.Context, after string, emit relay.Emit) error) {
	if !l.enter() {
		return
	}
	f.mu.Lock()
	f.source, f.note = "journal", "fed by the server's "+what
	f.changed()
	f.mu.Unlock()
	go func() {
		defer l.wg.Done()
		select { // resume after the last entry stored
		case <-f.ready:
		case <-l.ctx.Done():
			return
		}
		f.mu.Lock()
		after := f.lastCursor
		f.mu.Unlock()
		err := run(l.ctx, after, func(line relay.Line) error {
			_, err := l.ingest(f, []relay.Line{line}, false)
			return err
		})
		if err != nil && l.ctx.Err() == nil {
			l.log.Error("live: "+what+" stopped", "err", err)
		}
		if l.ctx.Err() == nil && what == "journal file" {
			f.mu.Lock()
			f.note = "the journal file was replayed to its end"
			f.changed()
			f.mu.Unlock()
		}
	}()
}

func (l *Service) feedOr404(w http.ResponseWriter, r *http.Request) *feed {
	f, err := l.feed(chi.URLParam(r, "feed"))
	switch {
	case errors.Is(err, errTooManyFeeds):
		http.Error(w, "this server has too many feeds; reuse one", http.StatusServiceUnavailable)
		return nil
	case errors.Is(err, errStorage):
		http.Error(w, err.Error()+"; retry later", http.StatusServiceUnavailable)
		return nil
	case errors.Is(err, broker.ErrNoSpace):
		w.Header().Set("Retry-After", "60")
		http.Error(w, "this server's disk is nearly full: it takes no new feed until space frees ("+err.Error()+")", http.StatusInsufficientStorage)
		return nil
	case err != nil:
		http.Error(w, err.Error(), http.StatusNotFound)
		return nil
	}
	return f
}

func (l *Service) HandleFeedSocket() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := l.existingFeed(chi.URLParam(r, "feed"))
		// A page at another tag than the default's asks for the server's
		// feed with ?tag=: while that feed is the demo (a simulated kubelet
		// at the default tag), it gets the demo of its own tag instead, so
		// that its lines are that tag's log sites and cases.
		if tag := r.URL.Query().Get("tag"); err == nil && f != nil && f.name == defaultFeed && tag != f.tag && l.defaultIsDemo() {
			if td, tdErr := l.tagDemo(tag); tdErr != nil || td != nil {
				f, err = td, tdErr
			}
		}
		switch {
		case errors.Is(err, errTooManyFeeds):
			http.Error(w, "this server has too many feeds; reuse one", http.StatusServiceUnavailable)
			return
		case errors.Is(err, errStorage):
			http.Error(w, err.Error()+"; retry later", http.StatusServiceUnavailable)
			return
		case errors.Is(err, broker.ErrNoSpace):
			w.Header().Set("Retry-After", "60")
			http.Error(w, "this server's disk is nearly full: it takes no new feed until space frees", http.StatusInsufficientStorage)
			return
		case err != nil || f == nil:
			http.Error(w, "no such feed: a feed exists once a relay sends to it (syncloop relay)", http.StatusNotFound)
			return
		}
		var after uint64
		if s := r.URL.Query().Get("after"); s != "" {
			if after, err = strconv.ParseUint(s, 10, 64); err != nil {
				http.Error(w, "after: want the last sequence number seen", http.StatusBadRequest)
				return
			}
		}
		// ?of= names the feed after= counts in: the lines a browser has
		// are of another feed than the one it gets now (the demo stopped,
		// or started), so it takes the history anew.
		reset := false
		if of := r.URL.Query().Get("of"); of != "" && of != f.name {
			after, reset = 0, true
		}
		client := clients.AddrPrefix(r, l.cfg.TrustedProxies, l.cfg.IPv6Prefix)
		if !l.sockets.Acquire(w, client) {
			return
		}
		defer l.sockets.Release(client)
		if !l.enter() {
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
		defer l.wg.Done()
		// The default AcceptOptions refuse an Origin other than the request's
		// host: another site's page cannot read this feed through a reader's browser.
		conn, err := websocket.Accept(writeBuffered{w}, r, nil)
		if err != nil {
			l.log.Info("live: browser websocket refused", "feed", f.name, "err", err)
			return
		}
		defer conn.CloseNow()
		// Browsers send nothing; CloseRead notices their close. Close ends
		// this handler through the hub (Next returns ErrClosed), not through
		// ctx: a cancelled ctx would drop the connection without a close frame.
		ctx := conn.CloseRead(r.Context())
		defer l.sockets.KeepAlive(conn)()
		// The feed's stored lines reach the hub first, so after= means the
		// same here as on any replica.
		select {
		case <-f.ready:
		case <-time.After(10 * time.Second):
		case <-ctx.Done():
			return
		}

		// A browser resuming after a line this replica's hub has not had
		// yet (stored a moment ago, or through another replica) waits for
		// it rather than be told to start over.
		if !reset && after >= f.hub.Next() {
			wctx, cancel := context.WithTimeout(ctx, resumeWait)
			f.hub.WaitNext(wctx, after)
			cancel()
			if ctx.Err() != nil {
				return
			}
		}
		gen := f.status.Load()
		hello := f.statusMsg()
		next := f.hub.Next()
		if after >= next || reset {
			after, hello.Reset = 0, true
		}
		hello.Next = next
		sub := f.hub.Subscribe(after)
		defer sub.Close()
		out := newSocketWriter(ctx, conn)
		defer out.stop()
		if err := out.write(mustJSON(map[string]any{"hello": hello})); err != nil {
			return
		}
		pause := time.NewTimer(0)
		defer pause.Stop()
		for {
			b, err := sub.Next(ctx)
			if err != nil {
				switch {
				case errors.Is(err, hub.ErrClosed) && f.gone.Load():
					conn.Close(CloseFeedGone, "this feed is gone: its room expired")
				case errors.Is(err, hub.ErrClosed):
					conn.Close(websocket.StatusGoingAway, "server shutting down")
				}
				return
			}
			// Frames come from a pool shared by the feed's browsers: most wait
			// between batches, and a buffer each would hold frameLimit apiece.
			fp := l.frames.Get().(*[]byte)
			frame := (*fp)[:0]
			if gap := b.Missed + b.Skipped; gap > 0 {
				frame = appendMsg(frame, []byte(`{"skipped":`+strconv.Itoa(gap)+`}`))
			}
			if g := f.status.Load(); g != gen {
				gen = g
				frame = appendMsg(frame, mustJSON(map[string]any{"status": f.statusMsg()}))
			}
			for _, e := range b.Entries {
				if len(frame)+len(e.Data) > frameLimit && len(frame) > 0 {
					if out.write(frame) != nil {
						return
					}
					frame = frame[:0]
				}
				frame = appendMsg(frame, e.Data)
			}
			if len(frame) > 0 {
				if out.write(frame) != nil {
					return
				}
			}
			*fp = frame[:0]
			l.frames.Put(fp)
			// A trickle of lines would cost a write per line per browser:
			// let a few milliseconds' worth gather into the next message.
			if len(b.Entries) < coalesceBelow {
				pause.Reset(coalesceFor)
				select {
				case <-ctx.Done():
					return
				case <-pause.C:
				}
			}
		}
	})
}

func appendMsg(frame, msg []byte) []byte {
	if len(frame) > 0 {
		frame = append(frame, '\n')
	}
	return append(frame, msg...)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own plain structs are encoded
	}
	return b
}

// browserWriteBuffer is the write buffer of a browser's connection. The
// one net/http hands over with the connection holds 4 KiB: a message over
// that, as a batch of ten klog lines is, cost two write calls (the websocket
// header and the start of the message, then the rest), and write calls
// were most of what fan-out cost.
const browserWriteBuffer = 8 << 10

// writeBuffered gives the websocket library a connection with a write
// buffer of browserWriteBuffer when it hijacks it.
type writeBuffered struct{ http.ResponseWriter }

func (w writeBuffered) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	if err := brw.Writer.Flush(); err != nil { // the 101 response, normally sent already
		conn.Close()
		return nil, nil, err
	}
	return conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriterSize(conn, browserWriteBuffer)), nil
}

func (w writeBuffered) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// writeTimeout is how long a websocket message may take to write before
// its connection is given up as stalled.
const writeTimeout = 10 * time.Second

// socketWriter writes a websocket's messages on its hot path: each write
// has writeTimeout, and the connection closes when ctx ends, as with a
// context per write, but without one: for every browser and every
// batch, that cost the websocket library three allocations and a goroutine
// handoff. A watchdog timer, reset around each write, closes a stalled
// connection instead.
type socketWriter struct {
	conn     *websocket.Conn
	watchdog *time.Timer
	stopCtx  func() bool
}

func newSocketWriter(ctx context.Context, conn *websocket.Conn) *socketWriter {
	w := &socketWriter{conn: conn, watchdog: time.AfterFunc(writeTimeout, func() { conn.CloseNow() })}
	w.watchdog.Stop()
	w.stopCtx = context.AfterFunc(ctx, func() { conn.CloseNow() })
	return w
}

func (w *socketWriter) write(b []byte) error {
	w.watchdog.Reset(writeTimeout)
	err := w.conn.Write(context.Background(), websocket.MessageText, b)
	w.watchdog.Stop()
	return err
}

// stop ends the watchdog and the watch on ctx; the connection stays open.
func (w *socketWriter) stop() {
	w.watchdog.Stop()
	w.stopCtx()
}

// checkToken reports whether r carries the ingest token, comparing in constant time.
// A feed with a token of its own (Config.FeedToken: a room's) takes only that one.
func (l *Service) checkToken(r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	want := l.cfg.IngestToken
	if own, has := l.feedToken(chi.URLParam(r, "feed")); has {
		want = own
	}
	return ok && want != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// feedToken is Config.FeedToken, when set.
func (l *Service) feedToken(feed string) (string, bool) {
	if l.cfg.FeedToken == nil {
		return "", false
	}
	return l.cfg.FeedToken(feed)
}

func (l *Service) HandleIngest() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, ownToken := l.feedToken(chi.URLParam(r, "feed"))
		if l.cfg.IngestToken == "" && !ownToken {
			http.Error(w, "ingest is disabled on this server: start it with syncloop serve --token T", http.StatusForbidden)
			return
		}
		if !l.checkToken(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="syncloop ingest"`)
			msg := "missing or wrong token: send Authorization: Bearer <the token given to syncloop serve --token>"
			if ownToken {
				msg = "missing or wrong token for this room's feed: copy the relay command from the room's page (driver link); the token may have been rotated"
			}
			http.Error(w, msg, http.StatusUnauthorized)
			return
		}
		f := l.feedOr404(w, r)
		if f == nil {
			return
		}
		if !l.enter() {
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
		defer l.wg.Done()
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			l.log.Info("live: relay websocket refused", "feed", f.name, "err", err)
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(-1) // enforced below, to close with a reason a person can act on
		ctx := r.Context()
		stop := context.AfterFunc(l.ctx, func() { conn.Close(websocket.StatusGoingAway, "server shutting down") })
		defer stop()

		l.attach(f)
		defer l.detach(f)
		l.log.Info("live: relay attached", "feed", f.name, "remote", r.RemoteAddr)
		// A reader decodes the relay's messages while the previous ones are
		// being stored: whatever arrived meanwhile is stored as one
		// JetStream message and acknowledged with one ack (the last line's
		// id, once JetStream has acknowledged it). A relay that sends many
		// small batches then costs one publish round trip per group, not
		// per batch. Message buffers come from a pool shared by the relays
		// (a relay's batch is up to ~512 KiB, held only while decoded).
		type ingestMsg struct {
			lines  []relay.Line
			err    error
			tooBig bool
		}
		out := newSocketWriter(ctx, conn)
		defer out.stop()
		msgs := make(chan ingestMsg, ingestQueue)
		done := make(chan struct{})
		readerDone := make(chan struct{})
		go func() { // owned: ends when conn closes or the handler returns
			defer close(readerDone)
			for {
				// No context per read either (see socketWriter): ctx's end
				// closes the connection, which ends the read.
				var m ingestMsg
				_, rd, err := conn.Reader(context.Background())
				if err == nil {
					buf := l.ingestBufs.Get().(*bytes.Buffer)
					buf.Reset()
					_, err = buf.ReadFrom(io.LimitReader(rd, ingestLimit+1))
					m.tooBig = buf.Len() > ingestLimit
					if err == nil && !m.tooBig {
						m.lines, err = relay.DecodeBatch(buf.Bytes(), nil) // copies what it keeps
						if err != nil {
							err = errBadBatch
						}
					}
					l.ingestBufs.Put(buf)
				}
				m.err = err
				select {
				case msgs <- m:
				case <-done:
					return
				}
				if err != nil || m.tooBig {
					return
				}
			}
		}()
		defer func() { close(done); conn.CloseNow(); <-readerDone }()
		// Acks go out in order from their own goroutine, each once what it
		// acknowledges is on disk (broker.Synced): the next group is read
		// and stored meanwhile.
		acks := make(chan pendingAck, ackQueue)
		ackerDone := make(chan struct{})
		go func() { // owned: ends when acks is closed, or the connection fails
			defer close(ackerDone)
			if l.sendAcks(ctx, acks, out) != nil {
				conn.CloseNow() // the reader notices, and the handler ends
			}
		}()
		defer func() { close(acks); <-ackerDone }()
		var (
			lines   []relay.Line
			pending *ingestMsg
		)
		for {
			var m ingestMsg
			if pending != nil {
				m, pending = *pending, nil
			} else {
				m = <-msgs
			}
			// Lines that arrived meanwhile join this group, up to one
			// stored message's worth; a failed read ends the group, and
			// is handled once the lines before it are stored.
			lines = append(lines[:0], m.lines...)
			size := 0
			for _, in := range lines {
				size += len(in.Raw)
			}
		group:
			for m.err == nil && !m.tooBig && len(lines) < maxLinesPerMsg && size < msgBytes/2 {
				select {
				case next := <-msgs:
					if next.err != nil || next.tooBig {
						pending = &next
						break group
					}
					lines = append(lines, next.lines...)
					for _, in := range next.lines {
						size += len(in.Raw)
					}
				default:
					break group
				}
			}
			if len(lines) > 0 {
				if !l.checkToken(r) { // a room's token was rotated since, or the room expired
					conn.Close(websocket.StatusPolicyViolation, "this token no longer opens the feed (rotated?): copy the new relay command")
					return
				}
				last, err := l.ingest(f, lines, false)
				clear(lines)
				if err != nil {
					l.log.Error("live: ingest", "feed", f.name, "err", err)
					conn.Close(websocket.StatusInternalError, "the server cannot store lines; retry later")
					return
				}
				if last != "" {
					select {
					case acks <- pendingAck{last, l.synced()}:
					case <-ackerDone:
						return
					}
				}
			}
			switch {
			case m.tooBig:
				conn.Close(websocket.StatusMessageTooBig, "message over 1 MiB: send fewer lines per batch")
				return
			case errors.Is(m.err, errBadBatch):
				conn.Close(websocket.StatusUnsupportedData, "want {\"lines\":[{\"id\":…,\"raw\":…}]}")
				return
			case m.err != nil:
				return
			}
		}
	})
}

// resumeWait is how long a browser's ?after= may wait for this replica's
// hub to reach that line before the browser is told to start over.
const resumeWait = 2 * time.Second

// ingestQueue is how many relay messages a connection reads ahead while
// earlier ones are stored.
const ingestQueue = 16

// ackQueue is how many stored groups' acks may wait for the disk before
// ingest waits too.
const ackQueue = 64

// pendingAck is a relay's ack waiting for the disk: the id of the last line
// stored, and the channel closed once it is on disk.
type pendingAck struct {
	id     string
	synced <-chan struct{}
}

// sendAcks writes each ack once its lines are on disk, in order, until
// acks is closed; acks whose lines reached the disk together go as one
// (the last), and one that is ready never waits for a later one.
func (l *Service) sendAcks(ctx context.Context, acks <-chan pendingAck, out *socketWriter) error {
	var msg []byte
	var next *pendingAck // taken from acks, not on disk yet
	for {
		a, ok := pendingAck{}, true
		if next != nil {
			a, next = *next, nil
		} else if a, ok = <-acks; !ok {
			return nil
		}
		select {
		case <-a.synced:
		case <-ctx.Done():
			return ctx.Err()
		case <-l.ctx.Done():
			return l.ctx.Err()
		}
	later:
		for {
			select {
			case b, ok := <-acks:
				if !ok {
					break later
				}
				select {
				case <-b.synced:
					a = b
				default:
					next = &b
					break later
				}
			default:
				break later
			}
		}
		msg = append(jsonstr.Append(append(msg[:0], `{"ack":`...), a.id), '}')
		if err := out.write(msg); err != nil {
			return err
		}
	}
}

// attach records a relay on f; the demo stops for good on the first one.
func (l *Service) attach(f *feed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.relays++
	if f.demoStop != nil {
		f.demoStop()
		f.demoStop = nil
		f.note = "a relay attached: the demo feed stopped; what follows is a real journal"
	} else {
		f.note = ""
	}
	f.source = "relay"
	f.changed()
}

func (l *Service) detach(f *feed) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.relays--
	if f.relays == 0 {
		f.note = "the relay disconnected; it resends what was not stored when it reconnects"
	}
	f.changed()
}

func (l *Service) HandleMetrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		feeds := slices.SortedFunc(maps.Values(l.feeds), func(a, b *feed) int { return strings.Compare(a.name, b.name) })
		l.mu.Unlock()
		type row struct {
			name             string
			ingested         uint64
			byCase           map[string]uint64
			dropped, clients uint64
		}
		rows := make([]row, 0, len(feeds))
		for _, f := range feeds {
			f.mu.Lock()
			rw := row{name: f.name, ingested: f.ingested, byCase: maps.Clone(f.byCase)}
			f.mu.Unlock()
			st := f.hub.Stats()
			rw.dropped, rw.clients = st.Dropped, uint64(st.Subscribers)
			rows = append(rows, rw)
		}
		var b strings.Builder
		metric := func(name, help, typ string, each func(rw row)) {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
			for _, rw := range rows {
				each(rw)
			}
		}
		metric("syncloop_lines_ingested_total", "Lines stored in a feed (relays, journal and demo).", "counter", func(rw row) {
			fmt.Fprintf(&b, "syncloop_lines_ingested_total{feed=%s} %d\n", promQuote(rw.name), rw.ingested)
		})
		metric("syncloop_lines_by_case_total", "Lines stored in a feed by the case that logged them (\"none\": no case).", "counter", func(rw row) {
			for _, k := range slices.Sorted(maps.Keys(rw.byCase)) {
				c := k
				if c == "" {
					c = "none"
				}
				fmt.Fprintf(&b, "syncloop_lines_by_case_total{feed=%s,case=%s} %d\n", promQuote(rw.name), promQuote(c), rw.byCase[k])
			}
		})
		metric("syncloop_lines_dropped_total", "Lines browsers that fell behind by more than the feed's history did not get (a skipped marker told them, unless they were closed first).", "counter", func(rw row) {
			fmt.Fprintf(&b, "syncloop_lines_dropped_total{feed=%s} %d\n", promQuote(rw.name), rw.dropped)
		})
		metric("syncloop_clients", "Browsers connected to a feed.", "gauge", func(rw row) {
			fmt.Fprintf(&b, "syncloop_clients{feed=%s} %d\n", promQuote(rw.name), rw.clients)
		})
		fmt.Fprintf(&b, "# HELP syncloop_feeds Feeds the server holds: at most %d, rooms' included, and at most %d tags' demos.\n# TYPE syncloop_feeds gauge\nsyncloop_feeds %d\n", MaxFeeds, maxTagDemos, len(feeds))
		fmt.Fprintf(&b, "# HELP syncloop_sockets_refused_total Browser sockets refused because their client held --sockets-per-client already.\n# TYPE syncloop_sockets_refused_total counter\nsyncloop_sockets_refused_total %d\n", l.sockets.Refused())
		fmt.Fprintf(&b, "# HELP syncloop_sockets_unanswered_total Browser sockets closed because they did not answer a ping (half-open connections).\n# TYPE syncloop_sockets_unanswered_total counter\nsyncloop_sockets_unanswered_total %d\n", l.sockets.Unanswered())
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		io.WriteString(w, b.String())
	})
}

// promQuote quotes a label value as the Prometheus text format wants.
func promQuote(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(s) + `"`
}

// HandleExport streams the feed's stored lines as NDJSON (see the top of
// this file).
func (l *Service) HandleExport() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var after uint64
		if s := r.URL.Query().Get("after"); s != "" {
			var err error
			if after, err = strconv.ParseUint(s, 10, 64); err != nil {
				http.Error(w, "after: want a sequence number", http.StatusBadRequest)
				return
			}
		}
		f, err := l.existingFeed(chi.URLParam(r, "feed"))
		switch {
		case err != nil:
			http.Error(w, err.Error()+"; retry later", http.StatusServiceUnavailable)
			return
		case f == nil:
			http.Error(w, "no such feed: a feed exists once a relay sends to it (syncloop relay)", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+f.name+`.ndjson"`)
		bw := bufio.NewWriterSize(w, 64<<10)
		err = l.exportFeed(r.Context(), f, after, func(raw string) error {
			bw.WriteString(raw)
			return bw.WriteByte('\n')
		})
		if err == nil {
			err = bw.Flush()
		}
		if err != nil && r.Context().Err() == nil {
			l.log.Warn("live: export cut short", "feed", f.name, "err", err)
			// The body has begun: a reader sees a cut, not a 500.
			panic(http.ErrAbortHandler)
		}
	})
}
