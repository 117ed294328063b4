// Package broker connects syncloop to NATS JetStream, where everything
// more than one replica or restart must see lives: by default a NATS
// server embedded in this process (JetStream storage under the data dir,
// an in-process connection, no port unless asked), or an external cluster
// given by URL. The rest of the server sees one connection either way.
package broker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/redact"
)

// Config says which NATS to use.
type Config struct {
	// URLs of an external NATS cluster (nats://h1:4222,…); empty embeds a server.
	URLs []string
	// Dir is where the embedded server keeps JetStream's files (a "nats"
	// directory is made in it); "" keeps them in memory only.
	Dir string
	// Listen, when set, opens a client port (host:port) on the embedded
	// server, so that other replicas can use it. With no host it is
	// loopback's. Clients must present the token (TokenFile).
	Listen string
	// TokenFile holds the token NATS clients present. With Listen, the
	// embedded server requires it, and makes the file (mode 0600) when
	// there is none; without one it makes a token of its own, and refuses
	// to listen beyond loopback, since no other host could learn it. With
	// URLs, the token is presented to the cluster (a URL's own
	// nats://TOKEN@host works too).
	TokenFile string
	// SyncInterval is how often the embedded server fsyncs JetStream's
	// files. 0 means that what Synced waits for is on disk: a line a relay
	// saw acknowledged survives a host crash (sync.go); everything else is
	// fsynced within backstopSync. (A process crash loses nothing either
	// way: each write has reached the kernel before its PubAck.) A cluster
	// keeps acknowledged writes by replication, and its own setting.
	SyncInterval time.Duration
	// Name names this process's connection (it shows in NATS monitoring).
	Name   string
	Logger *slog.Logger
	// MaxStore is the most the embedded server's JetStream stores on disk;
	// 0 leaves it to JetStream, which takes 75% of the space free when it
	// starts and never more, so that a server started on a nearly full
	// disk refused new streams for good, whatever was freed later.
	MaxStore int64
	// MinFree is the free space under Dir the embedded server needs to
	// start, and to take a new feed (Space).
	MinFree int64
}

// lanes is how many connections carry feed traffic (see Lane).
const lanes = 8

// Broker is a connection to NATS with JetStream; Close drains it and stops
// an embedded server.
type Broker struct {
	NC *nats.Conn
	JS jetstream.JetStream
	// lanes are more connections to the same NATS, for traffic that one
	// connection would serialize (Lane); lanes[0] is NC.
	lanes   []*nats.Conn
	laneJS  []jetstream.JetStream
	connect func() (*nats.Conn, error)
	// Memory is true when nothing outlives the process: an embedded
	// server without a directory. Streams and buckets then use memory storage.
	Memory bool
	// Replicas is how many copies JetStream keeps of a stream: 1 embedded,
	// 3 in a cluster of three or more servers.
	Replicas int

	ns     *natsserver.Server // nil when external
	token  string             // what the embedded server's clients present
	unlock func()
	tmp    string
	once   sync.Once

	spaceDir string // where Space checks for free space; "" for none
	minFree  int64

	// A store that could not be written, and the wait for space to
	// restart JetStream (recover.go); only with a directory.
	log         *slog.Logger
	storeDir    string
	faultMu     sync.Mutex
	fault       string
	recoverCtx  context.Context
	recoverStop context.CancelFunc
	recoverWG   sync.WaitGroup
	restart     chan struct{} // closed when the process must restart; nil never is

	gs       *groupSync // nil: Synced waits for nothing
	gsStop   context.CancelFunc
	gsDone   chan struct{}
	gsCloseF func()
}

// syncGap is the least time between two group syncs: at 50 feeds of
// 1,000 lines/s, syncs back to back (hundreds a second) raised the relay →
// browser latency from p50 13 ms / p99 71 ms (25 ms apart) to 21 / 87 ms,
// the syncs' journal commits holding up the streams' writes; an ack waits
// up to this much longer.
const syncGap = 20 * time.Millisecond

