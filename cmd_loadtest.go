package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server"
	"github.com/syncloop/syncloop/server/loadtest"
)

const loadtestUsage = `Usage: syncloop loadtest [--rooms M] [--readers N] [--rate L] [--duration D] [--replicas R --nats URL,…] [--server URL,… --token T] [--pid PID,…]

Load a syncloop server on loopback as a class would: M feeds, each fed by a
relay-like ingest client at L lines/s (klog lines at the tag's real log
sites) and read by N browser-like websocket clients, for D. Then print the
ingest-send → browser-receive latency (p50, p99, max), lines delivered,
skipped (the server's markers for readers that fell behind), lost and
duplicated, and the server's RSS and CPU.

Without --server it starts "syncloop serve" as a child process on a free
loopback port with a fresh cache directory (the Reading of the tag is copied
from --cache-dir, by default the user cache, when there), and stops it at the end. --in-process runs
the server inside this process instead (its RSS and CPU then include the
clients'), which lets --cpuprofile profile server and clients together.

With --nats it starts --replicas replicas of "syncloop serve --nats URL,…" on
that NATS cluster instead, and spreads the load over them as a load
balancer would: feed i's relay goes to replica i mod R, and its readers to
every replica in turn (so most read lines another replica stored). --pid
adds processes to measure, such as the cluster's nats-server nodes: the
server's CPU and RSS are then theirs too (server/loadtest/cluster.sh runs
the whole shape: three nats-server nodes, two replicas).

It exits 1 when a reader that kept up lost a line, a line was duplicated,
or --max-p99 / --max-rss-mb is exceeded.

Examples:
  syncloop loadtest --rooms 50 --readers 10 --rate 1000 --duration 20s --max-p99 100ms --max-rss-mb 300
  syncloop loadtest --rooms 1 --readers 200 --rate 5000 --duration 20s --max-p99 100ms --max-rss-mb 200
  syncloop loadtest --server http://127.0.0.1:8080 --token "$T" --pid "$(pgrep -n syncloop)"
  syncloop loadtest --replicas 2 --nats nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224 --pid "$NATS_PIDS"

Flags (each also settable as SYNCLOOP_<FLAG>):
`

