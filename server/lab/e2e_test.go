package lab

// The end-to-end test of issue 7, steps 1–4: a real kubelet (the lab), the real
// syncloop binary serving the page and relaying the journal, and Chromium reading
// the page (TestLab, through runE2E); step 3, the restarts, on the recorded
// journal of a real kubelet (TestRecordedRestarts). Step 5 (classify) is
// classify_test.go.
//
// TestLab runs under the lab's gate (Linux, root, SYNCLOOP_LAB=1 or CI=true) and needs Chromium:
//
//	sudo SYNCLOOP_LAB=1 go test -run TestLab$ -v -timeout 10m ./server/lab/
//
// Screenshots, the processes' logs and the feed's file go to
// ${SYNCLOOP_ARTIFACTS:-artifacts}/lab/e2e-*.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/browsertest"
	"github.com/syncloop/syncloop/server/relay"
)

// ringSize is the lines a feed keeps, and restores from its file: the server's
// --history-lines in TestRecordedRestarts, 1,000 instead of its default 5,000,
// so that the recorded journal (4,309 entries) passes it well before its end,
// with room for the faults after (the version line, its 155th entry, is out
// of the ring all the same).
const ringSize = 1000

// e2eCases are the cases the lab fires and the page must count.
var e2eCases = []string{"config", "pleg", "sync", "liveness", "startup", "readiness", "housekeeping"}

// otherTag is a tag the server serves by URL only; its page must offer the switch
// to the kubelet's own version. The server's default (extractor.DefaultTag).
const otherTag = "v1.37.2"

// stage logs how long each stage of the test took.
type stages struct {
	t    *testing.T
	last time.Time
	all  []string
}

func (s *stages) done(name string) {
	d := time.Since(s.last)
	s.last = time.Now()
	s.all = append(s.all, fmt.Sprintf("%-22s %5.1fs", name, d.Seconds()))
	s.t.Logf("stage %s: %.1fs", name, d.Seconds())
}

// runE2E is the end-to-end part of the one real-kubelet run (TestLab):
// `syncloop serve` on the lab's tag and `syncloop relay` over journalctl;
// Chromium shows the cases firing and the liveness lines under the liveness
// case; the kubelet's version is reported and offered from another tag's
// page. Then then runs, the relay still streaming (the lab's own checks of
// its journal); the relay is stopped after it, and the server's record of
// the journal must be the journal, entry for entry.
func runE2E(t *testing.T, st *stages, kv map[string]string, then func()) {
	chromium := browsertest.Path(t)
	bin, err := syncloop()
	if err != nil {
		t.Fatal(err)
	}
	st.done("build syncloop")
	// The server keeps 2,000 lines, as many as the live pane holds, as the
	// end-to-end run always had it: the page's history is the ring (with the
	// default 5,000, one run at load ~35 had an Evaluate on the page, busy
	// with its backlog, run out the tab's budget).
	e := &e2e{t: t, bin: bin, kv: kv, art: artifacts(t), cache: t.TempDir(), st: st,
		ring:       2000,
		version:    labTag,
		journalCmd: "journalctl -u kubelet -f -o json --all",
		journal: func() []entry {
			es, err := parseJournal(journal(t, kv["cursor"], "json"))
			if err != nil {
				t.Fatal(err)
			}
			return es
		}}
	e.addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	e.base = "http://" + e.addr
	defer e.stopAll()
	for _, tag := range []string{labTag, otherTag} {
		copyReadings(t, tag, e.cache)
	}
	e.startServer()
	// A demo line first, as when the relay attaches a moment after
	// the server starts: the feed numbers it, the export leaves it out
	// (checkLiveness reads the two side by side).
	testwait.For(t, 30*time.Second, "a line in the demo feed", func() bool {
		hello, _ := e.history(e.base, 10*time.Second)
		return hello.Next > 1
	})
	e.startRelay()
	e.waitStored(1, 30*time.Second)
	st.done("serve+relay, 1st line")

	ctx := browsertest.New(t, chromium, 3*time.Minute)
	e.page(ctx) // step 2
	e.feedVersion("while the lab runs")
	e.pageVersion(ctx) // step 4
	then()

	// Close the span: the relay stops, and the server keeps what it acknowledged.
	e.relay.signal(t, syscall.SIGTERM)
	e.relay = nil
	e.compare()
}

// recordedJournal is a real kubelet's journal, recorded in the lab (v1.33.0,
// `journalctl -u kubelet -o json --all`, 4,309 entries over 85 s, its start-up
// lines and its version line among them).
const (
	recordedJournal = "testdata/kubelet-v1.33.0-journal.json.gz"
	recordedVersion = "v1.33.0"
)

