package main

// Fault tests with real processes: `syncloop serve` and `syncloop relay`
// reading a journal with cursors (testdata/fakejournalctl standing in for
// journalctl -o json -f), through a TCP proxy that can blackhole the
// network. Each fault is followed by a count of lines lost and duplicated
// at a browser, and the time until lines flow again.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/loadtest"
)

// fakeJournalctl is testdata/fakejournalctl built as journalctl: the relay
// recognizes journalctl by that name and resumes it by cursor.
func fakeJournalctl(t *testing.T) string {
	t.Helper()
	return goBuild(t, "journalctl", "./testdata/fakejournalctl")
}

// blackhole is a TCP proxy that can stop forwarding in both directions
// without closing anything (packets pile up in socket buffers, as on a
// network that silently drops), resume, or cut every connection.
type blackhole struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	paused chan struct{} // non-nil while paused; closed on resume
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func newBlackhole(t *testing.T, target string) *blackhole {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &blackhole{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *blackhole) addr() string { return p.ln.Addr().String() }

func (p *blackhole) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns[c], p.conns[up] = struct{}{}, struct{}{}
		p.mu.Unlock()
		p.wg.Go(func() { p.pipe(up, c) })
		p.wg.Go(func() { p.pipe(c, up) })
	}
}

// pipe copies src to dst, holding (not reading) while paused.
func (p *blackhole) pipe(dst, src net.Conn) {
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		p.hold()
		n, err := src.Read(buf)
		if n > 0 {
			p.hold()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *blackhole) hold() {
	p.mu.Lock()
	ch := p.paused
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}

func (p *blackhole) pause() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused == nil {
		p.paused = make(chan struct{})
	}
}

func (p *blackhole) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.paused != nil {
		close(p.paused)
		p.paused = nil
	}
}

// cut closes every connection with a reset, as a router that lost its state.
func (p *blackhole) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetLinger(0)
		}
		c.Close()
	}
}

func (p *blackhole) close() {
	p.ln.Close()
	p.resume()
	p.cut()
	p.wg.Wait()
}

// faultRig is a server, a relay running the fake journalctl through a
// blackhole proxy, and a browser watching the feed on the server directly.
type faultRig struct {
	t                    *testing.T
	bin, dir, addr       string
	serveArgs, relayArgs []string
	srv, relay           *proc
	proxy                *blackhole
	w                    *watcher
	n                    int
	record               string
}

const faultToken = "fault-token"

func newFaultRig(t *testing.T, bin, fake string, n int, rate float64) *faultRig {
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	copyReadingCache(cache, extractor.DefaultTag)
	r := &faultRig{t: t, bin: bin, dir: dir, n: n, record: filepath.Join(dir, "journalctl.record")}
	r.addr = fmt.Sprintf("127.0.0.1:%d", freePort(t))
	r.serveArgs = []string{"serve", "--addr", r.addr, "--token", faultToken, "--cache-dir", cache, "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn"}
	r.srv = start(t, "serve", bin, r.serveArgs...)
	waitHealthy(t, "http://"+r.addr, r.srv)

	entries := filepath.Join(dir, "journal.json")
	writeJournal(t, entries, n, faultSites, time.Millisecond)
	r.proxy = newBlackhole(t, r.addr)
	cmd := fmt.Sprintf("%s -o json -f --entries=%s --rate=%g --record=%s", fake, entries, rate, r.record)
	r.relayArgs = []string{"relay", "--server", "http://" + r.proxy.addr(), "--feed", "faults", "--token", faultToken,
		"--cmd", cmd, "--state", filepath.Join(dir, "relay.state")}

	r.w = &watcher{cases: map[string]int{}}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { r.w.run(ctx, "ws://"+r.addr+"/feeds/faults/ws") })
	t.Cleanup(func() { cancel(); wg.Wait() })
	r.relay = start(t, "relay", bin, r.relayArgs...)
	return r
}

// faultSites are two real klog sites of v1.37.2's syncLoopIteration; the
// classifier's view of them does not matter here, only that lines are klog.
var faultSites = []extractor.LogSite{
	{File: "pkg/kubelet/kubelet.go", Line: 2529, Message: "SyncLoop ADD"},
	{File: "pkg/kubelet/kubelet.go", Line: 2613, Message: "SyncLoop (PLEG): event for pod"},
}

