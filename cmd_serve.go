package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/redact"
	"github.com/syncloop/syncloop/server/rooms"
	"github.com/syncloop/syncloop/server/site"
)

// runServe serves the site until ctx is done, then shuts down gracefully:
// in-flight requests get shutdownGrace to finish, websockets are closed by
// the server's Close.
func runServe(ctx context.Context, s stdio, args []string) error {
	fs, f := newServeFlags(s)
	if err := parseFlags(fs, args, s.getenv); err != nil {
		return err
	}
	if err := extractor.CheckTag(f.tag); err != nil {
		return usageError{fmt.Errorf("--tag: %w", err)}
	}
	log, err := newLogger(s.stderr, f.logLevel, f.logFormat)
	if err != nil {
		return err
	}
	if f.dataDir == "" {
		// Rooms are state, not cache: a cleaned cache must not end them.
		if d, err := os.UserConfigDir(); err == nil {
			f.dataDir = filepath.Join(d, "syncloop")
		} else {
			log.Warn("no user config dir: feeds and rooms are kept in memory only; set --data-dir to keep them", "err", err)
		}
	}
	cfg, err := f.config(s.getenv, log)
	if err != nil {
		return err
	}
	plan, err := server.NewPlan(cfg)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// The broker, the site, the feeds, the notes, the rooms and the
	// classes, opened and wired to each other; the server routes to them.
	deps, err := plan.Build()
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := server.New(deps)
	defer srv.Close()
	return f.serve(ctx, log, srv, plan.Identify)
}

// serveFlags are serve's flags, as parsed.
type serveFlags struct {
	addr             string
	tag              string
	sourceDir        string
	cacheDir         string
	token            string
	journalCmd       string
	journalFile      string
	logLevel         string
	logFormat        string
	dataDir          string
	natsURLs         string
	natsListen       string
	natsTokenFile    string
	natsSync         string
	roomTTL          time.Duration
	maxRooms         int
	maxReaders       int
	roomsPerClient   int
	classToken       string
	socketsPerClient int
	newTags          int
	ipv6Prefix       int
	trustedProxy     string
	headerTimeout    time.Duration
	readTimeout      time.Duration
	idleTimeout      time.Duration
	connsPerClient   int
	feedMB           int
	historyMB        int
	quiz             bool
	historyLines     int
}