// TestRecordedRestarts is step 3 of the end-to-end test (issue 7) on the real
// kubelet's recorded journal instead of a live one, so that it needs neither
// root nor a kubelet and runs everywhere: `syncloop relay` streams it (the
// journalctl it runs is testdata/fakejournalctl, which resumes after a cursor
// as journalctl does) to `syncloop serve`; the server is killed past the ring
// it restores and started again, the relay is killed and started again, and
// killed and rewound 300 lines; the server's record must still be the
// journal, entry for entry, none twice, and the feed must still report the
// kubelet's version, whose line is long out of the restored ring.
func TestRecordedRestarts(t *testing.T) {
	st := &stages{t: t, last: time.Now()}
	bin, err := syncloop()
	if err != nil {
		t.Fatal(err)
	}
	fake, err := fakeJournalctl()
	if err != nil {
		t.Fatal(err)
	}
	st.done("build syncloop, journalctl")
	raw := gunzip(t, recordedJournal)
	es, err := parseJournal(raw)
	if err != nil {
		t.Fatal(err)
	}
	entries := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(entries, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(artifacts(t), "recorded")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	// 200 entries a second, about twice the lab kubelet's rate at -v=4:
	// the ring is passed in ~13 s, and the journal (4,309 entries) lasts
	// past the three faults after it.
	e := &e2e{t: t, bin: bin, kv: map[string]string{}, art: art, cache: t.TempDir(), st: st,
		ring:       ringSize,
		version:    recordedVersion,
		journalCmd: fake + " -u kubelet -f -o json --all --entries=" + entries + " --rate=200",
		journal:    func() []entry { return es }}
	e.addr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	e.base = "http://" + e.addr
	defer e.stopAll()
	copyReadings(t, labTag, e.cache)
	e.startServer()
	e.startRelay()
	// The version line is the journal's 155th entry.
	testwait.For(t, 60*time.Second, "the feed to report the kubelet's version", func() bool {
		hello, _ := e.history(e.base, 10*time.Second)
		return hello.KubeletVersion != ""
	})
	st.done("serve+relay, version")
	e.feedVersion("before the restarts")
	e.restarts()
	e.feedVersion("after the restarts")
	e.compare()
	if n := len(e.stored()); n >= len(es) {
		t.Errorf("the server stored all %d entries before the relay stopped: the faults came after the journal's end", n)
	}
	t.Logf("stage summary:\n  %s", strings.Join(st.all, "\n  "))
}

// gunzip reads a gzipped file.
func gunzip(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return b
}

// e2e holds the processes and places of one run.
type e2e struct {
	t      *testing.T
	bin    string
	kv     map[string]string // the lab's start output
	art    string            // artifacts directory
	cache  string            // the server's --cache-dir
	addr   string
	base   string
	st     *stages
	server *proc
	relay  *proc

	ring       int            // the server's --history-lines; 0: its default
	tag        string         // the server's --tag; "": labTag
	version    string         // the kubelet version the feed must report
	journalCmd string         // the relay's --cmd
	journal    func() []entry // the journal the relay reads, for compare
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// copyReadings seeds the server's cache with the user's cached Reading of tag, when
// there is one, so the server need not extract it again (it still can).
func copyReadings(t *testing.T, tag, cache string) {
	t.Helper()
	home, err := os.UserCacheDir()
	if err != nil {
		return
	}
	src := filepath.Join(home, "syncloop", "readings", tag)
	files, _ := filepath.Glob(filepath.Join(src, "*.json"))
	if len(files) == 0 {
		t.Logf("no cached Reading of %s in %s: the server extracts it", tag, src)
		return
	}
	dst := filepath.Join(cache, "readings", tag)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		copyFile(t, f, filepath.Join(dst, filepath.Base(f)))
	}
}

// proc is a process the test started; only it is ever signalled.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func (e *e2e) start(name string, args ...string) *proc {
	e.t.Helper()
	logf, err := os.OpenFile(filepath.Join(e.art, "e2e-"+name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	fmt.Fprintf(logf, "==== %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), strings.Join(args, " "))
	cmd := exec.Command(e.bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		e.t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.done)
	}()
	return p
}

// signal sends sig to p and waits (up to 10 s) for it to exit.
func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	if err := p.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("%s: %v", p.name, err)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		t.Errorf("%s (pid %d) did not exit within 10 s of %v: SIGKILL", p.name, p.cmd.Process.Pid, sig)
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func (e *e2e) startServer() {
	e.t.Helper()
	tag := labTag
	if e.tag != "" {
		tag = e.tag
	}
	args := []string{"serve", "--addr", e.addr, "--tag", tag, "--token", "T", "--cache-dir", e.cache, "--data-dir", filepath.Join(e.cache, "data")}
	if e.ring > 0 {
		args = append(args, "--history-lines", strconv.Itoa(e.ring))
	}
	e.server = e.start("serve", args...)
	var err error
	healthy := false
	testwait.Until(60*time.Second, func() bool {
		var resp *http.Response
		if resp, err = http.Get(e.base + "/healthz"); err == nil {
			resp.Body.Close()
			healthy = resp.StatusCode == http.StatusOK
		}
		return healthy || e.server.exited()
	})
	if !healthy {
		e.t.Fatalf("the server did not answer /healthz within 60 s (exited: %v, %v); see e2e-serve.log", e.server.exited(), err)
	}
}

func (e *e2e) statePath() string { return filepath.Join(e.cache, "relay.state") }

// startRelay runs the relay on the issue's own command line. With the lab, the
// first start is told where the lab's span begins through its state file,
// which is what a restarted relay resumes from: `--after-cursor=<cursor>
// --no-tail` is appended once, by the relay (relay.ResumeCommand), and never
// twice.
func (e *e2e) startRelay() {
	e.t.Helper()
	if _, err := os.Stat(e.statePath()); errors.Is(err, os.ErrNotExist) && e.kv["cursor"] != "" {
		b, _ := json.Marshal(relay.State{Server: e.base, Feed: "default", Cursor: e.kv["cursor"]})
		if err := os.WriteFile(e.statePath(), append(b, '\n'), 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
	e.relay = e.start("relay", "relay", "--server", e.base, "--token", "T", "--feed", "default",
		"--state", e.statePath(), "--cmd", e.journalCmd)
}

// killRelay kills the relay with SIGKILL, and the journalctl it ran (in a process
// group of its own, which a killed relay cannot stop).
func (e *e2e) killRelay() {
	e.t.Helper()
	kids := childrenOf(e.relay.cmd.Process.Pid)
	e.relay.signal(e.t, syscall.SIGKILL)
	for _, pid := range kids {
		_ = syscall.Kill(-pid, syscall.SIGKILL) // sh -c's group: sh and journalctl
	}
}

// stopAll ends what is still running: the relay first (it stops its journalctl).
func (e *e2e) stopAll() {
	if e.relay != nil {
		kids := childrenOf(e.relay.cmd.Process.Pid)
		e.relay.signal(e.t, syscall.SIGTERM)
		for _, pid := range kids {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	if e.server != nil {
		e.server.signal(e.t, syscall.SIGTERM)
	}
}

// childrenOf lists the processes whose parent is pid.
func childrenOf(pid int) []int {
	var kids []int
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue
		}
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 2 {
			continue
		}
		if pp, _ := strconv.Atoi(f[1]); pp == pid {
			k, _ := strconv.Atoi(filepath.Base(filepath.Dir(s)))
			kids = append(kids, k)
		}
	}
	return kids
}

// storedLine is one entry of the feed's export: what the server stored (on
// JetStream), in stream order.
type storedLine struct {
	Seq uint64 // its place in the export, from 1 (checkLiveness: the feed's number)
	ID  string // the journal entry's __CURSOR
	Raw string // the entry exactly as the relay sent it
}

// stored reads the feed's export (GET /feeds/default/export), the server's
// durable record of what it received, in stream order. The server must be up.
func (e *e2e) stored() []storedLine {
	e.t.Helper()
	return e.storedAfter(0)
}

// storedAfter is stored from the feed's line after on (?after=, in the
// feed's sequence numbers; Seq still counts places in this export).
func (e *e2e) storedAfter(after uint64) []storedLine {
	e.t.Helper()
	resp, err := http.Get(fmt.Sprintf("%s/feeds/default/export?after=%d", e.base, after))
	if err != nil {
		e.t.Fatalf("export: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return nil // no relay has sent to it yet
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("export: %s: %s", resp.Status, b)
	}
	var out []storedLine
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var j struct {
			Cursor string `json:"__CURSOR"`
		}
		if err := json.Unmarshal(sc.Bytes(), &j); err != nil {
			e.t.Fatalf("export line %d is not a journal entry: %v: %q", len(out)+1, err, sc.Bytes())
		}
		out = append(out, storedLine{Seq: uint64(len(out) + 1), ID: j.Cursor, Raw: sc.Text()})
	}
	if err := sc.Err(); err != nil {
		e.t.Fatalf("export: %v", err)
	}
	return out
}

// waitStored waits until the feed's file has at least n records.
func (e *e2e) waitStored(n int, d time.Duration) []storedLine {
	e.t.Helper()
	var recs []storedLine
	if !testwait.UntilEvery(d, 100*time.Millisecond, func() bool { recs = e.stored(); return len(recs) >= n }) {
		e.t.Fatalf("the server stored %d lines, want %d within %v; see e2e-serve.log and e2e-relay.log", len(recs), n, d)
	}
	return recs
}

// message is a journal entry's MESSAGE, when it is a string.
func message(raw string) string {
	var j struct{ MESSAGE any }
	_ = json.Unmarshal([]byte(raw), &j)
	s, _ := j.MESSAGE.(string)
	return s
}

// ---- the browser (step 2) --------------------------------------------------------------

func evalJS[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%.200s: %v", js, err)
	}
	return v
}

// pollJS evaluates js until ok says its value will do, or d passes; it returns
// the last value and whether ok held.
func pollJS[T any](t *testing.T, ctx context.Context, d time.Duration, js string, ok func(T) bool) (T, bool) {
	t.Helper()
	var v T
	var err error
	held := testwait.UntilEvery(d, 100*time.Millisecond, func() bool {
		v, err = chromedp.Run(ctx, chromedp.Evaluate[T](js))
		return err == nil && ok(v)
	})
	if !held && err != nil {
		t.Logf("%.200s: %v", js, err)
	}
	return v, held
}

func (e *e2e) screenshot(ctx context.Context, name string) {
	e.t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		e.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	out := filepath.Join(e.art, "e2e-"+name+".png")
	if err := os.WriteFile(out, png, 0o644); err != nil {
		e.t.Error(err)
	}
	e.t.Logf("screenshot: %s", out)
}

const countsJS = `Object.fromEntries([...document.querySelectorAll('[data-case-count]')].map(s => [s.dataset.caseCount, Number(s.textContent) || 0]))`

// paneLine is one row of the live pane, as the DOM has it.
type paneLine struct {
	Seq  uint64 `json:"seq"`
	Case string `json:"case"`
	Line int    `json:"line"`
	Sel  bool   `json:"sel"`
	Demo bool   `json:"demo"`
	// Fetched: a line of the selected case that had left the pane, brought
	// back from the stream and placed among older lines (live.js fetchCase).
	Fetched bool   `json:"fetched"`
	Text    string `json:"text"`
}

const paneJS = `[...document.querySelectorAll('#live li.ll')].map(li => ({
	seq: Number(li.dataset.seq || 0), case: li.dataset.case || '', line: Number(li.dataset.line || 0),
	sel: li.classList.contains('sel'), demo: li.classList.contains('ll-demo'),
	fetched: li.classList.contains('ll-fetched'),
	text: li.querySelector('.ll-msg')?.textContent || li.textContent}))`

// page is step 2: the counters, the liveness selection, a click on a line.
func (e *e2e) page(ctx context.Context) {
	t := e.t
	// Lines of the demo feed (before the relay attached) count too: a case's
	// counter must go past what the demo gave it.
	_, hist := e.history(e.base, 15*time.Second)
	demo := map[string]int{}
	for _, m := range hist {
		if m.Demo {
			demo[m.Line.Case]++
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.base+"/k8s/"+labTag+"/")); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	counts, ok := pollJS(t, ctx, 90*time.Second, countsJS, func(c map[string]int) bool {
		for _, k := range e2eCases {
			if c[k] <= demo[k] {
				return false
			}
		}
		return true
	})
	t.Logf("case counters: %v (demo lines among them: %v)", counts, demo)
	if !ok {
		e.screenshot(ctx, "counters")
		var missing []string
		for _, k := range e2eCases {
			if counts[k] <= demo[k] {
				missing = append(missing, k)
			}
		}
		t.Fatalf("within 90 s the page counted no real line for %v", missing)
	}
	e.st.done("page: 7 cases counted")

	// Select liveness with the chip in its margin block.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#case-liveness [data-case-select="liveness"]`))); err != nil {
		t.Fatalf("click the liveness chip: %v", err)
	}
	// Selecting a case holds the pane at the case's newest line, and the
	// case's new lines join the list while it is held: a reader watching
	// the case fire sees it fire without pressing anything.
	pollJS(t, ctx, 5*time.Second, `document.getElementById('live').livePane.paused`, func(b bool) bool { return b })
	// Two failures at least (probe period 3 s), so that "exactly" means something.
	if n, ok := pollJS(t, ctx, 60*time.Second, `document.querySelectorAll('#live li.ll.sel').length`, func(n int) bool { return n >= 2 }); !ok {
		t.Fatalf("%d lines of the pane highlighted 60 s after selecting liveness (the pane held on the case), want 2 or more", n)
	}
	if held := evalJS[bool](t, ctx, `document.getElementById('live').livePane.paused`); !held {
		t.Error("the pane stopped holding the selected case by itself")
	}
	// Freeze the pane, then hold it against the feed's file for the same
	// lines: Pause resumes a pane held by a selection, and freezes it when
	// pressed again.
	for _, want := range []bool{false, true} {
		if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#live .live-pause`))); err != nil {
			t.Fatal(err)
		}
		pollJS(t, ctx, 5*time.Second, `document.getElementById('live').livePane.paused`, func(b bool) bool { return b == want })
	}
	var pane []paneLine
	pane, _ = pollJS(t, ctx, 5*time.Second, paneJS, func(p []paneLine) bool { return true })
	e.checkLiveness(pane)
	// For the picture: the last highlighted line in the middle of the pane (the
	// pane stays paused: it was paused by its button, not by scrolling).
	evalJS[bool](t, ctx, `(() => { const s = [...document.querySelectorAll('#live li.ll.sel')]; s.at(-1)?.scrollIntoView({block: 'center'}); return true; })()`)
	e.screenshot(ctx, "liveness-selected")

	// Scroll the page to the top, then click the last highlighted line: the source
	// must come to the liveness case.
	var sel []paneLine
	for _, l := range pane {
		if l.Sel {
			sel = append(sel, l)
		}
	}
	if len(sel) == 0 {
		t.Fatal("no highlighted line to click")
	}
	clicked := sel[len(sel)-1]
	evalJS[bool](t, ctx, `window.scrollTo(0, 0); history.replaceState(null, '', location.pathname); true`)
	if inView := evalJS[bool](t, ctx, inViewJS(`document.getElementById('case-liveness')`)); inView {
		t.Log("the liveness case is in view at the top of the page: the scroll check below proves less")
	}
	row := fmt.Sprintf(`#live li.ll[data-seq="%d"] .ll-msg`, clicked.Seq)
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(chromedp.CSS(row)), chromedp.Click(chromedp.CSS(row))); err != nil {
		t.Fatalf("click the highlighted line %d: %v", clicked.Seq, err)
	}
	e.checkGoto(ctx, clicked)
	e.screenshot(ctx, "liveness-clicked")
	// Let the pane run again.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`#live .live-pause`))); err != nil {
		t.Fatal(err)
	}
	e.st.done("page: liveness checks")
}