// ingested is the server's count of lines stored in feed (its /metrics).
func (r *faultRig) ingested(feed string) int {
	r.t.Helper()
	resp, err := http.Get("http://" + r.addr + "/metrics")
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	prefix := `syncloop_lines_ingested_total{feed="` + feed + `"} `
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				r.t.Fatalf("metrics: %q", line)
			}
			return n
		}
	}
	r.t.Fatalf("metrics have no %s", prefix)
	return 0
}

// waitCount waits until the watcher has at least n lines; false at the deadline.
func (r *faultRig) waitCount(n int, within time.Duration) bool {
	return testwait.Until(within, func() bool { return r.w.count() >= n })
}

// recovered waits for the watcher to pass had lines and returns how long since from.
func (r *faultRig) recovered(had int, from time.Time, within time.Duration) time.Duration {
	r.t.Helper()
	if !r.waitCount(had+1, within) {
		r.t.Fatalf("no line arrived within %v after the fault (had %d of %d)", within, had, r.n)
	}
	return time.Since(from)
}

// finish waits for every line, then counts lost and duplicated lines.
func (r *faultRig) finish(fault string, recover time.Duration) {
	r.t.Helper()
	r.waitCount(r.n, 60*time.Second)
	time.Sleep(300 * time.Millisecond) // sleep: a window in which a duplicate would arrive
	r.w.mu.Lock()
	got := append([]int(nil), r.w.got...)
	conns, skipped := r.w.conns, r.w.skipped
	r.w.mu.Unlock()
	distinct := map[int]bool{}
	for _, v := range got {
		distinct[v] = true
	}
	lost, dup := r.n-len(distinct), len(got)-len(distinct)
	r.t.Logf("%s: lines %d, lost %d, duplicated %d, time to recover %v (browser connections %d, skipped %d)",
		fault, r.n, lost, dup, recover.Round(time.Millisecond), conns, skipped)
	if err := checkExactlyOnce(got, r.n); err != nil {
		r.t.Errorf("%s: %v (lost %d, duplicated %d)", fault, err, lost, dup)
	}
}

// starts returns the cursors the fake journalctl was started after, in order.
func (r *faultRig) starts() []string {
	b, _ := os.ReadFile(r.record)
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		out = append(out, strings.TrimPrefix(l, "after="))
	}
	return out
}

func sigkill(t *testing.T, p *proc) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := <-p.done
	p.done <- err
}

// dropFor is how long the network between relay and server is blackholed:
// 30 s as in the issue, SYNCLOOP_E2E_DROP to change it (e.g. 5s locally).
func dropFor(t *testing.T) time.Duration {
	if s := os.Getenv("SYNCLOOP_E2E_DROP"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SYNCLOOP_E2E_DROP=%q: %v", s, err)
		}
		return d
	}
	return 30 * time.Second
}

