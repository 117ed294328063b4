package main

import (
	"context"
	"errors"
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
	fs := newFlagSet("serve", s)
	addr := fs.String("addr", ":8080", "listen on `ADDR` (host:port)")
	tag := fs.String("tag", extractor.DefaultTag, "the Kubernetes `TAG` / opens; any other can be opened by URL")
	sourceDir := fs.String("source-dir", "", "read the default tag from a Kubernetes checkout in `DIR` instead of the module proxy")
	cacheDir := fs.String("cache-dir", "", "cache Readings in `DIR` (default: the user cache dir + /syncloop)")
	token := fs.String("token", "", "bearer `TOKEN` a relay must present to /feeds/{feed}/ingest; empty disables ingest")
	journalCmd := fs.String("journal-cmd", "", "run `CMD` (through sh -c) and feed its output to the default feed, e.g. 'journalctl -u kubelet -f -o json'")
	journalFile := fs.String("journal-file", "", "replay a saved journal `FILE` into the default feed")
	logLevel := fs.String("log-level", "info", "log `LEVEL`: debug (every request), info, warn or error")
	logFormat := fs.String("log-format", "auto", "log `FORMAT`: text, json, or auto (text on a terminal, JSON otherwise)")
	dataDir := fs.String("data-dir", "", "keep feeds and rooms (the embedded NATS JetStream's files) in `DIR` so they survive a restart (default: the user config dir + /syncloop)")
	natsURLs := fs.String("nats", "", "use the NATS cluster at `URL,…` (nats://h1:4222,nats://h2:4222) for feeds and rooms instead of an embedded server: run any number of replicas on one cluster")
	natsListen := fs.String("nats-listen", "", "let the embedded NATS server take clients at `ADDR` (host:port; with no host, loopback's), so other replicas can join it with --nats; they present its token (--nats-token-file)")
	natsTokenFile := fs.String("nats-token-file", "", "the NATS token is in `FILE` (mode 0600): with --nats-listen the token clients must present, made when the file does not exist (default: the data dir + /nats-token); with --nats the token this replica presents")
	natsSync := fs.String("nats-sync", "always", "when the embedded NATS server's writes must reach the disk: `always` (a relay's lines are acknowledged, and a reader's note saved, only once they have: a host crash loses none) or every DURATION (e.g. 1s: nothing waits, and a host crash loses up to that much)")
	roomTTL := fs.Duration("room-ttl", 24*time.Hour, "a room with no one in it expires after `DURATION`")
	maxRooms := fs.Int("max-rooms", 48, "rooms held at most, by all replicas together (give each the same; each room's feed counts against a replica's 64 feeds)")
	maxReaders := fs.Int("max-readers", 32, "readers per room at most")
	classToken := fs.String("class-token", "", "`TOKEN` a class's creator presents (the class form's \"class token\") to make a class of more than 12 rooms; without it a class, and all the classes of one client together, hold 12 rooms")
	roomsPerClient := fs.Int("rooms-per-client", rooms.DefaultPerOwner, "rooms one client address holds at once, on all replicas together (a room no one joins ends after 10 minutes)")
	socketsPerClient := fs.Int("sockets-per-client", clients.DefaultSocketsPerClient, "browser websockets (live panes and rooms) one client address holds open at once")
	newTags := fs.Int("new-tags-per-hour", site.DefaultNewTagsPerHour, "tags never fetched before that one client may have this server fetch an hour (each is a ~20 MB download); all rooms' tag switches together count as one client")
	ipv6Prefix := fs.Int("ipv6-prefix", clients.DefaultIPv6Prefix, "`bits` of an IPv6 address that name one client for the per-client limits (64: a host's whole /64 is one client; 128: each address)")
	trustedProxy := fs.String("trusted-proxy", "", "`CIDR[,CIDR]` of reverse proxies whose X-Forwarded-For names the client for the per-client limits; default none: the client is the connection's address")
	headerTimeout := fs.Duration("header-timeout", 10*time.Second, "a request's headers must arrive within `DURATION` of its first byte")
	readTimeout := fs.Duration("read-timeout", 30*time.Second, "a request's headers and body must arrive within `DURATION` (websockets and event streams, which send no body, are not cut off)")
	idleTimeout := fs.Duration("idle-timeout", 2*time.Minute, "close a kept-alive connection idle for `DURATION`")
	connsPerClient := fs.Int("conns-per-client", clients.DefaultConnsPerClient, "connections one client address holds open at once, websockets included (trusted proxies are not counted)")
	feedMB := fs.Int("feed-mb", feeds.DefaultFeedBytes>>20, "`MB` JetStream keeps of each feed's journal, compressed (the oldest lines go first; none is kept over a week); all feeds together keep at most 64 times this")
	historyMB := fs.Int("history-mb", feeds.DefaultHistoryBytes>>20, "`MB` of recent lines all feeds keep together for readers who join or reconnect, shared equally by the feeds (each keeps at most --history-lines)")
	quiz := fs.Bool("quiz", false, "a course's server: every page leaves out the site's notes, the pod_workers note, \"Written by\" and the answer key (403), so that students write their own answers")
	historyLines := fs.Int("history-lines", 5000, "recent `LINES` each feed keeps at most for readers who join or reconnect, and restores after a restart (within its share of --history-mb)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: syncloop serve [--addr :8080] [--tag TAG] [--source-dir DIR] [--cache-dir DIR] [--data-dir DIR]\n\n"+
			"Serve the reading site: /k8s/TAG/ shows (*Kubelet).syncLoopIteration at TAG with a\n"+
			"note per case, beside a live kubelet journal. \"Start a pair session\" opens a room\n"+
			"(/rooms/ID) where one reader drives and the others follow, with a journal feed of its own.\n\nFlags (each also settable as SYNCLOOP_<FLAG>):\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, s.getenv); err != nil {
		return err
	}
	if err := extractor.CheckTag(*tag); err != nil {
		return usageError{fmt.Errorf("--tag: %w", err)}
	}
	log, err := newLogger(s.stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}
	if *dataDir == "" {
		// Rooms are state, not cache: a cleaned cache must not end them.
		if d, err := os.UserConfigDir(); err == nil {
			*dataDir = filepath.Join(d, "syncloop")
		} else {
			log.Warn("no user config dir: feeds and rooms are kept in memory only; set --data-dir to keep them", "err", err)
		}
	}
	if *headerTimeout <= 0 || *readTimeout <= 0 || *idleTimeout <= 0 || *connsPerClient <= 0 {
		return usageError{fmt.Errorf("--header-timeout, --read-timeout, --idle-timeout and --conns-per-client must be positive")}
	}
	if *roomTTL <= 0 || *maxRooms <= 0 || *maxReaders <= 0 || *historyMB <= 0 || *historyLines <= 0 || *feedMB <= 0 || *roomsPerClient <= 0 || *socketsPerClient <= 0 {
		return usageError{fmt.Errorf("--room-ttl, --max-rooms, --max-readers, --history-mb, --history-lines, --feed-mb, --rooms-per-client and --sockets-per-client must be positive")}
	}
	proxies, err := clients.ParseTrustedProxies(*trustedProxy)
	if err != nil {
		return usageError{fmt.Errorf("--trusted-proxy: %v", err)}
	}
	if *newTags <= 0 {
		return usageError{fmt.Errorf("--new-tags-per-hour must be positive")}
	}
	if err := clients.CheckIPv6Prefix(*ipv6Prefix); err != nil {
		return usageError{fmt.Errorf("--ipv6-prefix: %v", err)}
	}

	urls := splitList(*natsURLs)
	var syncEvery time.Duration
	if *natsSync != "always" {
		if syncEvery, err = time.ParseDuration(*natsSync); err != nil || syncEvery <= 0 {
			return usageError{fmt.Errorf("--nats-sync %q: want always or a positive duration such as 1s", *natsSync)}
		}
	}
	if len(urls) > 0 && *natsListen != "" {
		return usageError{fmt.Errorf("--nats-listen opens the embedded server's port; with --nats there is none")}
	}
	if *natsListen != "" && *natsTokenFile == "" && *dataDir != "" {
		*natsTokenFile = filepath.Join(*dataDir, "nats-token")
	}
	plan, err := server.NewPlan(server.Config{
		NATS:          urls,
		NATSListen:    *natsListen,
		NATSTokenFile: *natsTokenFile,
		NATSSync:      syncEvery,
		DefaultTag:    *tag,
		SourceDir:     *sourceDir,
		CacheDir:      *cacheDir,
		Getenv:        s.getenv,
		Logger:        log,
		IngestToken:   *token,
		JournalCmd:    *journalCmd,
		JournalFile:   *journalFile,
		DataDir:       *dataDir,
		RoomTTL:       *roomTTL,
		MaxRooms:      *maxRooms,
		MaxReaders:    *maxReaders,
		HistoryBytes:  *historyMB << 20,
		RingSize:      *historyLines,
		FeedBytes:     int64(*feedMB) << 20,

		RoomsPerClient:   *roomsPerClient,
		ClassToken:       *classToken,
		SocketsPerClient: *socketsPerClient,
		TrustedProxies:   proxies,
		IPv6Prefix:       *ipv6Prefix,
		NewTagsPerHour:   *newTags,
		Quiz:             *quiz,
	})
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

	tcp, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	// One address cannot hold more than its share of the connections,
	// nor hold one with a body that never ends.
	ln := clients.LimitConns(tcp, *connsPerClient, proxies)
	hs := &http.Server{
		Handler:           srv,
		ReadHeaderTimeout: *headerTimeout,
		ReadTimeout:       *readTimeout,
		IdleTimeout:       *idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	if u := srv.NATSURL(); u != "" {
		// The URL holds the token: the log shows it masked.
		how := "--nats " + redact.String(u)
		if *natsTokenFile != "" {
			how += " --nats-token-file (a copy of " + *natsTokenFile + ")"
		}
		log.Info("nats: other replicas can join with "+how, "nats_url", redact.String(u))
	}
	log.Info("serving", "url", "http://"+displayAddr(ln.Addr())+"/", "tag", *tag)

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