// checkLiveness: the pane's highlighted lines are exactly the feed's liveness probe
// lines for the lab's pod, among the lines the pane holds.
func (e *e2e) checkLiveness(pane []paneLine) {
	t := e.t
	var lo, hi uint64
	got := map[uint64]bool{}
	demoSel := 0
	var fetched []paneLine
	for _, l := range pane {
		if l.Seq == 0 {
			t.Errorf("the pane has a row without a sequence number: %q", l.Text)
			continue
		}
		if l.Fetched {
			// Not part of the pane's run of lines: checked below.
			fetched = append(fetched, l)
			continue
		}
		if l.Demo {
			if l.Sel {
				demoSel++
			}
			continue
		}
		if lo == 0 || l.Seq < lo {
			lo = l.Seq
		}
		hi = max(hi, l.Seq)
		if l.Sel {
			got[l.Seq] = true
			if !strings.Contains(l.Text, `"SyncLoop (probe)" probe="liveness"`) {
				t.Errorf("highlighted line %d is not a liveness probe line: %.200s", l.Seq, l.Text)
			}
		}
	}
	if demoSel > 0 {
		t.Logf("%d highlighted demo lines (from before the relay attached) left out", demoSel)
	}
	// A line the pane fetched back is one of the selected case's, older than
	// the pane's run (a line missing from inside the run, fetched, would
	// hide a lost one: it is not counted as held there).
	pod := `pod="` + e.kv["pod"] + `"`
	for _, l := range fetched {
		if !l.Sel || l.Seq >= lo || !strings.Contains(l.Text, `"SyncLoop (probe)" probe="liveness"`) || !strings.Contains(l.Text, pod) {
			t.Errorf("fetched-back line %d (before the pane's run %d..%d, highlighted: %v) is not an older liveness line of %s: %.200s",
				l.Seq, lo, hi, l.Sel, e.kv["pod"], l.Text)
		}
	}
	// The feed's lines from the pane's first on (written before the pane
	// had them). The export leaves out demo lines, which the feed numbered
	// too (a demo line stored before the relay attached): each record's
	// sequence number is the next one the pane does not show as a demo
	// line, so a line the pane lost still shows as a count that differs.
	recs := e.storedAfter(lo - 1)
	demoSeq := map[uint64]bool{}
	for _, l := range pane {
		if l.Demo {
			demoSeq[l.Seq] = true
		}
	}
	for i, seq := 0, lo; i < len(recs); i, seq = i+1, seq+1 {
		for demoSeq[seq] {
			seq++
		}
		recs[i].Seq = seq
	}
	want := map[uint64]bool{}
	inRange, otherProbes := 0, 0
	for _, r := range recs {
		if r.Seq < lo || r.Seq > hi {
			continue
		}
		inRange++
		m := message(r.Raw)
		switch {
		case strings.Contains(m, `"SyncLoop (probe)" probe="liveness"`) && strings.Contains(m, pod):
			want[r.Seq] = true
		case strings.Contains(m, `"SyncLoop (probe)"`):
			otherProbes++ // readiness and startup: logged at the same line, never highlighted
		}
	}
	realRows := len(pane) - len(fetched)
	for _, l := range pane {
		if l.Demo && !l.Fetched {
			realRows--
		}
	}
	if inRange != realRows {
		t.Errorf("the pane holds %d real lines with seq %d..%d, the feed's file %d", realRows, lo, hi, inRange)
	}
	t.Logf("pane: %d lines (seq %d..%d, and %d fetched back before them), %d highlighted; the feed has %d liveness lines of %s and %d other probe lines among them",
		len(pane), lo, hi, len(fetched), len(got), len(want), e.kv["pod"], otherProbes)
	if len(want) == 0 {
		t.Error("the feed has no liveness line among the pane's: nothing was checked")
	}
	// And straight from the journal: its liveness lines for the pod between the
	// entries the pane's first and last lines are.
	var first, last string
	for _, r := range recs {
		if r.Seq == lo {
			first = r.ID
		}
		if r.Seq == hi {
			last = r.ID
		}
	}
	es, err := parseJournal(journal(t, e.kv["cursor"], "json"))
	if err != nil {
		t.Fatal(err)
	}
	from := slices.IndexFunc(es, func(e entry) bool { return e.Cursor == first })
	to := slices.IndexFunc(es, func(e entry) bool { return e.Cursor == last })
	if from < 0 || to < from {
		t.Errorf("the pane's first and last lines (%s, %s) are not in the journal in that order", first, last)
	} else {
		n := 0
		for _, e := range es[from : to+1] {
			if strings.Contains(e.Message, `"SyncLoop (probe)" probe="liveness"`) && strings.Contains(e.Message, pod) {
				n++
			}
		}
		if n != len(got) {
			t.Errorf("the journal has %d liveness lines of %s over the pane's span, the pane highlights %d", n, e.kv["pod"], len(got))
		}
	}
	if !maps.Equal(got, want) {
		var extra, missing []uint64
		for s := range got {
			if !want[s] {
				extra = append(extra, s)
			}
		}
		for s := range want {
			if !got[s] {
				missing = append(missing, s)
			}
		}
		slices.Sort(extra)
		slices.Sort(missing)
		t.Errorf("highlighted lines differ from the feed's liveness lines: highlighted but not liveness %v, liveness but not highlighted %v", extra, missing)
	}
}

