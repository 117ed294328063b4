package main

// End-to-end tests of the live feed with real processes: the syncloop binary
// built once, `syncloop serve` killed with SIGKILL and restarted, and
// `syncloop relay` replaying a journal through it.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/loadtest"
)

// syncloopBin is the syncloop binary, built once per test binary.
func syncloopBin(t *testing.T) string {
	t.Helper()
	return goBuild(t, "syncloop", ".")
}

// builds holds goBuild's binaries: name → func() (path, error).
var builds sync.Map

// goBuild builds pkg as name with the local toolchain, once per test binary
// (each build of the syncloop binary links for seconds even with a warm
// build cache), into the directory TestMain removes, and returns its path.
func goBuild(t *testing.T, name, pkg string) string {
	t.Helper()
	v, _ := builds.LoadOrStore(name+" "+pkg, sync.OnceValues(func() (string, error) {
		bin := filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-o", bin, pkg)
		cmd.Env = append(os.Environ(), "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		return bin, nil
	}))
	bin, err := v.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// proc is a started process whose output goes to a file kept for failures.
type proc struct {
	cmd  *exec.Cmd
	log  string
	done chan error
}

func start(t *testing.T, name string, bin string, args ...string) *proc {
	t.Helper()
	logName := filepath.Join(t.TempDir(), name+".log")
	f, err := os.Create(logName)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, log: logName, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			b, _ := os.ReadFile(logName)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("%s output (tail):\n%s", name, b)
		}
	})
	return p
}

func waitHealthy(t *testing.T, base string, p *proc) {
	t.Helper()
	if err := waitHealthz(context.Background(), base, p.done); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// e2eSites returns klog callers and messages at the default tag's real log
// sites, from its Reading when it can be loaded here. The Reading is loaded
// into cacheDir, which the test's server then reads too; the user cache's
// copy, when there is one, spares hashing the module zip again.
func e2eSites(t *testing.T, cacheDir string) []extractor.LogSite {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	copyReadingCache(cacheDir, extractor.DefaultTag)
	r, err := extractor.Load(ctx, extractor.Options{Tag: extractor.DefaultTag, CacheDir: cacheDir})
	if err == nil {
		if sites := loadtest.SitesOf(r); len(sites) > 0 {
			return sites
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("the Reading of %s: %v", extractor.DefaultTag, err)
	}
	t.Logf("the Reading of %s is not available (%v): using made-up log sites", extractor.DefaultTag, err)
	return []extractor.LogSite{{File: "pkg/kubelet/kubelet.go", Line: 2500, Message: "SyncLoop (PLEG): event for pod"}}
}

// writeJournal writes n journald JSON export lines, each a klog line at one
// of the sites, with a unique cursor and an "e2e=<i>" marker.
func writeJournal(t *testing.T, name string, n int, sites []extractor.LogSite, spacing time.Duration) {
	t.Helper()
	var b strings.Builder
	base := time.Date(2026, 11, 30, 1, 2, 3, 0, time.UTC)
	for i := 1; i <= n; i++ {
		s := sites[i%len(sites)]
		at := base.Add(time.Duration(i) * spacing)
		msg := fmt.Sprintf(`I%s %7d %s:%d] %q pod="default/probe-me" e2e=%d`,
			at.Format("0102 15:04:05.000000"), 4242, filepath.Base(s.File), s.Line, s.Message, i)
		entry := map[string]string{
			"__CURSOR":             fmt.Sprintf("s=5eed;i=%x;b=e2e;m=%x;t=%x;x=%x", i, i, at.UnixMicro(), i*7),
			"__REALTIME_TIMESTAMP": strconv.FormatInt(at.UnixMicro(), 10),
			"_HOSTNAME":            "worker-1",
			"_PID":                 "4242",
			"SYSLOG_IDENTIFIER":    "kubelet",
			"PRIORITY":             "6",
			"MESSAGE":              msg,
		}
		line, _ := json.Marshal(entry)
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

var e2eMark = regexp.MustCompile(`e2e=(\d+)`)

// watcher is a browser-like client of a feed that reconnects with ?after=
// and records the e2e number of every line it receives, in order. As the
// live pane does, it drops the lines it is told were taken back
// ({"rewind":N}: shown before they were stored, then not stored there).
type watcher struct {
	mu      sync.Mutex
	got     []int
	seqs    []uint64 // the feed's number of each of got
	cases   map[string]int
	lastSeq uint64
	conns   int
	skipped int
	rewinds int
}

// rewind drops the lines from the feed's number seq on. w.mu is held.
func (w *watcher) rewind(seq uint64) {
	w.rewinds++
	k := len(w.seqs)
	for k > 0 && w.seqs[k-1] >= seq {
		k--
	}
	w.got, w.seqs = w.got[:k], w.seqs[:k]
	w.lastSeq = min(w.lastSeq, seq-1)
}

func (w *watcher) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.got)
}

func (w *watcher) run(ctx context.Context, wsBase string) {
	for ctx.Err() == nil {
		w.mu.Lock()
		url := wsBase
		if w.lastSeq > 0 {
			url += "?after=" + strconv.FormatUint(w.lastSeq, 10)
		}
		w.mu.Unlock()
		c, _, err := websocket.Dial(ctx, url, nil)
		if err != nil {
			// sleep: a browser's pace of reconnecting while the server is down
			time.Sleep(100 * time.Millisecond)
			continue
		}
		c.SetReadLimit(8 << 20)
		w.mu.Lock()
		w.conns++
		w.mu.Unlock()
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				break
			}
			for part := range strings.SplitSeq(string(data), "\n") {
				var m struct {
					Seq     uint64 `json:"seq"`
					Skipped int    `json:"skipped"`
					Rewind  uint64 `json:"rewind"`
					Line    *struct {
						Raw  string  `json:"raw"`
						Text string  `json:"text"` // a journald JSON entry's MESSAGE (its raw is "")
						Case *string `json:"case"`
					} `json:"line"`
				}
				if json.Unmarshal([]byte(part), &m) != nil {
					continue
				}
				w.mu.Lock()
				w.skipped += m.Skipped
				if m.Rewind > 0 {
					w.rewind(m.Rewind)
				}
				if m.Line != nil {
					w.lastSeq = m.Seq
					if mm := e2eMark.FindStringSubmatch(m.Line.Raw + m.Line.Text); mm != nil {
						n, _ := strconv.Atoi(mm[1])
						w.got, w.seqs = append(w.got, n), append(w.seqs, m.Seq)
					}
					if m.Line.Case != nil && *m.Line.Case != "" {
						w.cases[*m.Line.Case]++
					}
				}
				w.mu.Unlock()
			}
		}
		c.CloseNow()
	}
}