// newServeFlags defines serve's flags on a new flag set; parseFlags fills
// them in.
func newServeFlags(s stdio) (*flag.FlagSet, *serveFlags) {
	fs := newFlagSet("serve", s)
	f := &serveFlags{}
	fs.StringVar(&f.addr, "addr", ":8080", "listen on `ADDR` (host:port)")
	fs.StringVar(&f.tag, "tag", extractor.DefaultTag, "the Kubernetes `TAG` / opens; any other can be opened by URL")
	fs.StringVar(&f.sourceDir, "source-dir", "", "read the default tag from a Kubernetes checkout in `DIR` instead of the module proxy")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "cache Readings in `DIR` (default: the user cache dir + /syncloop)")
	fs.StringVar(&f.token, "token", "", "bearer `TOKEN` a relay must present to /feeds/{feed}/ingest; empty disables ingest")
	fs.StringVar(&f.journalCmd, "journal-cmd", "", "run `CMD` (through sh -c) and feed its output to the default feed, e.g. 'journalctl -u kubelet -f -o json'")
	fs.StringVar(&f.journalFile, "journal-file", "", "replay a saved journal `FILE` into the default feed")
	fs.StringVar(&f.logLevel, "log-level", "info", "log `LEVEL`: debug (every request), info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "auto", "log `FORMAT`: text, json, or auto (text on a terminal, JSON otherwise)")
	fs.StringVar(&f.dataDir, "data-dir", "", "keep feeds and rooms (the embedded NATS JetStream's files) in `DIR` so they survive a restart (default: the user config dir + /syncloop)")
	fs.StringVar(&f.natsURLs, "nats", "", "use the NATS cluster at `URL,…` (nats://h1:4222,nats://h2:4222) for feeds and rooms instead of an embedded server: run any number of replicas on one cluster")
	fs.StringVar(&f.natsListen, "nats-listen", "", "let the embedded NATS server take clients at `ADDR` (host:port; with no host, loopback's), so other replicas can join it with --nats; they present its token (--nats-token-file)")
	fs.StringVar(&f.natsTokenFile, "nats-token-file", "", "the NATS token is in `FILE` (mode 0600): with --nats-listen the token clients must present, made when the file does not exist (default: the data dir + /nats-token); with --nats the token this replica presents")
	fs.StringVar(&f.natsSync, "nats-sync", "always", "when the embedded NATS server's writes must reach the disk: `always` (a relay's lines are acknowledged, and a reader's note saved, only once they have: a host crash loses none) or every DURATION (e.g. 1s: nothing waits, and a host crash loses up to that much)")
	fs.DurationVar(&f.roomTTL, "room-ttl", 24*time.Hour, "a room with no one in it expires after `DURATION`")
	fs.IntVar(&f.maxRooms, "max-rooms", 48, "rooms held at most, by all replicas together (give each the same; each room's feed counts against a replica's 64 feeds)")
	fs.IntVar(&f.maxReaders, "max-readers", 32, "readers per room at most")
	fs.StringVar(&f.classToken, "class-token", "", "`TOKEN` a class's creator presents (the class form's \"class token\") to make a class of more than 12 rooms; without it a class, and all the classes of one client together, hold 12 rooms")
	fs.IntVar(&f.roomsPerClient, "rooms-per-client", rooms.DefaultPerOwner, "rooms one client address holds at once, on all replicas together (a room no one joins ends after 10 minutes)")
	fs.IntVar(&f.socketsPerClient, "sockets-per-client", clients.DefaultSocketsPerClient, "browser websockets (live panes and rooms) and event streams (a room's notes, a class's overview) one client address holds open at once")
	fs.IntVar(&f.newTags, "new-tags-per-hour", site.DefaultNewTagsPerHour, "tags never fetched before that one client may have this server fetch an hour (each is a ~20 MB download); all rooms' tag switches together count as one client")
	fs.IntVar(&f.ipv6Prefix, "ipv6-prefix", clients.DefaultIPv6Prefix, "`bits` of an IPv6 address that name one client for the per-client limits (64: a host's whole /64 is one client; 128: each address)")
	fs.StringVar(&f.trustedProxy, "trusted-proxy", "", "`CIDR[,CIDR]` of reverse proxies whose X-Forwarded-For names the client for the per-client limits; default none: the client is the connection's address")
	fs.DurationVar(&f.headerTimeout, "header-timeout", 10*time.Second, "a request's headers must arrive within `DURATION` of its first byte")
	fs.DurationVar(&f.readTimeout, "read-timeout", 30*time.Second, "a request's headers and body must arrive within `DURATION` (websockets and event streams, which send no body, are not cut off)")
	fs.DurationVar(&f.idleTimeout, "idle-timeout", 2*time.Minute, "close a kept-alive connection idle for `DURATION`")
	fs.IntVar(&f.connsPerClient, "conns-per-client", clients.DefaultConnsPerClient, "connections one client address holds open at once, websockets included (trusted proxies are not counted)")
	fs.IntVar(&f.feedMB, "feed-mb", feeds.DefaultFeedBytes>>20, "`MB` JetStream keeps of each feed's journal, compressed (the oldest lines go first; none is kept over a week); all feeds together keep at most 64 times this")
	fs.IntVar(&f.historyMB, "history-mb", feeds.DefaultHistoryBytes>>20, "`MB` of recent lines all feeds keep together for readers who join or reconnect, shared equally by the feeds (each keeps at most --history-lines)")
	fs.BoolVar(&f.quiz, "quiz", false, "a course's server: every page leaves out the site's notes, the pod_workers note, \"Written by\" and the answer key (403), so that students write their own answers")
	fs.IntVar(&f.historyLines, "history-lines", 5000, "recent `LINES` each feed keeps at most for readers who join or reconnect, and restores after a restart (within its share of --history-mb)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: syncloop serve [--addr :8080] [--tag TAG] [--source-dir DIR] [--cache-dir DIR] [--data-dir DIR]\n\n"+
			"Serve the reading site: /k8s/TAG/ shows (*Kubelet).syncLoopIteration at TAG with a\n"+
			"note per case, beside a live kubelet journal. \"Start a pair session\" opens a room\n"+
			"(/rooms/ID) where one reader drives and the others follow, with a journal feed of its own.\n\nFlags (each also settable as SYNCLOOP_<FLAG>):\n")
		fs.PrintDefaults()
	}
	return fs, f
}