func runLoadtest(ctx context.Context, s stdio, args []string) error {
	fs, f := newLoadtestFlags(s)
	if err := parseFlags(fs, args, s.getenv); err != nil {
		return err
	}
	o, err := f.options(s.stderr)
	if err != nil {
		return err
	}
	if f.cpuProfile != "" {
		file, err := os.Create(f.cpuProfile)
		if err != nil {
			return fmt.Errorf("loadtest: %w", err)
		}
		defer file.Close()
		if err := pprof.StartCPUProfile(file); err != nil {
			return fmt.Errorf("loadtest: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	if f.target == "" {
		dir, err := os.MkdirTemp("", "syncloop-loadtest-")
		if err != nil {
			return fmt.Errorf("loadtest: %w", err)
		}
		defer os.RemoveAll(dir)
		stop, err := f.startServers(ctx, s.stderr, dir, &o)
		defer stop()
		if err != nil {
			return err
		}
	}

	// Started once the server is: the embedded NATS server sets the block
	// profile rate as it starts.
	for _, p := range []struct{ file, name string }{{f.blockProfile, "block"}, {f.mutexProfile, "mutex"}} {
		if p.file == "" {
			continue
		}
		stop, err := startProfile(p.name, p.file, s.stderr)
		if err != nil {
			return err
		}
		defer stop()
	}
	res, err := loadtest.Run(ctx, o)
	if err != nil {
		return err
	}
	res.Print(s.stdout)
	return res.Check(f.maxP99, int64(f.maxRSS)<<20)
}

// loadtestFlags are loadtest's flags, as parsed.
type loadtestFlags struct {
	rooms        int
	readers      int
	rate         int
	duration     time.Duration
	drain        time.Duration
	target       string
	token        string
	pids         string
	replicas     int
	natsURLs     string
	inProcess    bool
	cpuProfile   string
	memProfile   string
	blockProfile string
	mutexProfile string
	tag          string
	cacheDir     string
	journal      bool
	maxP99       time.Duration
	maxRSS       int
}

// newLoadtestFlags defines loadtest's flags on a new flag set; parseFlags
// fills them in.
func newLoadtestFlags(s stdio) (*flag.FlagSet, *loadtestFlags) {
	fs := newFlagSet("loadtest", s)
	f := &loadtestFlags{}
	fs.IntVar(&f.rooms, "rooms", 50, "feeds to create and load (one per room)")
	fs.IntVar(&f.readers, "readers", 10, "browser websocket clients per feed")
	fs.IntVar(&f.rate, "rate", 1000, "lines per second sent to each feed")
	fs.DurationVar(&f.duration, "duration", 20*time.Second, "how long lines are sent")
	fs.DurationVar(&f.drain, "drain", 10*time.Second, "how long readers may take to catch up afterwards")
	fs.StringVar(&f.target, "server", "", "load this running server (`URL,…`: replicas of one cluster; loopback only) instead of starting one")
	fs.StringVar(&f.token, "token", "", "with --server: its ingest token")
	fs.StringVar(&f.pids, "pid", "", "measure the RSS and CPU of these processes (`PID,…`) as the server's: with --server, its own; otherwise in addition to those started here (a NATS cluster's nodes)")
	fs.IntVar(&f.replicas, "replicas", 1, "with --nats: replicas of the server to start on the cluster")
	fs.StringVar(&f.natsURLs, "nats", "", "start the replicas on this NATS cluster (`URL,…`) instead of each embedding NATS")
	fs.BoolVar(&f.inProcess, "in-process", false, "run the server in this process instead of a child process")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "write a CPU profile of this process to `FILE` (with --in-process: server and clients)")
	fs.StringVar(&f.memProfile, "memprofile", "", "with --in-process: write a heap profile to `FILE` once the last line is acknowledged")
	fs.StringVar(&f.blockProfile, "blockprofile", "", "with --in-process: write a profile of where goroutines blocked (channels, selects, locks) to `FILE` at the end")
	fs.StringVar(&f.mutexProfile, "mutexprofile", "", "with --in-process: write a profile of contended mutexes to `FILE` at the end")
	fs.StringVar(&f.tag, "tag", extractor.DefaultTag, "the tag whose log sites the lines are written at")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "without --server: copy the tag's Reading from this serve --cache-dir `DIR` when cached there (default: the user cache dir + /syncloop)")
	fs.BoolVar(&f.journal, "journal", false, "send each line as a journald JSON entry (~1.2 KB, as journalctl -o json writes it and relays send it) instead of bare klog text")
	fs.DurationVar(&f.maxP99, "max-p99", 0, "fail when the p99 latency is over this (0: no limit)")
	fs.IntVar(&f.maxRSS, "max-rss-mb", 0, "fail when the server's peak RSS is over this many MB (0: no limit)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), loadtestUsage)
		fs.PrintDefaults()
	}
	return fs, f
}