func inViewJS(el string) string {
	return `(() => { const e = ` + el + `; if (!e) return false; const r = e.getBoundingClientRect();
		return r.bottom > 0 && r.top < innerHeight; })()`
}

// gotoState is where the source is after a click on a log line.
type gotoState struct {
	Hash         string `json:"hash"`
	Highlighted  []int  `json:"highlighted"`
	FirstInView  bool   `json:"firstInView"`
	CaseSelected bool   `json:"caseSelected"`
	CaseInView   bool   `json:"caseInView"`
}

const gotoJS = `(() => {
	const c = document.getElementById('case-liveness');
	const hl = [...document.querySelectorAll('.line.hl')];
	const inView = (e) => { const r = e.getBoundingClientRect(); return r.bottom > 0 && r.top < innerHeight; };
	return {hash: location.hash, highlighted: hl.map(e => Number(e.id.slice(1))),
		firstInView: hl.length > 0 && inView(hl[0]),
		caseSelected: c.classList.contains('selected'), caseInView: inView(c)};
})()`

// checkGoto: after a click on a liveness line the source shows the liveness
// case, selected and in view. In v1.31.0 the probe cases log through the
// helper handleProbeSync (kubelet.go:2528), outside the case's own lines: that
// line is marked too, and it must be one of the liveness case's log sites.
func (e *e2e) checkGoto(ctx context.Context, clicked paneLine) {
	t := e.t
	sites := logLines(t, labTag)["liveness"]
	s, ok := pollJS(t, ctx, 5*time.Second, gotoJS, func(s gotoState) bool { return s.Hash != "" })
	t.Logf("after the click on line %d (caller line %d): %+v", clicked.Seq, clicked.Line, s)
	if !ok {
		t.Errorf("clicking a liveness line did not move the source (hash still empty): %+v", s)
		return
	}
	// The source shows the exact line the entry was logged from: the case
	// itself, or (v1.21+) the probe helper handleProbeSync it calls, which
	// lies outside the case's own lines. Either is in view, the case selected.
	if !s.CaseSelected || !(s.CaseInView || s.FirstInView) {
		t.Errorf("after the click the liveness case is selected=%v, in view=%v, its line in view=%v; want it selected, and it or the line in view", s.CaseSelected, s.CaseInView, s.FirstInView)
	}
	if s.Hash != "#case-liveness" && !strings.HasPrefix(s.Hash, "#L") {
		t.Errorf("after the click the address is %q; want #case-liveness or a liveness log line", s.Hash)
	}
	if clicked.Line != 0 {
		if !sites[clicked.Line] {
			t.Errorf("the clicked line names caller line %d, not one of the liveness case's log lines %v", clicked.Line, slices.Sorted(maps.Keys(sites)))
		}
		if !slices.Contains(s.Highlighted, clicked.Line) {
			t.Errorf("the clicked line names caller line %d, the source marks %v", clicked.Line, s.Highlighted)
		}
	}
}