// config checks the flags and makes them the server's Config; a flag out of
// range is a usageError.
func (f *serveFlags) config(getenv func(string) string, log *slog.Logger) (server.Config, error) {
	if f.headerTimeout <= 0 || f.readTimeout <= 0 || f.idleTimeout <= 0 || f.connsPerClient <= 0 {
		return server.Config{}, usageError{fmt.Errorf("--header-timeout, --read-timeout, --idle-timeout and --conns-per-client must be positive")}
	}
	if f.roomTTL <= 0 || f.maxRooms <= 0 || f.maxReaders <= 0 || f.historyMB <= 0 || f.historyLines <= 0 || f.feedMB <= 0 || f.roomsPerClient <= 0 || f.socketsPerClient <= 0 {
		return server.Config{}, usageError{fmt.Errorf("--room-ttl, --max-rooms, --max-readers, --history-mb, --history-lines, --feed-mb, --rooms-per-client and --sockets-per-client must be positive")}
	}
	proxies, err := clients.ParseTrustedProxies(f.trustedProxy)
	if err != nil {
		return server.Config{}, usageError{fmt.Errorf("--trusted-proxy: %v", err)}
	}
	if f.newTags <= 0 {
		return server.Config{}, usageError{fmt.Errorf("--new-tags-per-hour must be positive")}
	}
	if err := clients.CheckIPv6Prefix(f.ipv6Prefix); err != nil {
		return server.Config{}, usageError{fmt.Errorf("--ipv6-prefix: %v", err)}
	}
	urls, syncEvery, err := f.nats()
	if err != nil {
		return server.Config{}, err
	}
	return server.Config{
		NATS:          urls,
		NATSListen:    f.natsListen,
		NATSTokenFile: f.natsTokenFile,
		NATSSync:      syncEvery,
		DefaultTag:    f.tag,
		SourceDir:     f.sourceDir,
		CacheDir:      f.cacheDir,
		Getenv:        getenv,
		Logger:        log,
		IngestToken:   f.token,
		JournalCmd:    f.journalCmd,
		JournalFile:   f.journalFile,
		DataDir:       f.dataDir,
		RoomTTL:       f.roomTTL,
		MaxRooms:      f.maxRooms,
		MaxReaders:    f.maxReaders,
		HistoryBytes:  f.historyMB << 20,
		RingSize:      f.historyLines,
		FeedBytes:     int64(f.feedMB) << 20,

		RoomsPerClient:   f.roomsPerClient,
		ClassToken:       f.classToken,
		SocketsPerClient: f.socketsPerClient,
		TrustedProxies:   proxies,
		IPv6Prefix:       f.ipv6Prefix,
		NewTagsPerHour:   f.newTags,
		Quiz:             f.quiz,
	}, nil
}

// nats checks the --nats flags: the cluster's URLs (none: the embedded
// server), how often the embedded server syncs (0: always), and the token
// file's default beside the data. It needs f.dataDir settled.
func (f *serveFlags) nats() (urls []string, syncEvery time.Duration, err error) {
	urls = splitList(f.natsURLs)
	if f.natsSync != "always" {
		if syncEvery, err = time.ParseDuration(f.natsSync); err != nil || syncEvery <= 0 {
			return nil, 0, usageError{fmt.Errorf("--nats-sync %q: want always or a positive duration such as 1s", f.natsSync)}
		}
	}
	if len(urls) > 0 && f.natsListen != "" {
		return nil, 0, usageError{fmt.Errorf("--nats-listen opens the embedded server's port; with --nats there is none")}
	}
	if f.natsListen != "" && f.natsTokenFile == "" && f.dataDir != "" {
		f.natsTokenFile = filepath.Join(f.dataDir, "nats-token")
	}
	return urls, syncEvery, nil
}

// serve listens on --addr and serves srv until ctx is done or the listener
// fails, then shuts down: requests in flight get shutdownGrace.
func (f *serveFlags) serve(ctx context.Context, log *slog.Logger, srv *server.Server, id clients.Identify) error {
	tcp, err := net.Listen("tcp", f.addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// One address cannot hold more than its share of the connections,
	// nor hold one with a body that never ends.
	ln := clients.LimitConns(tcp, f.connsPerClient, id)
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: f.headerTimeout,
		ReadTimeout:       f.readTimeout,
		IdleTimeout:       f.idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if u := srv.NATSURL(); u != "" {
		// The URL holds the token: the log shows it masked.
		how := "--nats " + redact.String(u)
		if f.natsTokenFile != "" {
			how += " --nats-token-file (a copy of " + f.natsTokenFile + ")"
		}
		log.Info("nats: other replicas can join with "+how, "nats_url", redact.String(u))
	}
	log.Info("serving", "url", "http://"+displayAddr(ln.Addr())+"/", "tag", f.tag)

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	restart := false
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	case <-srv.NeedsRestart():
		restart = true
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	// Websockets are hijacked, so Shutdown does not wait for them: Close
	// (deferred) ends them with a proper close code.
	srv.Close()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serve: shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	if restart {
		return errors.New("serve: the data dir's disk filled and has space again; JetStream takes writes again only in a new process: exiting for the supervisor to start syncloop again (systemd Restart=always, docker --restart unless-stopped)")
	}
	return nil
}

// shutdownGrace is how long requests in flight may take after a signal.
const shutdownGrace = 5 * time.Second

// displayAddr is a listener's address as a person would type it.
func displayAddr(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok && t.IP.IsUnspecified() {
		return fmt.Sprintf("localhost:%d", t.Port)
	}
	return a.String()
}