// backstopSync is how often the embedded server fsyncs by itself when
// Config.SyncInterval is 0: what nobody waited for with Synced (a room's
// record, a reader's note) is on disk within it.
const backstopSync = time.Second

// Synced returns a channel closed once everything JetStream acknowledged
// before the call is on disk (embedded, with Config.SyncInterval 0), or at
// once (a cluster: replicated before its PubAck; or a SyncInterval chosen).
func (b *Broker) Synced() <-chan struct{} {
	if b.gs == nil {
		return closedChan
	}
	return b.gs.synced()
}

// Sync waits until everything JetStream acknowledged before the call is on
// disk, as Synced says.
func (b *Broker) Sync(ctx context.Context) error {
	select {
	case <-b.Synced():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Open starts an embedded server or connects to cfg.URLs.
func Open(ctx context.Context, cfg Config) (*Broker, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	opts := []nats.Option{
		nats.Name(cmp.Or(cfg.Name, "syncloop")),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("nats: disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("nats: reconnected", "url", nc.ConnectedUrlRedacted()) }),
	}
	if len(cfg.URLs) > 0 {
		if cfg.TokenFile != "" {
			token, err := readToken(cfg.TokenFile)
			if err != nil {
				return nil, err
			}
			opts = append(opts, nats.Token(token))
		}
		url := strings.Join(cfg.URLs, ",")
		b := &Broker{Replicas: 1, connect: func() (*nats.Conn, error) {
			return nats.Connect(url, append(opts, nats.RetryOnFailedConnect(false))...)
		}}
		if err := b.openLanes(); err != nil {
			b.closeLanes()
			// The URLs may hold a password or token; what is printed must not.
			return nil, fmt.Errorf("nats: connect to %s: %w (check --nats, or omit it to embed a server)", redact.String(url), redactedError{err})
		}
		if err := b.learnReplicas(ctx); err != nil {
			b.closeLanes()
			return nil, err
		}
		log.Info("nats: connected to a cluster", "url", b.NC.ConnectedUrlRedacted(), "replicas", b.Replicas)
		return b, nil
	}
	return openEmbedded(cfg, opts, log)
}

// learnReplicas asks JetStream how many servers it has (through the
// account's info: a server count is not in it, so a probe stream tells).
func (b *Broker) learnReplicas(ctx context.Context) error {
	err := Retry(ctx, time.Minute, func(ctx context.Context) error {
		_, err := b.JS.AccountInfo(ctx)
		return err
	})
	if err != nil {
		return fmt.Errorf("nats: JetStream is not available on this cluster: %w", err)
	}
	servers := len(b.NC.Servers())
	if servers >= 3 {
		b.Replicas = 3
	}
	return nil
}

func openEmbedded(cfg Config, opts []nats.Option, log *slog.Logger) (*Broker, error) {
	b := &Broker{Replicas: 1, unlock: func() {}}
	store, err := b.openStore(cfg)
	if err != nil {
		b.close()
		return nil, err
	}
	so := &natsserver.Options{
		ServerName: cmp.Or(cfg.Name, "syncloop"),
		JetStream:  true,
		StoreDir:   store,
		NoSigs:     true,
		MaxPayload: 8 << 20, // a relay's batch is up to 1 MiB; a journald entry can be large
		NoLog:      true,
		DontListen: cfg.Listen == "",
	}
	if cfg.MaxStore > 0 && !b.Memory {
		so.JetStreamMaxStore = cfg.MaxStore
	}
	if err := b.startSync(so, cfg.SyncInterval, log); err != nil {
		b.close()
		return nil, err
	}
	if cfg.Listen != "" {
		if err := b.listen(so, cfg); err != nil {
			b.close()
			return nil, err
		}
		opts = append(opts, nats.Token(b.token))
	}
	ns, err := natsserver.NewServer(so)
	if err != nil {
		b.close()
		return nil, fmt.Errorf("nats: embedded server: %w", err)
	}
	b.ns = ns
	if !b.Memory {
		b.storeDir = store
		b.watchStore(log)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		b.close()
		return nil, errors.New("nats: the embedded server did not start within 30s")
	}
	opts = append(opts, nats.InProcessServer(ns))
	b.connect = func() (*nats.Conn, error) { return nats.Connect(ns.ClientURL(), opts...) }
	if err := b.openLanes(); err != nil {
		b.closeLanes()
		b.close()
		return nil, fmt.Errorf("nats: in-process connection: %w", err)
	}
	if cfg.Listen != "" {
		log.Info("nats: embedded server listening for other replicas; they present its token", "url", ns.ClientURL(), "token_file", cfg.TokenFile)
	}
	return b, nil
}

// openStore makes the embedded server's store directory: under cfg.Dir,
// locked against a second server and checked for free space, or a
// temporary one when the state is kept in memory (cfg.Dir "").
func (b *Broker) openStore(cfg Config) (string, error) {
	if cfg.Dir == "" {
		b.Memory = true
		dir, err := os.MkdirTemp("", "syncloop-nats-")
		if err != nil {
			return "", fmt.Errorf("nats: %w", err)
		}
		b.tmp = dir
		return dir, nil
	}
	store := filepath.Join(cfg.Dir, "nats")
	if err := os.MkdirAll(store, 0o755); err != nil {
		return "", fmt.Errorf("nats: storage: %w", err)
	}
	unlock, err := lockDir(store)
	if err != nil {
		return "", err
	}
	b.unlock = unlock
	if err := CheckSpace(store, cfg.MinFree, "the JetStream store (rooms, notes, the feeds' journals)"); err != nil {
		return "", fmt.Errorf("nats: storage: %w", err)
	}
	b.spaceDir, b.minFree = store, cfg.MinFree
	return store, nil
}

// startSync sets when the store's writes reach the disk: every interval
// when one is given; otherwise before each acknowledgement, by one syncfs
// for a group of writes (the group commit, started here) where the system
// has it, or by an fsync of each write.
func (b *Broker) startSync(so *natsserver.Options, interval time.Duration, log *slog.Logger) error {
	switch {
	case interval > 0:
		so.SyncInterval = interval
		return nil
	case b.Memory:
		return nil // nothing is on disk to be waited for
	}
	sync, closeF, err := syncFS(so.StoreDir)
	if err != nil {
		return err
	}
	if sync == nil { // no syncfs here: fsync each write before its PubAck
		so.SyncAlways = true
		return nil
	}
	so.SyncInterval = backstopSync
	b.gs = newGroupSync(sync, func(err error) { log.Error("nats: storage not synced; acknowledgements wait", "err", err) }, syncGap)
	b.gsCloseF = closeF
	ctx, cancel := context.WithCancel(context.Background())
	b.gsStop, b.gsDone = cancel, make(chan struct{})
	go func() { defer close(b.gsDone); b.gs.run(ctx) }() // owned: stopped in close
	return nil
}

// listen opens the embedded server's client port at cfg.Listen (no host:
// loopback's; port 0: any), which clients enter with its token (b.token).
func (b *Broker) listen(so *natsserver.Options, cfg Config) error {
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return fmt.Errorf("--nats-listen %q: want host:port", cfg.Listen)
	}
	so.Host = cmp.Or(host, "127.0.0.1")
	if so.Port, err = strconv.Atoi(port); err != nil {
		return fmt.Errorf("--nats-listen %q: want host:port", cfg.Listen)
	}
	token, err := listenToken(so.Host, cfg.TokenFile)
	if err != nil {
		return err
	}
	so.Authorization, b.token = token, token
	if so.Port == 0 {
		so.Port = natsserver.RANDOM_PORT
	}
	return nil
}

// openLanes opens the broker's connections: NC (and JS) first, then the
// other lanes.
func (b *Broker) openLanes() error {
	for range lanes {
		nc, err := b.connect()
		if err != nil {
			return err
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return err
		}
		b.lanes, b.laneJS = append(b.lanes, nc), append(b.laneJS, js)
	}
	b.NC, b.JS = b.lanes[0], b.laneJS[0]
	return nil
}

func (b *Broker) closeLanes() {
	for _, nc := range b.lanes {
		nc.Close()
	}
}

// Lane is one of the broker's connections, always the same for a key
// (a feed's name): its publishes and its consumer's deliveries stay in
// order on it, and other keys' traffic goes through other connections.
// One connection serializes everything behind its lock and its socket (an
// in-process pipe when embedded); measured at 50 feeds of 1,000 lines/s,
// 44 of the 50 ingest goroutines were waiting for that lock.
func (b *Broker) Lane(key string) jetstream.JetStream {
	h := fnv.New32a()
	h.Write([]byte(key))
	return b.laneJS[h.Sum32()%uint32(len(b.laneJS))]
}

// Storage is the storage for streams and buckets: memory when nothing
// outlives the process (Broker.Memory), files otherwise.
func Storage(memory bool) jetstream.StorageType {
	if memory {
		return jetstream.MemoryStorage
	}
	return jetstream.FileStorage
}

// ClientURL is the embedded server's client URL with its token
// (nats://TOKEN@host:port), what another replica's --nats takes; "" when
// it does not listen, or the broker is external. It is a secret: log it
// through package redact.
func (b *Broker) ClientURL() string {
	if b.ns == nil || b.ns.Addr() == nil {
		return ""
	}
	u := b.ns.ClientURL()
	if rest, ok := strings.CutPrefix(u, "nats://"); ok && b.token != "" {
		return "nats://" + b.token + "@" + rest
	}
	return u
}

// Healthy reports whether JetStream answers: what "storage cannot be
// written" means since state moved onto it.
func (b *Broker) Healthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if _, err := b.JS.AccountInfo(ctx); err != nil {
		return fmt.Errorf("JetStream unavailable: %w", err)
	}
	return nil
}

// Close drains the connection (pending publishes and handlers finish),
// then shuts an embedded server down and releases its directory.
func (b *Broker) Close() { b.once.Do(b.drain) }

func (b *Broker) drain() {
	var wg sync.WaitGroup
	for _, nc := range b.lanes {
		wg.Go(func() {
			done := make(chan struct{})
			nc.SetClosedHandler(func(*nats.Conn) { close(done) })
			if err := nc.Drain(); err == nil {
				select {
				case <-done:
				case <-time.After(10 * time.Second):
				}
			}
			nc.Close()
		})
	}
	wg.Wait()
	b.close()
}

func (b *Broker) close() {
	if b.recoverStop != nil {
		b.recoverStop()
		b.recoverWG.Wait()
	}
	if b.gsStop != nil {
		b.gsStop()
		<-b.gsDone
		b.gsCloseF()
	}
	if b.ns != nil {
		b.ns.Shutdown()
		b.ns.WaitForShutdown()
	}
	if b.unlock != nil {
		b.unlock()
	}
	if b.tmp != "" {
		os.RemoveAll(b.tmp)
	}
}

// redactedError is an error whose message may hold a URL's password,
// masked when it is printed.
type redactedError struct{ err error }

func (e redactedError) Error() string { return redact.String(e.err.Error()) }
func (e redactedError) Unwrap() error { return e.err }

// Retry calls f, each call with 5 s, until it succeeds or within has
// passed: a cluster that just started answers JetStream requests only once
// it has elected a leader.
func Retry(ctx context.Context, within time.Duration, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	wait := 100 * time.Millisecond
	for {
		actx, acancel := context.WithTimeout(ctx, 5*time.Second)
		err := f(actx)
		acancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// LostRace reports whether err is a compare-and-set that lost: a KV
// Create of a key that holds a value, an Update from a revision no longer
// the key's, or a publish expecting a last sequence that moved. The codes
// are asked too: on a replicated bucket, a Create over a delete marker
// returns the stream's "wrong last sequence" (10164) as it comes, not as
// jetstream.ErrKeyExists.
func LostRace(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return true
	}
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists)
}