// options checks the flags and makes them the load's Options, all but the
// servers started here; a flag out of range is a usageError.
func (f *loadtestFlags) options(stderr io.Writer) (loadtest.Options, error) {
	switch {
	case f.rooms < 1 || f.readers < 0 || f.rate < 1 || f.duration <= 0:
		return loadtest.Options{}, usageError{errors.New("loadtest: --rooms and --rate must be 1 or more, --readers 0 or more, --duration positive")}
	case f.target != "" && f.token == "":
		return loadtest.Options{}, usageError{errors.New("loadtest: --server needs the server's --token")}
	case f.target != "" && f.inProcess:
		return loadtest.Options{}, usageError{errors.New("loadtest: give --server or --in-process, not both")}
	case f.replicas < 1 || (f.replicas > 1 && f.natsURLs == ""):
		return loadtest.Options{}, usageError{errors.New("loadtest: --replicas above 1 need a cluster to share: give --nats")}
	case f.natsURLs != "" && (f.target != "" || f.inProcess):
		return loadtest.Options{}, usageError{errors.New("loadtest: --nats starts replicas here: not with --server or --in-process")}
	case (f.blockProfile != "" || f.mutexProfile != "") && !f.inProcess:
		return loadtest.Options{}, usageError{errors.New("loadtest: --blockprofile and --mutexprofile need --in-process (the server's goroutines are in its own process otherwise)")}
	case f.memProfile != "" && !f.inProcess:
		return loadtest.Options{}, usageError{errors.New("loadtest: --memprofile needs --in-process (the server's heap is in its own process otherwise)")}
	}
	servers := splitList(f.target)
	for _, u := range servers {
		if err := loadtest.CheckLoopback(u); err != nil {
			return loadtest.Options{}, usageError{err}
		}
	}
	var measure []int
	for _, p := range splitList(f.pids) {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 {
			return loadtest.Options{}, usageError{fmt.Errorf("loadtest: --pid %q: want process ids", p)}
		}
		measure = append(measure, n)
	}
	o := loadtest.Options{
		Servers: servers, Token: f.token, PIDs: measure,
		Rooms: f.rooms, Readers: f.readers, Rate: f.rate, Duration: f.duration, Drain: f.drain,
		Tag: f.tag, Journal: f.journal, Log: stderr,
	}
	if f.memProfile != "" {
		o.AfterSend = func() { writeHeapProfile(f.memProfile, stderr) }
	}
	return o, nil
}

// writeHeapProfile writes the heap profile to file, saying on stderr when
// it cannot: the load goes on.
func writeHeapProfile(file string, stderr io.Writer) {
	f, err := os.Create(file)
	if err != nil {
		fmt.Fprintf(stderr, "loadtest: %v\n", err)
		return
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		fmt.Fprintf(stderr, "loadtest: heap profile: %v\n", err)
	}
}

// startServers starts the server to load, in this process or as --replicas
// child processes, with a cache and data of their own in dir, and adds them
// to o. stop stops those started, even when err says a later one failed.
func (f *loadtestFlags) startServers(ctx context.Context, stderr io.Writer, dir string, o *loadtest.Options) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	copyReadingFrom(f.cacheDir, filepath.Join(dir, "cache"), f.tag)
	o.Token = randomToken()
	if f.inProcess {
		url, stopOne, err := serveInProcess(filepath.Join(dir, "cache"), filepath.Join(dir, "data"), o.Token, f.tag)
		if err != nil {
			return stop, err
		}
		stops = append(stops, stopOne)
		o.Servers, o.PIDs = []string{url}, append(o.PIDs, os.Getpid())
		fmt.Fprintf(stderr, "loadtest: server %s (pid %d, this process)\n", url, os.Getpid())
		return stop, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return stop, fmt.Errorf("loadtest: %w", err)
	}
	for i := range f.replicas {
		url, pid, stopOne, err := serveChild(ctx, exe, filepath.Join(dir, "cache"), o.Token, f.tag, f.natsURLs,
			filepath.Join(dir, fmt.Sprintf("serve-%d.log", i)))
		if err != nil {
			return stop, err
		}
		stops = append(stops, stopOne)
		o.Servers, o.PIDs = append(o.Servers, url), append(o.PIDs, pid)
		fmt.Fprintf(stderr, "loadtest: server %s (pid %d, child process)\n", url, pid)
	}
	return stop, nil
}

// startProfile starts recording the block or mutex profile (every event)
// and returns what writes it to file and stops recording.
func startProfile(name, file string, stderr io.Writer) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, fmt.Errorf("loadtest: %w", err)
	}
	set := runtime.SetBlockProfileRate
	if name == "mutex" {
		set = func(n int) { runtime.SetMutexProfileFraction(n) }
	}
	set(1)
	return func() {
		if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
			fmt.Fprintf(stderr, "loadtest: %s profile: %v\n", name, err)
		}
		set(0)
		f.Close()
	}, nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// copyReadingCache copies the user cache's Reading of tag into cacheDir, so