// checkExactlyOnce reports the first way got differs from 1..n.
func checkExactlyOnce(got []int, n int) error {
	seen := make(map[int]int)
	for i, v := range got {
		if seen[v] > 0 {
			return fmt.Errorf("line %d received twice (at %d and %d)", v, seen[v]-1, i)
		}
		seen[v] = i + 1
		if v != i+1 {
			return fmt.Errorf("position %d holds line %d: out of order or one missing", i+1, v)
		}
	}
	if len(got) != n {
		return fmt.Errorf("%d of %d lines received", len(got), n)
	}
	return nil
}

// TestE2ERelayServerKilled relays a journal through a server killed with
// SIGKILL in the middle and restarted: every line must reach a browser
// exactly once, in order, and a late joiner must get them all as history.
func TestE2ERelayServerKilled(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	bin := syncloopBin(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	const n = 2000
	journal := filepath.Join(dir, "journal.json")
	began := time.Now()
	writeJournal(t, journal, n, e2eSites(t, cache), 2*time.Millisecond) // 4 s at --speed 1
	t.Logf("journal written at %v", time.Since(began).Round(time.Millisecond))

	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	base := "http://" + addr
	serveArgs := []string{"serve", "--addr", addr, "--token", "e2e-token", "--cache-dir", cache, "--data-dir", filepath.Join(dir, "data")}
	srv := start(t, "serve-1", bin, serveArgs...)
	waitHealthy(t, base, srv)
	t.Logf("serve healthy at %v", time.Since(began).Round(time.Millisecond))

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	w := &watcher{cases: map[string]int{}}
	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { w.run(wctx, "ws://"+addr+"/feeds/e2e/ws") })
	defer func() { wcancel(); wg.Wait() }()

	relay := start(t, "relay", bin, "relay", "--server", base, "--feed", "e2e", "--token", "e2e-token",
		"--file", journal, "--speed", "1", "--state", filepath.Join(dir, "relay.state"))

	if !testwait.UntilDone(ctx, func() bool { return w.count() >= n/4 }) {
		t.Fatalf("only %d lines before the kill", w.count())
	}
	if err := srv.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-srv.done
	srv.done <- nil
	killedAt := w.count()
	t.Logf("killed at %v", time.Since(began).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond) // sleep: the server stays down a while, as a crashed one does
	srv2 := start(t, "serve-2", bin, serveArgs...)
	waitHealthy(t, base, srv2)

	select {
	case err := <-relay.done:
		relay.done <- err
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the relay did not finish")
	}
	t.Logf("relay done at %v", time.Since(began).Round(time.Millisecond))
	testwait.UntilDone(ctx, func() bool { return w.count() >= n }) // checkExactlyOnce says what is missing
	// sleep: a window in which anything extra (a duplicate) would arrive
	time.Sleep(200 * time.Millisecond)
	w.mu.Lock()
	got := append([]int(nil), w.got...)
	conns, skipped, cases := w.conns, w.skipped, fmt.Sprint(w.cases)
	w.mu.Unlock()
	t.Logf("killed at %d lines; %d connections; cases seen %s", killedAt, conns, cases)
	if killedAt >= n {
		t.Fatalf("the server was killed after the whole journal arrived: not a test of anything")
	}
	if conns < 2 || skipped > 0 {
		t.Fatalf("%d connections, %d skipped: want a reconnect and nothing skipped", conns, skipped)
	}
	if err := checkExactlyOnce(got, n); err != nil {
		t.Fatalf("live browser: %v", err)
	}

	late := &watcher{cases: map[string]int{}}
	lctx, lcancel := context.WithTimeout(ctx, 20*time.Second)
	defer lcancel()
	go late.run(lctx, "ws://"+addr+"/feeds/e2e/ws")
	testwait.UntilDone(lctx, func() bool { return late.count() >= n }) // checkExactlyOnce says what is missing
	late.mu.Lock()
	lateGot := append([]int(nil), late.got...)
	late.mu.Unlock()
	if err := checkExactlyOnce(lateGot, n); err != nil {
		t.Fatalf("late joiner's history: %v", err)
	}

	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	sc := bufio.NewScanner(strings.NewReader(string(metrics)))
	for sc.Scan() {
		if strings.Contains(sc.Text(), `feed="e2e"`) {
			t.Log(sc.Text())
		}
	}
	// What the killed server acknowledged is stored, once, in order.
	checkExport(t, base, "e2e", journal)

	srv2.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-srv2.done:
		srv2.done <- err
		if err != nil {
			t.Errorf("serve after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Error("serve did not stop within 15 s of SIGTERM")
	}
}

// TestE2ERelayWrongToken: a relay with a wrong token stops with a clear
// error instead of retrying forever.
func TestE2ERelayWrongToken(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	bin := syncloopBin(t)
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := start(t, "serve", bin, "serve", "--addr", addr, "--token", "right", "--cache-dir", filepath.Join(dir, "cache"), "--data-dir", filepath.Join(dir, "data"))
	waitHealthy(t, "http://"+addr, srv)
	cmd := exec.Command(bin, "relay", "--server", "http://"+addr, "--token", "wrong")
	cmd.Stdin = strings.NewReader("I1130 01:02:03.000000 1 kubelet.go:1] hello\n")
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("the relay kept retrying a refused token")
	}
	if err == nil || !strings.Contains(string(out), "refused the token") || !strings.Contains(string(out), "missing or wrong token") {
		t.Fatalf("relay with a wrong token: %v\n%s", err, out)
	}
}