// ---- the feed's websocket -----------------------------------------------------------

// wsMsg is one message of the browser protocol (server/feeds/browser.go).
type wsMsg struct {
	Hello  *wsStatus `json:"hello"`
	Status *wsStatus `json:"status"`
	Seq    uint64    `json:"seq"`
	Line   *struct {
		Case string `json:"case"`
	} `json:"line"`
	Demo bool `json:"demo"`
}

type wsStatus struct {
	Tag            string `json:"tag"`
	KubeletVersion string `json:"kubelet_version"`
	VersionLink    string `json:"version_link"`
	Source         string `json:"source"`
	Next           uint64 `json:"next"`
}

// history reads the feed's hello and its history (the ring) as a browser would.
func (e *e2e) history(base string, d time.Duration) (wsStatus, []wsMsg) {
	t := e.t
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	url := "ws" + strings.TrimPrefix(base, "http") + "/feeds/default/ws"
	conn, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {base}}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	defer conn.CloseNow()
	conn.SetReadLimit(-1)
	var hello wsStatus
	var msgs []wsMsg
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			t.Fatalf("reading the feed's history: %v (hello %+v, %d lines)", err, hello, len(msgs))
		}
		for part := range strings.SplitSeq(string(b), "\n") {
			var m wsMsg
			if err := json.Unmarshal([]byte(part), &m); err != nil {
				t.Fatalf("feed message %.200q: %v", part, err)
			}
			switch {
			case m.Hello != nil:
				hello = *m.Hello
			case m.Status != nil:
				if m.Status.KubeletVersion != "" {
					hello.KubeletVersion = m.Status.KubeletVersion
				}
			case m.Line != nil:
				msgs = append(msgs, m)
			}
		}
		if hello.Next <= 1 || (len(msgs) > 0 && msgs[len(msgs)-1].Seq >= hello.Next-1) {
			return hello, msgs
		}
	}
}