// the server started for the test need not fetch it; best effort.
func copyReadingCache(cacheDir, tag string) { copyReadingFrom("", cacheDir, tag) }

// copyReadingFrom copies the Reading of tag cached in fromDir (a serve
// --cache-dir; "" means serve's default, the user cache's syncloop) into
// cacheDir; best effort.
func copyReadingFrom(fromDir, cacheDir, tag string) {
	if fromDir == "" {
		user, err := os.UserCacheDir()
		if err != nil {
			return
		}
		fromDir = filepath.Join(user, "syncloop")
	}
	from := filepath.Join(fromDir, "readings", tag)
	to := filepath.Join(cacheDir, "readings", tag)
	_ = filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, 0o644)
	})
}

// serveChild starts "exe serve" (exe: a syncloop binary) on a free
// loopback port, on the NATS cluster at natsURLs when given, and waits for
// /healthz.
func serveChild(ctx context.Context, exe, cacheDir, token, tag, natsURLs, logName string) (url string, pid int, stop func(), err error) {
	addr, err := freeLoopbackAddr()
	if err != nil {
		return "", 0, nil, err
	}
	logf, err := os.Create(logName)
	if err != nil {
		return "", 0, nil, fmt.Errorf("loadtest: %w", err)
	}
	// Feeds and rooms live in a data dir of the run's own (JetStream's files).
	dataDir, err := os.MkdirTemp("", "syncloop-loadtest-data-")
	if err != nil {
		logf.Close()
		return "", 0, nil, fmt.Errorf("loadtest: %w", err)
	}
	args := []string{"serve", "--addr", addr, "--token", token, "--cache-dir", cacheDir, "--data-dir", dataDir, "--tag", tag, "--log-level", "warn",
		"--sockets-per-client", "1000000", "--conns-per-client", "1000000"} // every reader comes from 127.0.0.1
	if natsURLs != "" {
		args = append(args, "--nats", natsURLs)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dataDir)
		logf.Close()
		return "", 0, nil, fmt.Errorf("loadtest: start the server: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait(); logf.Close() }() // owned: stop waits for it
	stop = func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		os.RemoveAll(dataDir)
	}
	url = "http://" + addr
	if err := waitHealthz(ctx, url, done); err != nil {
		stop()
		tail, _ := os.ReadFile(logName)
		return "", 0, nil, fmt.Errorf("loadtest: %w\nserver output:\n%s", err, tail)
	}
	return url, cmd.Process.Pid, stop, nil
}

// serveInProcess serves as serveChild does, in this process: JetStream's
// files in a data dir of the run's own, so that a profile shows what a
// server that keeps its feeds on disk does (an fsync per write among it).
func serveInProcess(cacheDir, dataDir, token, tag string) (url string, stop func(), err error) {
	srv, err := server.Open(server.Config{
		DefaultTag: tag, CacheDir: cacheDir, DataDir: dataDir, Getenv: os.Getenv, IngestToken: token,
		SocketsPerClient: 1 << 20, // every reader comes from 127.0.0.1
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return "", nil, fmt.Errorf("loadtest: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		srv.Close()
		return "", nil, fmt.Errorf("loadtest: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln) // owned: ends with hs.Close in stop
	return "http://" + ln.Addr().String(), func() { srv.Close(); hs.Close() }, nil
}

func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("loadtest: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitHealthz waits up to 60 s for url's /healthz to answer 200. exited
// receives the server process's exit; an exit seen here is put back, for
// whoever waits for the process.
func waitHealthz(ctx context.Context, url string, exited chan error) error {
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("the server exited: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		default:
		}
		if resp, err := http.Get(url + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("the server was not healthy within 60 s")
}