// TestE2EFaults relays a cursor journal through each fault: every line must
// reach the browser exactly once, in order.
func TestE2EFaults(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	bin := syncloopBin(t)
	fake := fakeJournalctl(t)
	const n, rate = 1500, 300.0 // 5 s of journal

	t.Run("server SIGKILL and restart", func(t *testing.T) {
		t.Parallel()
		r := newFaultRig(t, bin, fake, n, rate)
		if !r.waitCount(n/3, 60*time.Second) {
			t.Fatalf("only %d lines before the fault", r.w.count())
		}
		sigkill(t, r.srv)
		killed, had := time.Now(), r.w.count()
		r.srv = start(t, "serve-2", bin, r.serveArgs...)
		waitHealthy(t, "http://"+r.addr, r.srv)
		rec := r.recovered(had, killed, 60*time.Second)
		if had >= n {
			t.Fatal("the journal was over before the fault: not a test")
		}
		r.finish("server SIGKILL", rec)
		if s := r.starts(); len(s) != 1 {
			t.Errorf("journalctl started %d times (%q): the relay should have kept it running", len(s), s)
		}
	})

	t.Run("relay SIGKILL and restart with its state", func(t *testing.T) {
		t.Parallel()
		r := newFaultRig(t, bin, fake, n, rate)
		if !r.waitCount(n/3, 60*time.Second) {
			t.Fatalf("only %d lines before the fault", r.w.count())
		}
		sigkill(t, r.relay)
		killed, had := time.Now(), r.w.count()
		stored := r.ingested("faults")     // the relay is gone: nothing more is stored
		time.Sleep(500 * time.Millisecond) // sleep: the relay stays dead while the journal grows
		r.relay = start(t, "relay-2", bin, r.relayArgs...)
		rec := r.recovered(had, killed, 60*time.Second)
		if had >= n {
			t.Fatal("the journal was over before the fault: not a test")
		}
		r.finish("relay SIGKILL", rec)
		// Exactly-once alone would not show a cursor resume: the server
		// drops resent ids. The second journalctl must start after a cursor.
		s := r.starts()
		if len(s) != 2 || s[0] != "" || !strings.HasPrefix(s[1], "s=5eed;i=") {
			t.Fatalf("journalctl started after %q: want the whole journal, then after the saved cursor", s)
		}
		// The relay saves the cursor the server acknowledged, which the
		// server has stored: never past what it had stored when the relay
		// died. (How far behind depends on the machine's load: acks wait
		// for the disk, and the relay saves its state every 200 ms.)
		i, err := strconv.ParseInt(strings.TrimPrefix(strings.Split(s[1], ";")[1], "i="), 16, 64)
		if err != nil || i < 1 || i > int64(stored) {
			t.Errorf("resumed after entry %d (%v); the server had stored %d when the relay was killed", i, err, stored)
		}
		t.Logf("the restarted relay resumed journalctl after entry %d; the server had stored %d, %d had reached the browser", i, stored, had)
	})

	t.Run("network blackholed, then back", func(t *testing.T) {
		t.Parallel()
		drop := dropFor(t)
		r := newFaultRig(t, bin, fake, n, rate)
		if !r.waitCount(n/3, 60*time.Second) {
			t.Fatalf("only %d lines before the fault", r.w.count())
		}
		r.proxy.pause()
		paused := r.w.count()
		time.Sleep(drop) // sleep: how long the network is down is the fault
		during := r.w.count() - paused
		r.proxy.resume()
		resumed, had := time.Now(), r.w.count()
		rec := r.recovered(had, resumed, 90*time.Second)
		r.finish(fmt.Sprintf("network blackholed %v", drop), rec)
		if during > 50 { // a few lines in the proxy's hands when it stopped may get through
			t.Errorf("%d lines arrived while the network was down: the proxy did not blackhole", during)
		}
	})

	t.Run("network cut with resets", func(t *testing.T) {
		t.Parallel()
		r := newFaultRig(t, bin, fake, n, rate)
		if !r.waitCount(n/3, 60*time.Second) {
			t.Fatalf("only %d lines before the fault", r.w.count())
		}
		r.proxy.cut()
		cut, had := time.Now(), r.w.count()
		rec := r.recovered(had, cut, 60*time.Second)
		r.finish("network cut", rec)
	})
}

// TestE2EStalledBrowser: a browser that connects and never reads must not
// hold the others back nor grow the server's memory; it is closed or told
// what it missed.
//
// Memory is judged against a control: the same load on a fresh server
// without the stalled browser, in the same test. A server's RSS under this
// load is mostly the embedded JetStream's block cache (the last seconds it
// wrote) and the garbage collector's headroom; neither says anything about
// the stalled browser, and both vary from machine to machine, so an absolute
// bound on RSS growth cannot tell a leak from a busy machine. The difference
// between the two runs' growth can (each run's peak less its RSS just
// before the lines: two fresh servers start as much as 60 MB apart, by
// what the garbage collector has given back of loading the Reading): the
// stalled browser is stuck for writeTimeout
// (10 s, 20,000 lines of 3 KB here) before the server gives it up, and a
// server that kept those lines for it would peak at least 60 MB higher
// (a read-ahead queue per browser, tried: +67 MB; no queue: -8 to +12 MB).
func TestE2EStalledBrowser(t *testing.T) {
	bin := syncloopBin(t)
	control := stallRun(t, bin, false)
	run := stallRun(t, bin, true)
	grew := run.grew - control.grew
	t.Logf("server RSS growth under the load: %+d MB with a stalled browser, %+d MB without (%+d MB)", run.grew>>20, control.grew>>20, grew>>20)
	if grew > 40<<20 {
		t.Errorf("a stalled browser raised the server's RSS growth by %d MB over the same load without it: want < 40 MB (the lines sent while it is given time, 10 s, are %d MB)",
			grew>>20, 10*stallRate*stallPad>>20)
	}

	// Now read the stalled one: it must have been closed, or told it skipped lines.
	const n = stallLines
	var got, skipped int
	closed := false
	last := 0
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	for got+skipped < n {
		_, data, err := run.stalled.Read(rctx)
		if err != nil {
			closed = rctx.Err() == nil
			if !closed {
				t.Fatalf("the stalled browser was neither closed nor caught up in 30 s: %d lines, %d skipped", got, skipped)
			}
			break
		}
		for part := range strings.SplitSeq(string(data), "\n") {
			var m struct {
				Skipped int `json:"skipped"`
				Line    *struct {
					Raw  string `json:"raw"`
					Text string `json:"text"` // a journald JSON entry's MESSAGE (its raw is "")
				} `json:"line"`
			}
			if json.Unmarshal([]byte(part), &m) != nil {
				continue
			}
			skipped += m.Skipped
			if m.Line != nil {
				if mm := e2eMark.FindStringSubmatch(m.Line.Raw + m.Line.Text); mm != nil {
					v, _ := strconv.Atoi(mm[1])
					if v <= last {
						t.Fatalf("stalled browser: line %d after %d", v, last)
					}
					last = v
					got++
				}
			}
		}
	}
	// A browser the server closed counts what it missed as it leaves: its
	// handler may still be on its way out.
	var dropped int
	testwait.For(t, 5*time.Second, "the server to count the stalled browser's lines as dropped", func() bool {
		dropped = metric(t, run.addr, `syncloop_lines_dropped_total{feed="stall"}`)
		return dropped > 0
	})
	t.Logf("stalled browser: %d lines received, %d skipped (markers), closed by the server: %v; server counted %d dropped", got, skipped, closed, dropped)
	if dropped <= 0 {
		t.Errorf("the server dropped no line for the stalled browser: its queue was not bounded, or it was not stalled")
	}
	if skipped == 0 && !closed {
		t.Errorf("the stalled browser got every line: it was not stalled (raise n or lower its buffer)")
	}
	if got+skipped > n {
		t.Errorf("stalled browser: %d lines + %d skipped > %d sent", got, skipped, n)
	}
}