// BenchmarkE2EFanout is the hub's fan-out measured across processes: a
// `syncloop serve` process, one feed fed at 5,000 lines/s through its ingest
// websocket, and N browser-like websocket clients on loopback in the test
// process, as `syncloop loadtest --rooms 1` runs them (server/loadtest). It
// reports the latency from send to receipt (p50, p99), lines lost by the
// clients, and the server process's peak and final RSS and CPU.
// clients=1 is the baseline to read clients=200 against.
//
//	go test -run '^$' -bench E2EFanout -benchtime 1x -count 3 .
func BenchmarkE2EFanout(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "syncloop")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for _, clients := range []int{1, 200} {
		b.Run(fmt.Sprint("clients=", clients), func(b *testing.B) {
			for range b.N {
				r := fanoutE2E(b, bin, clients)
				b.ReportMetric(r.P50.Seconds()*1000, "p50-ms")
				b.ReportMetric(r.P99.Seconds()*1000, "p99-ms")
				b.ReportMetric(float64(r.Lost), "lost-lines")
				b.ReportMetric(float64(r.RSSPeak)/(1<<20), "server-rss-peak-MB")
				b.ReportMetric(float64(r.RSSEnd)/(1<<20), "server-rss-MB")
				b.ReportMetric(float64(r.Sent)/r.Duration.Seconds(), "lines/s")
				b.ReportMetric(r.ServerCPU.Seconds()/r.Duration.Seconds(), "server-cpu-s/s")
				b.ReportMetric(r.ClientCPU.Seconds()/r.Duration.Seconds(), "clients-cpu-s/s")
			}
		})
	}
}

