// Package feeds is the live side of the site: one hub per feed (a ring of
// recent lines and a fan-out to browsers), fed by relays over the ingest
// websocket, by the server's own journal command or file, or by the demo
// feed, and stored in a JetStream stream per feed. It owns its state;
// whoever owns feeds of its own (package rooms) registers once (Own: a
// prefix of feed names, and how to look one up, owner.go), lets a feed
// go (DropFeed), and moves one's tag (SetFeedTag); it reads a feed
// through FeedVersion, FeedFired, FeedRelayed, RecordedLines and Line.
// Feeds know nothing of rooms.
//
// The pipeline, per feed; each stage is a type with its own state, and
// calls only the stages after it:
//
//	relay ─► ingest ─┬─► queue: shown before stored ──────────────┐
//	journal, demo    │   (shownQueue, deliver.go; under feed.mu)  │
//	                 └─► pipeline.go ─► publisher ─► JetStream    ├─► hub ─► browsers
//	                     (PubAck: record the queue's lines,       │   (hub.Hub)
//	                      or take them back if refused)           │
//	    JetStream ─► follower: one storedIter (stream.go) ────────┤
//	                 (other replicas' lines, the history)         └─► firedLog: what fired
//	                                                                  (fired.go; own lock)
//	    JetStream ─► storedIter ─► export, the record's rescans, the version guess, migrate
//
// Locks, in the order they are taken: publisher.mu (a feed's writer),
// feed.mu (the shown side: classifier, queue, hub order, source,
// version), firedLog.mu (a leaf). Service.mu (the registry of feeds) is
// never taken under a feed's.
//
// The files:
//
//	ingest.go   a relay's websocket: token (tokens.go), read (each message's
//	            lines shown as they arrive), group, ack once on disk
//	journal.go  or the server's own journal; demo.go, or a simulated kubelet
//	pipeline.go a group of lines through the publisher and the shown side
//	publish.go  the publisher: the stream's tail, what is stored, messages
//	store.go    the feed's JetStream stream and its follower
//	            (stored.go: a stored message's format; migrate.go: the old layout)
//	stream.go   the one reading of a stream every reader uses
//	deliver.go  the shown side: classify, the queue, publishToHub, record
//	browser.go  a browser's websocket: hello, then the hub's batches
//	export.go   the stored lines again, as NDJSON
//	feeds.go    the registry: which feeds a server holds, caps, eviction
//	feed.go     one feed: its parts, its source (a typed state), what browsers are told
//	fired.go, version.go   what fired, and which kubelet logged it
//	metrics.go  the feeds' series for /metrics
//
// Ingest protocol (GET /feeds/{feed}/ingest, websocket, relay → server):
//
//	request header   Authorization: Bearer <token>    (serve --token, or a room's own token; 401 otherwise)
//	relay → server   {"lines":[{"id":"<journald __CURSOR, or relay-run-seq>","raw":"<line>"}, …]}
//	server → relay   {"ack":"<id of the batch's last line>"}
//
// A message is at most 1 MiB (larger: closed with 1009, message too big).
// The server acknowledges a batch once JetStream has stored its lines
// (store.go), so a server killed before the ack has them, and
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
//	{"rewind":N}    the lines from seq N on that this browser has were taken
//	                back: shown before they were stored, then refused by the
//	                store (another replica stored lines in their place, which
//	                follow, numbered from N). The browser drops them.
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
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/hub"
	"github.com/syncloop/syncloop/server/internal/wake"
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
	frameLimit   = 64 << 10 // bytes per browser message: the most a pooled buffer grows to
	frameMin     = 4 << 10  // bytes of a new pooled buffer
	// A browser's writer that sent fewer than coalesceBelow lines waits
	// coalesceFor before the next message, so lines arriving one by one
	// share a write; a line after a quiet spell goes at once. The pane
	// draws a flood at most every 100 ms (live.js RENDER_EVERY), so 20 ms
	// costs a reader nothing, and against 10 ms it halves the writes, most
	// of what fan-out costs: at 50 feeds × 10 readers × 1,000 lines/s, 21
	// lines a message instead of 11–13, the server's CPU 17.8 s instead of
	// 19.9, p99 35 ms instead of 27 (loadtest, 20 s runs on 2 cores; the
	// medians of 8 and 13 runs).
	coalesceBelow = 64
	coalesceFor   = 20 * time.Millisecond
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
	NATSName string // this replica's name in NATS; "" means "syncloop"
	// KnownReadings, when set, returns the Readings of the tags the site
	// knows: a journal that shows no start-up line is told its kubelet's
	// version by their log sites (version.go). LoadTag starts loading a
	// tag's Reading: a feed then reads its lines at its kubelet's tag.
	KnownReadings func() []*extractor.Reading
	LoadTag       func(tag string)
	// Sockets caps the browser sockets per client (shared with the rooms'
	// sockets) and pings them; nil means a cap of its own with the
	// defaults.
	Sockets *clients.Sockets
	// Space, when set, says whether there is disk for a new feed
	// (broker.Space); a feed is refused while it returns an error.
	Space func() error
	// Identify names the client a request counts against in every per-client limit
	// (clients.Identify.Client, one for the whole server); nil means
	// clients.Identify{}.Client: the connection's address.
	Identify func(r *http.Request) string
	Logger   *slog.Logger
	// Metrics, when set, is where the feeds register their series
	// (metrics.go); nil registers nothing.
	Metrics prometheus.Registerer
	// Changed, when set, is told of each journal line recorded as fired
	// (what an instructor's live overview counts).
	Changed *wake.Signal
	// VolumeReading, when set, returns the volume Reading at a tag once it
	// is loaded (nil before): what the record of the volume reading's
	// parts and chains labels lines with (chains.go).
	VolumeReading VolumeReadingFunc
}