// The stalled-browser load: 40,000 lines of about 3 KB (120 MB) at 2,000
// lines/s, which the other readers keep up with.
const stallLines, stallPad, stallRate = 40000, 3000, 2000

// stallResult is one run of the stalled-browser load.
type stallResult struct {
	addr    string
	peak    int64           // the server's RSS peak while the lines went through
	grew    int64           // the peak less the RSS just before the lines began
	stalled *websocket.Conn // the browser that never read; nil in the control run
}

// stallRun starts a server, connects three reading browsers (and, if
// stalled, one that never reads) to a feed, sends it the load, checks that
// every reader got every line exactly once, and returns the server's RSS
// peak. The server stays up until the test ends.
func stallRun(t *testing.T, bin string, stalled bool) stallResult {
	t.Helper()
	cache := filepath.Join(t.TempDir(), "cache")
	copyReadingCache(cache, extractor.DefaultTag)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := start(t, "serve", bin, "serve", "--addr", addr, "--token", faultToken, "--cache-dir", cache, "--data-dir", filepath.Join(filepath.Dir(cache), "data"), "--log-level", "warn")
	waitHealthy(t, "http://"+addr, srv)
	wsURL := "ws://" + addr + "/feeds/stall/ws"

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	// Browsers do not create feeds: a relay does, by connecting.
	opener, _, err := websocket.Dial(ctx, "ws://"+addr+"/feeds/stall/ingest", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + faultToken}},
	})
	if err != nil {
		t.Fatal(err)
	}
	opener.Close(websocket.StatusNormalClosure, "")

	res := stallResult{addr: addr}
	browsers := 0
	if stalled {
		// A tiny receive buffer, and no Read until the caller reads.
		stalledClient := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
			Control: func(_, _ string, c syscall.RawConn) error {
				var serr error
				c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
				return serr
			},
		}).DialContext}}
		c, _, err := websocket.Dial(ctx, wsURL, &websocket.DialOptions{HTTPClient: stalledClient})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.CloseNow() })
		c.SetReadLimit(16 << 20)
		res.stalled = c
		browsers++
	}

	const readers = 3
	ws := make([]*tally, readers)
	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { wcancel(); wg.Wait() }()
	for i := range ws {
		ws[i] = &tally{}
		if err := ws[i].dial(wctx, wsURL); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { ws[i].run(wctx) })
	}
	browsers += readers
	testwait.For(t, 10*time.Second, "the browsers to connect", func() bool {
		return metric(t, addr, `syncloop_clients{feed="stall"}`) == browsers
	})
	rss0, err := loadtest.ProcRSS(srv.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var peak int64
	sampled := make(chan struct{})
	sctx, scancel := context.WithCancel(ctx)
	go func() {
		defer close(sampled)
		for sctx.Err() == nil {
			if rss, err := loadtest.ProcRSS(srv.cmd.Process.Pid); err == nil {
				mu.Lock()
				peak = max(peak, rss)
				mu.Unlock()
			}
			time.Sleep(20 * time.Millisecond) // sleep: the RSS is sampled at a pace
		}
	}()
	began := time.Now()
	ingestLines(t, ctx, "ws://"+addr+"/feeds/stall/ingest", stallLines, stallPad, stallRate)
	for i, w := range ws {
		testwait.For(t, 60*time.Second, fmt.Sprintf("reader %d to get every line", i), func() bool { return w.done(stallLines) })
	}
	elapsed := time.Since(began)
	scancel()
	<-sampled
	for i, w := range ws {
		w.mu.Lock()
		err := checkExactlyOnce(w.got, stallLines)
		if err != nil || w.skipped > 0 || w.dropped {
			t.Errorf("reader %d (stalled browser beside it: %v): %v, %d skipped, connection dropped: %v", i, stalled, err, w.skipped, w.dropped)
		}
		w.mu.Unlock()
	}
	res.peak, res.grew = peak, peak-rss0
	t.Logf("stalled browser %v: %d lines of %d bytes to %d readers in %v; server RSS %d MB before, peak %d MB",
		stalled, stallLines, stallPad, readers, elapsed.Round(time.Millisecond), rss0>>20, peak>>20)
	return res
}