func fanoutE2E(b *testing.B, bin string, clients int) loadtest.Result {
	b.Helper()
	dir := b.TempDir()
	cache := filepath.Join(dir, "cache")
	copyReadingCache(cache, extractor.DefaultTag)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	url, pid, stop, err := serveChild(ctx, bin, cache, "bench", extractor.DefaultTag, "", filepath.Join(dir, "serve.log"))
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	b.ResetTimer()
	r, err := loadtest.Run(ctx, loadtest.Options{
		Servers: []string{url}, Token: "bench", PIDs: []int{pid},
		Rooms: 1, Readers: clients, Rate: 5000, Duration: 3 * time.Second,
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	var out strings.Builder
	r.Print(&out)
	b.Logf("\n%s", out.String())
	return r
}

// checkExport compares a feed's export with the journal it was fed, entry
// by entry by __CURSOR: none missing, none duplicated, in order, each
// stored as it was sent.
func checkExport(t *testing.T, base, feed, journal string) {
	t.Helper()
	want, err := os.ReadFile(journal)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(base + "/feeds/" + feed + "/export")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("export: %v %s", err, resp.Status)
	}
	cursors := func(b []byte) ([]string, []string) {
		var cs, lines []string
		for l := range strings.Lines(string(b)) {
			l = strings.TrimRight(l, "\n")
			if l == "" {
				continue
			}
			var e struct {
				Cursor string `json:"__CURSOR"`
			}
			if err := json.Unmarshal([]byte(l), &e); err != nil || e.Cursor == "" {
				t.Fatalf("not a journald entry: %.200s", l)
			}
			cs, lines = append(cs, e.Cursor), append(lines, l)
		}
		return cs, lines
	}
	wc, wl := cursors(want)
	gc, gl := cursors(got)
	seen := map[string]bool{}
	for i, c := range gc {
		if seen[c] {
			t.Fatalf("export: entry %d (%s) is a duplicate", i+1, c)
		}
		seen[c] = true
	}
	for i := range min(len(wc), len(gc)) {
		if wc[i] != gc[i] {
			t.Fatalf("export: entry %d is %s, want %s (a missing entry, or out of order)", i+1, gc[i], wc[i])
		}
		if wl[i] != gl[i] {
			t.Fatalf("export: entry %d is not stored as sent:\n got %.200s\nwant %.200s", i+1, gl[i], wl[i])
		}
	}
	if len(gc) != len(wc) {
		t.Fatalf("export has %d entries, the journal %d", len(gc), len(wc))
	}
	t.Logf("export: %d entries, each once, in order, as sent", len(gc))
}