// feedVersion is step 4's first half: the feed reports the kubelet's version,
// detected from the journal's "Kubelet version" line.
func (e *e2e) feedVersion(when string) {
	t := e.t
	hello, _ := e.history(e.base, 15*time.Second)
	t.Logf("feed hello %s: %+v", when, hello)
	if hello.KubeletVersion != e.version {
		t.Errorf("%s: the feed reports kubelet version %q, want %s (detected from the journal's \"Kubelet version\" line)", when, hello.KubeletVersion, e.version)
	}
}

// pageVersion is step 4's second half: the pane on the kubelet's own tag knows the
// version and offers no switch; the page at the server's default tag offers one.
func (e *e2e) pageVersion(ctx context.Context) {
	t := e.t
	if v := evalJS[string](t, ctx, `document.getElementById('live').livePane.version`); v != labTag {
		t.Errorf("the pane on the %s page holds kubelet version %q, want %s", labTag, v, labTag)
	}
	if note := evalJS[string](t, ctx, `(() => { const n = document.querySelector('#live .live-version'); return n && !n.hidden ? n.textContent : ''; })()`); note != "" {
		t.Errorf("the %s page, which the kubelet runs, offers a switch: %q", labTag, note)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(e.base+"/k8s/"+otherTag+"/")); err != nil {
		t.Fatalf("open the %s page: %v", otherTag, err)
	}
	link := `document.querySelector('#live .live-version:not([hidden]) a[href="/k8s/` + labTag + `/"]')`
	text, ok := pollJS(t, ctx, 20*time.Second, `(() => { const a = `+link+`; return a ? a.closest('p').textContent : ''; })()`,
		func(s string) bool { return s != "" })
	e.screenshot(ctx, "other-tag")
	if !ok {
		st := evalJS[map[string]any](t, ctx, `(() => { const p = document.getElementById('live').livePane; return {version: p.version, tag: p.tag, note: p.versionNote.textContent, hidden: p.versionNote.hidden}; })()`)
		t.Errorf("the %s page offers no link to /k8s/%s/ within 20 s (pane: %v)", otherTag, labTag, st)
	} else {
		t.Logf("the %s page says: %s", otherTag, text)
	}
	e.st.done("version checks")
}