func ingestLines(t *testing.T, ctx context.Context, url string, n, pad, rate int) {
	t.Helper()
	c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + faultToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	var acked atomic.Int64
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			var m struct{ Ack string }
			if json.Unmarshal(b, &m) == nil {
				v, _ := strconv.Atoi(strings.TrimPrefix(m.Ack, "stall-"))
				acked.Store(int64(v))
			}
		}
	}()
	filler := strings.Repeat("x", pad)
	type line struct {
		ID  string `json:"id"`
		Raw string `json:"raw"`
	}
	const batchSize = 100
	began := time.Now()
	for i := 1; i <= n; {
		due := began.Add(time.Duration(i-1) * time.Second / time.Duration(rate))
		time.Sleep(time.Until(due)) // sleep: lines are sent at rate
		for int64(i)-acked.Load() > 20*batchSize {
			select {
			case <-readDone:
				t.Fatalf("the ingest connection ended after %d acknowledged lines", acked.Load())
			case <-time.After(time.Millisecond):
			}
		}
		var batch []line
		for ; i <= n && len(batch) < batchSize; i++ {
			batch = append(batch, line{ID: "stall-" + strconv.Itoa(i),
				Raw: fmt.Sprintf(`I1130 03:04:05.000000    4242 kubelet.go:2529] "SyncLoop ADD" source="api" pad=%s e2e=%d`, filler, i)})
		}
		b, _ := json.Marshal(map[string]any{"lines": batch})
		if err := c.Write(ctx, websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	for acked.Load() < int64(n) {
		select {
		case <-readDone:
			t.Fatalf("the ingest connection ended after %d of %d acknowledged lines", acked.Load(), n)
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// tally is a browser that keeps only the e2e number of each line and the
// skipped counts, parsing no JSON: cheap enough under -race to keep up.
type tally struct {
	c       *websocket.Conn
	mu      sync.Mutex
	got     []int
	skipped int
	dropped bool
}

func (w *tally) dial(ctx context.Context, url string) error {
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		return err
	}
	c.SetReadLimit(16 << 20)
	w.c = c
	return nil
}

func (w *tally) run(ctx context.Context) {
	defer w.c.CloseNow()
	for {
		_, data, err := w.c.Read(ctx)
		if err != nil {
			w.mu.Lock()
			w.dropped = ctx.Err() == nil
			w.mu.Unlock()
			return
		}
		w.mu.Lock()
		for part := range bytes.SplitSeq(data, []byte{'\n'}) {
			if v, ok := bytes.CutPrefix(part, []byte(`{"skipped":`)); ok {
				n, _ := strconv.Atoi(string(bytes.TrimSuffix(v, []byte("}"))))
				w.skipped += n
				continue
			}
			if i := bytes.Index(part, []byte("e2e=")); i >= 0 && bytes.HasPrefix(part, []byte(`{"seq":`)) {
				j := i + 4
				for j < len(part) && '0' <= part[j] && part[j] <= '9' {
					j++
				}
				n, _ := strconv.Atoi(string(part[i+4 : j]))
				w.got = append(w.got, n)
			}
		}
		w.mu.Unlock()
	}
}

func (w *tally) done(n int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped || len(w.got)+w.skipped >= n
}

// metric reads one sample of the server's /metrics; -1 when absent.
func metric(t *testing.T, addr, name string) int {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for l := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	return -1
}