// Service owns the feeds: per-feed hubs, ingest from relays, the demo feed.
type Service struct {
	cfg            Config
	reading        func(tag string) *extractor.Reading
	log            *slog.Logger
	b              *broker.Broker
	closeBroker    bool                   // Close closes b too (tests that make a live alone)
	demoHeld       atomic.Bool            // this replica holds the cluster's demo lease (demo.go)
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
	lat            *latency  // where lines' time goes (latency.go)
	ingestBufs     sync.Pool // *bytes.Buffer: relays' messages while they are read and decoded
	// origin names this replica in the messages it stores (hdrOrigin):
	// its consumer tells its own from another replica's by it.
	origin string
	pubs   atomic.Uint64 // messages published: each one's origin is origin-N

	ctx    context.Context // ends on Close
	cancel context.CancelFunc
	wg     sync.WaitGroup // every goroutine and websocket handler
	// The record of what fired's goroutines (fired.go), started under a
	// feed's mu: their own leaf lock, not mu.
	bgMu     sync.Mutex
	bgClosed bool
	bg       sync.WaitGroup

	ownersMu sync.Mutex
	owners   []owner // who owns which feeds (owner.go)

	mu     sync.Mutex
	feeds  map[string]*feed
	closed bool
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
	s := &Service{cfg: cfg, reading: reading, log: cfg.Logger, b: b, feeds: make(map[string]*feed), vacantAfter: vacantAfter, demoIdle: cfg.DemoIdle, demoStreamIdle: demoStreamIdle,
		sockets: cfg.Sockets, synced: b.Synced, origin: rand.Text()}
	s.followFeed = s.follow
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.frames.New = func() any { b := make([]byte, 0, frameMin); return &b }
	s.ingestBufs.New = func() any { return new(bytes.Buffer) }
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.migrateLegacy(s.ctx); err != nil {
		s.cancel()
		return nil, err
	}
	s.lat = newLatency()
	if cfg.Metrics != nil {
		for _, c := range []prometheus.Collector{s.Collector(), s.lat.vec} {
			if err := cfg.Metrics.Register(c); err != nil {
				s.cancel()
				return nil, fmt.Errorf("feeds: metrics: %w", err)
			}
		}
	}

	f, err := s.feed(defaultFeed)
	if err != nil {
		s.Close()
		return nil, err
	}
	s.sweep()
	s.logSites() // the site starts loading the Readings it has cached: their log sites tell versions
	switch {
	case cfg.JournalCmd != "":
		s.startJournal(f, "journal command", func(ctx context.Context, after string, emit relay.Emit) error {
			return relay.RunCommand(ctx, cfg.JournalCmd, after, emit, s.log)
		})
	case cfg.JournalFile != "":
		s.startJournal(f, "journal file", func(ctx context.Context, after string, emit relay.Emit) error {
			return relay.ReplayFile(ctx, cfg.JournalFile, 0, after, emit)
		})
	case cfg.DemoPeriod >= 0: // a negative period turns the demo off (tests)
		s.startDemo(f)
	}
	return s, nil
}