// ---- restarts and the record (step 3) -------------------------------------------------

// restarts kills the server while the relay streams to it and starts it again on
// the same port and cache, then kills the relay and starts it again on its state.
func (e *e2e) restarts() {
	t := e.t
	// Past the ring the server restores (e.ring lines): a restarted server no
	// longer has the kubelet's start-up lines in it, as in real life.
	n := len(e.waitStored(1, time.Second))
	e.waitStored(max(n+200, e.ring+500), 150*time.Second)
	e.st.done("past the ring")
	killedAt := len(e.stored()) // at least what it had when killed
	e.server.signal(t, syscall.SIGKILL)
	e.startServer()
	e.st.done("server killed+back")
	e.waitStored(killedAt+200, 60*time.Second) // the relay came back to it
	e.st.done("relay reconnected")

	e.killRelay()
	killedAt = len(e.stored())
	e.startRelay()
	e.waitStored(killedAt+200, 60*time.Second)
	e.st.done("relay killed+back")

	// A relay killed between the server's ack and its own state write (it writes
	// at most every 200 ms) resends what the server has: make that certain by
	// putting its state 300 lines back, and the server must skip them all.
	e.killRelay()
	recs := e.stored()
	back := recs[max(0, len(recs)-300)].ID
	b, _ := json.Marshal(relay.State{Server: e.base, Feed: "default", Cursor: back})
	if err := os.WriteFile(e.statePath(), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	e.startRelay()
	e.waitStored(len(recs)+200, 60*time.Second)
	e.st.done("relay rewound+back")

	// Close the span: the relay stops, and the server keeps what it acknowledged.
	e.relay.signal(t, syscall.SIGTERM)
	e.relay = nil
}

// compare holds the server's record against the journal, entry by entry by cursor,
// from the lab's start cursor to the last entry the server stored.
func (e *e2e) compare() {
	t := e.t
	recs := e.stored()
	var export strings.Builder
	for _, r := range recs {
		export.WriteString(r.Raw + "\n")
	}
	if err := os.WriteFile(filepath.Join(e.art, "e2e-feed.ndjson"), []byte(export.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	es := e.journal()
	if len(recs) == 0 || len(es) == 0 {
		t.Fatalf("nothing to compare: %d stored, %d in the journal", len(recs), len(es))
	}
	last := recs[len(recs)-1].ID
	end := slices.IndexFunc(es, func(e entry) bool { return e.Cursor == last })
	if end < 0 {
		t.Fatalf("the server's last line (%s) is not in the journal after the lab's cursor", last)
	}
	es = es[:end+1]
	t.Logf("compare: the server stored %d lines, the journal has %d entries up to its last", len(recs), len(es))

	seen := map[string]int{}
	var dups []string
	for i, r := range recs {
		if j, ok := seen[r.ID]; ok {
			dups = append(dups, fmt.Sprintf("%s (records %d and %d)", r.ID, j, i))
		}
		seen[r.ID] = i
		if i > 0 && r.Seq <= recs[i-1].Seq {
			t.Errorf("record %d has seq %d after %d", i, r.Seq, recs[i-1].Seq)
		}
	}
	journalAt := map[string]int{}
	for i, e := range es {
		journalAt[e.Cursor] = i
	}
	var missing []string
	for _, e := range es {
		if _, ok := seen[e.Cursor]; !ok {
			missing = append(missing, e.Cursor)
		}
	}
	var foreign []string
	for _, r := range recs {
		if _, ok := journalAt[r.ID]; !ok {
			foreign = append(foreign, r.ID)
		}
	}
	if recs[0].ID != es[0].Cursor && journalAt[recs[0].ID] > 0 && recs[0].Seq > 1 {
		t.Logf("the feed's file starts at journal entry %d: JetStream dropped the oldest lines (--feed-mb): keep the span shorter", journalAt[recs[0].ID])
	}
	if len(dups) > 0 {
		t.Errorf("%d journal entries stored twice, e.g. %s", len(dups), dups[0])
	}
	if len(missing) > 0 {
		t.Errorf("%d journal entries never reached the server, e.g. %s", len(missing), missing[0])
	}
	if len(foreign) > 0 {
		t.Errorf("%d stored lines are not journal entries of the span, e.g. %s", len(foreign), foreign[0])
	}
	for i := range min(len(recs), len(es)) {
		if recs[i].ID != es[i].Cursor {
			t.Errorf("entry %d: the server has %s, the journal %s: out of order", i, recs[i].ID, es[i].Cursor)
			break
		}
		if !sameEntry(recs[i].Raw, es[i].Raw) {
			t.Errorf("entry %d (%s): the stored line is not the journal's", i, es[i].Cursor)
			break
		}
	}
	e.st.done("compare with journal")
}

// sameEntry compares two journal JSON lines field by field (journalctl may order
// fields differently between runs), each field's value as journalctl wrote it.
// Lines with the same bytes are the same entry without decoding them; the
// values are compared as JSON text, not decoded (decoding both sides of some
// 10,000 entries under -race took a minute and more).
func sameEntry(a string, b []byte) bool {
	if a == string(b) {
		return true
	}
	var x, y map[string]json.RawMessage
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal(b, &y) != nil || len(x) != len(y) {
		return false
	}
	for k, v := range x {
		if w, ok := y[k]; !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