// Close stops every feed goroutine and closes websockets with a proper code.
func (s *Service) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	feeds := slices.Collect(maps.Values(s.feeds))
	s.mu.Unlock()
	s.cancel()
	for _, f := range feeds {
		<-f.started // its follow ends soon: s.ctx is done
		f.stop()
		f.hub.Close()
	}
	s.wg.Wait()
	s.closeBG()
	if s.cfg.Metrics != nil {
		s.cfg.Metrics.Unregister(s.Collector())
		s.cfg.Metrics.Unregister(s.lat.vec)
	}
	if s.closeBroker {
		s.b.Close()
	}
}

// enter registers a handler or goroutine with the live side; false once closed.
func (s *Service) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.wg.Add(1)
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
func (s *Service) existingFeed(name string) (*feed, error) {
	s.mu.Lock()
	f := s.feeds[name]
	if f != nil {
		f.asked = time.Now()
	}
	s.mu.Unlock()
	if f != nil {
		return f.waitStarted()
	}
	if !feedNameRE.MatchString(name) {
		return nil, nil
	}
	if stored, err := s.hasStored(name); err != nil {
		return nil, errStorage
	} else if !stored {
		return nil, nil
	}
	return s.feed(name)
}

// feed returns the named feed, creating it (with its stored history) on
// first use: the server's own feeds (the default, rooms') and those a relay
// with a valid token sends to. Its stream is made and followed outside
// s.mu: while JetStream elects a leader (up to followWithin), other feeds
// are looked up as usual.
func (s *Service) feed(name string) (*feed, error) {
	if !feedNameRE.MatchString(name) {
		return nil, fmt.Errorf("feed name %q: use letters, digits, '.', '_' or '-' (at most 64)", name)
	}
	s.mu.Lock()
	if f, ok := s.feeds[name]; ok {
		f.asked = time.Now()
		s.mu.Unlock()
		return f.waitStarted()
	}
	if s.closed {
		s.mu.Unlock()
		return nil, errStorage
	}
	tagDemo := isTagDemo(name)
	if tagDemo {
		if s.countLocked(true) >= maxTagDemos && !s.evictDemoLocked() {
			s.mu.Unlock()
			return nil, errTooManyDemos
		}
	} else if s.countLocked(false) >= MaxFeeds && !s.evictVacantLocked() {
		s.mu.Unlock()
		return nil, errTooManyFeeds
	}
	if s.cfg.Space != nil {
		// A nearly full disk takes no new journal; the feeds there go on.
		if err := s.cfg.Space(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	f := &feed{
		svc:     s,
		name:    name,
		tag:     s.cfg.DefaultTag,
		hub:     hub.New(s.cfg.RingSize),
		asked:   time.Now(),
		counts:  feedCounts{byCase: make(map[string]uint64)},
		pub:     publisher{name: name, subject: feedSubject(name)},
		started: make(chan struct{}),
		ready:   make(chan struct{}),
	}
	if tagDemo {
		f.tag = strings.TrimPrefix(name, demoFeedPrefix) // a tag's demo feed reads its tag
	}
	f.newClassifier()
	// Nothing stored yet: the hub has every line stored.
	f.queue.storedTo.Store(f.hub.Next())
	s.feeds[name] = f // a placeholder until started: it counts, and a second caller waits for it
	s.shareHistory()
	s.mu.Unlock()

	if err := s.followFeed(f); err != nil {
		s.log.Error("feeds: feed not followed", "feed", name, "err", err)
		s.mu.Lock()
		if s.feeds[name] == f {
			delete(s.feeds, name)
			s.shareHistory()
		}
		s.mu.Unlock()
		f.hub.Close()
		f.startErr = errStorage
	}
	close(f.started)
	return f.waitStarted()
}

// isTagDemo reports whether name is a tag's demo feed ("demo-v1.20.0").
func isTagDemo(name string) bool {
	t, ok := strings.CutPrefix(name, demoFeedPrefix)
	return ok && extractor.CheckTag(t) == nil
}

// countLocked counts the tags' demo feeds (demos) or the other feeds. The
// two have separate caps (maxTagDemos, MaxFeeds), so that pages opened at
// many tags cannot take the feeds relays and rooms need. s.mu is held.
func (s *Service) countLocked(demos bool) int {
	n := 0
	for name := range s.feeds {
		if isTagDemo(name) == demos {
			n++
		}
	}
	return n
}

// evictDemoLocked lets go of the tag demo no browser watches that was
// asked for least recently, if any, and reports whether it did. s.mu is
// held.
func (s *Service) evictDemoLocked() bool {
	var oldest *feed
	for name, f := range s.feeds {
		if isTagDemo(name) && f.isStarted() && f.hub.Stats().Subscribers == 0 && (oldest == nil || f.asked.Before(oldest.asked)) {
			oldest = f
		}
	}
	if oldest == nil {
		return false
	}
	oldest.mu.Lock()
	oldest.stopDemo(noteDemoLetGo)
	oldest.mu.Unlock()
	s.letGoLocked(oldest, noteDemoLetGo)
	return true
}

// letGoLocked forgets f on this replica: its consumer stops, its hub
// closes (its browsers are told). Its stored lines stay. s.mu is held.
func (s *Service) letGoLocked(f *feed, why string) {
	delete(s.feeds, f.name)
	s.shareHistory()
	f.stop()
	f.hub.Close()
	s.log.Info("feeds: "+why, "feed", f.name)
}

// vacantAfter is how long a feed must have gone unasked-for before it may
// be let go as vacant: a handler that just got it subscribes well within.
const vacantAfter = 10 * time.Second

// evictVacantLocked lets go of the vacant feed asked for least recently, if
// any: one with no lines, no browser, no relay and no source (a relay that
// connected and sent nothing, a room's feed no one used). It reports
// whether a feed was let go. s.mu is held.
func (s *Service) evictVacantLocked() bool {
	var oldest *feed
	for name, f := range s.feeds {
		if name == defaultFeed || isTagDemo(name) || time.Since(f.asked) < s.vacantAfter || !f.isStarted() {
			continue
		}
		if st := f.hub.Stats(); st.Stored > 0 || st.Subscribers > 0 {
			continue
		}
		f.mu.Lock()
		// A relay gone without sending a line leaves sourceRelay and nothing else.
		busy := f.src.relays > 0 || f.counts.ingested > 0 || (f.src.kind != sourceNone && f.src.kind != sourceRelay)
		f.mu.Unlock()
		if !busy && (oldest == nil || f.asked.Before(oldest.asked)) {
			oldest = f
		}
	}
	if oldest == nil {
		return false
	}
	s.letGoLocked(oldest, "vacant feed let go to make room for another")
	return true
}

// DefaultHistoryBytes is Config.HistoryBytes's default.
const DefaultHistoryBytes = 64 << 20

// shareHistory gives each feed an equal share of Config.HistoryBytes as
// its ring's byte limit. Lines are bounded in number (RingSize) and in
// size (64 KiB shown), but not what 64 feeds times 5,000 lines of any size
// may hold: this is what bounds the server's memory. s.mu is held.
func (s *Service) shareHistory() {
	if len(s.feeds) == 0 {
		return
	}
	share := s.cfg.HistoryBytes / len(s.feeds)
	for _, f := range s.feeds {
		f.hub.SetByteLimit(share)
	}
}

// feedOr404 is the feed the request names, made if it is new (a relay's
// ingest); when there is none, it answers why (feedError) and is nil.
func (s *Service) feedOr404(w http.ResponseWriter, r *http.Request) *feed {
	f, err := s.feed(chi.URLParam(r, "feed"))
	if e := feedError(f, err); e != nil {
		httperr.Text(w, e)
		return nil
	}
	return f
}

// DropFeed forgets the named feed and deletes its stream (its stored lines): its
// browsers are disconnected, a relay still attached feeds nothing that is kept.
func (s *Service) DropFeed(name string) {
	s.mu.Lock()
	f := s.feeds[name]
	delete(s.feeds, name)
	s.shareHistory()
	s.mu.Unlock()
	if f != nil {
		<-f.started // then its consumer, if any, is there to stop
		f.gone.Store(true)
		f.stop()
		f.hub.Close()
	}
	s.purgeFeed(name)
}
