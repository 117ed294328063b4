package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestBrowserLivePane drives the live pane in Chromium on the default tag's
// real page, fed by the demo feed and by a journal file of lines at the
// tag's real log sites: the pane is labelled as a demo when it is one, the
// pleg case highlights only pleg lines (and filters to them), the counters
// in the margin count, and clicking a log line brings its case into view.
func TestBrowserLivePane(t *testing.T) {
	t.Parallel()
	t.Run("demo", func(t *testing.T) { testLivePane(t, true) })
	t.Run("journal", func(t *testing.T) { testLivePane(t, false) })
}

// siteJournal writes klog text lines at every log site of the Reading's cases.
func siteJournal(t *testing.T, r *extractor.Reading) string {
	// As `journalctl -o json` writes them (what the README's relay and
	// --journal-cmd read): the page shows each entry's MESSAGE.
	var b strings.Builder
	n := 0
	for i := 0; i < 3; i++ {
		for _, c := range r.Function.Cases {
			for _, l := range c.Logs {
				n++
				entry, _ := json.Marshal(map[string]string{
					"__CURSOR": fmt.Sprintf("s=x;i=%x", n), "_HOSTNAME": "vm", "_PID": "4242", "SYSLOG_IDENTIFIER": "kubelet",
					"_CMDLINE": "/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml",
					"MESSAGE":  fmt.Sprintf("I1130 01:02:%02d.%06d    4242 %s:%d] %q pod=\"default/probe-me\"", i, i*1000, path.Base(l.File), l.Line, l.Message),
				})
				b.Write(append(entry, '\n'))
			}
		}
	}
	name := filepath.Join(t.TempDir(), "journal.txt")
	if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

func testLivePane(t *testing.T, demo bool) {
	ctx := newBrowser(t)
	r := realReading(t)
	ts := serveReal(t, r, func(c *Config) {
		c.DemoPeriod = 25 * time.Millisecond
		if !demo {
			c.JournalFile = siteJournal(t, r)
		}
	})
	watch := watchPage(t, ctx, ts)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/")); err != nil {
		t.Fatal(err)
	}

	banner := `(() => { const b = document.querySelector('#live .live-banner'); return !!b && !b.hidden && b.textContent.includes('DEMO FEED'); })()`
	if demo {
		waitFor(t, ctx, "the demo banner", banner)
	}
	waitFor(t, ctx, "pleg lines and lines of another case in the pane",
		`document.querySelectorAll('#live li.ll[data-case="pleg"]').length >= 2 && document.querySelectorAll('#live li.ll[data-case]:not([data-case="pleg"])').length >= 2`)

	// Select the pleg case the way a reader does: its chip in the margin.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('[data-case-select="pleg"]').click(), true)`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "pleg lines highlighted", `document.querySelectorAll('#live li.ll.sel').length > 0`)
	type selState struct {
		Sel, Pleg, WrongSel  int
		OthersDim, PlegClear bool
		Count                int
		Info                 string
	}
	st := eval[selState](t, ctx, `(() => {
		const all = [...document.querySelectorAll('#live li.ll')];
		const sel = all.filter(li => li.classList.contains('sel'));
		const pleg = all.filter(li => li.dataset.case === 'pleg');
		const others = all.filter(li => li.dataset.case !== 'pleg');
		return {
			Sel: sel.length, Pleg: pleg.length,
			WrongSel: sel.filter(li => li.dataset.case !== 'pleg').length,
			// The others recede in colour (muted text), not in opacity,
			// which would fail contrast; pleg lines keep the page's text colour.
			OthersDim: others.length > 0 && others.every(li => getComputedStyle(li.querySelector('.ll-msg')).color === getComputedStyle(document.querySelector('.where')).color),
			PlegClear: pleg.every(li => Number(getComputedStyle(li).opacity) === 1 && li.classList.contains('sel')),
			Count: Number(document.querySelector('[data-case-count="pleg"]').textContent),
			Info: document.querySelector('#live .live-sel').textContent,
		};
	})()`)
	if st.WrongSel != 0 || st.Sel == 0 || !st.OthersDim || !st.PlegClear {
		t.Fatalf("after selecting pleg: %+v; want only pleg lines highlighted, the others dimmed", st)
	}
	if st.Count < st.Pleg || st.Info == "" {
		t.Fatalf("pleg counter %d for %d pleg lines in the pane, info %q", st.Count, st.Pleg, st.Info)
	}

	// The filter toggle leaves only pleg lines visible.
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('#live .live-filter').click(), true)`)); err != nil {
		t.Fatal(err)
	}
	visibleOthers := eval[int](t, ctx, `[...document.querySelectorAll('#live li.ll')].filter(li => li.dataset.case !== 'pleg' && li.offsetParent !== null).length`)
	visiblePleg := eval[int](t, ctx, `[...document.querySelectorAll('#live li.ll[data-case="pleg"]')].filter(li => li.offsetParent !== null).length`)
	if visibleOthers != 0 || visiblePleg == 0 {
		t.Fatalf("filtered to pleg: %d other lines and %d pleg lines visible", visibleOthers, visiblePleg)
	}
	eval[bool](t, ctx, `(document.getElementById('live').scrollIntoView({block: 'start', behavior: 'instant'}), true)`)
	screenshot(t, ctx, "live-pane-pleg-"+map[bool]string{true: "demo", false: "journal"}[demo]+".png", false)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('#live .live-filter').click(), true)`)); err != nil {
		t.Fatal(err)
	}

	// Clicking a line of another case brings that case (or its very line) into view.
	type jump struct {
		Key, Hash string
		InView    bool
	}
	j := eval[jump](t, ctx, `(() => {
		window.scrollTo(0, 0);
		const li = document.querySelector('#live li.ll[data-case]:not([data-case="pleg"])');
		li.click();
		const key = li.dataset.case, line = li.dataset.line;
		const target = (line && document.getElementById('L' + line)) || document.getElementById('case-' + key);
		const r = target.getBoundingClientRect();
		return { Key: key, Hash: location.hash, InView: r.bottom > 0 && r.top < innerHeight };
	})()`)
	if !j.InView || (j.Hash != "#case-"+j.Key && (len(j.Hash) < 3 || j.Hash[:2] != "#L")) {
		t.Fatalf("after clicking a %s line: %+v; want its case in view and in the URL", j.Key, j)
	}
	// A pod filter that matches nothing hides every line; clearing it shows them again.
	hidden := eval[bool](t, ctx, `(() => {
		const pod = document.querySelector('#live .live-pod');
		pod.value = 'no-such-pod'; pod.dispatchEvent(new Event('input'));
		const none = [...document.querySelectorAll('#live li.ll')].every(li => li.offsetParent === null);
		pod.value = 'probe-me'; pod.dispatchEvent(new Event('input'));
		const some = [...document.querySelectorAll('#live li.ll')].some(li => li.offsetParent !== null);
		return none && some;
	})()`)
	if !hidden {
		t.Fatal("the pod filter does not hide and show lines")
	}

	if demo {
		// Clicking a line held the pane at that line; "N new ↓ resume" lets
		// it follow again, and then it does not pause by itself.
		if eval[bool](t, ctx, `document.getElementById('live').livePane.paused`) {
			eval[bool](t, ctx, `(document.querySelector('#live .live-more').click(), true)`)
		}
		time.Sleep(time.Second) // sleep: a window in which a pane that pauses by itself would pause
		if eval[bool](t, ctx, `document.getElementById('live').livePane.paused`) {
			t.Fatal("the pane paused itself")
		}
		// Pause freezes the list while lines keep coming and are counted; resume shows them.
		before := eval[int](t, ctx, `(document.querySelector('#live .live-pause').click(), document.querySelectorAll('#live li.ll').length)`)
		waitFor(t, ctx, "new lines counted while paused", `/^[1-9]\d* new/.test(document.querySelector('#live .live-more').textContent) && !document.querySelector('#live .live-more').hidden`)
		if n := eval[int](t, ctx, `document.querySelectorAll('#live li.ll').length`); n != before {
			t.Fatalf("paused pane went from %d to %d lines", before, n)
		}
		eval[bool](t, ctx, `(document.querySelector('#live .live-more').click(), true)`)
		waitFor(t, ctx, "held lines shown on resume", fmt.Sprintf(`document.querySelectorAll('#live li.ll').length > %d && document.querySelector('#live .live-more').hidden`, before))
	}

	if !demo && eval[bool](t, ctx, banner) {
		t.Fatal("a journal feed is labelled as a demo")
	}
	if !demo {
		// A journald entry shows as the kubelet's message with its key=values.
		if bad := eval[string](t, ctx, `(() => { const ts = [...document.querySelectorAll('#live li.ll:not(.ll-skipped) .ll-msg')].map(e => e.textContent); return ts.length ? ts.find(t => !/^".+" pod="default\/probe-me"$/.test(t)) || '' : 'no lines at all'; })()`); bad != "" {
			t.Fatalf("a journal entry shows as %q; want its message and key=values", bad)
		}
	}
	watch.check(t)
}

// TestBrowserReconnectCountdown (issue 12, item 12): a pane whose socket
// dropped, and whose server refuses it for a while, counts down to the
// next try ("reconnecting in 3 s", then 2, 1), and connects again once
// the server takes it.
func TestBrowserReconnectCountdown(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load,
		Getenv: func(string) string { return "" }, DemoPeriod: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	var refuse atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if refuse.Load() && strings.HasSuffix(req.URL.Path, "/ws") {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		s.ServeHTTP(w, req)
	}))
	t.Cleanup(ts.Close)
	watch := watchPage(t, ctx, ts)
	// The refused sockets are what this test is about.
	watch.mu.Lock()
	watch.allow = func(msg string) bool { return strings.Contains(msg, "/ws") }
	watch.mu.Unlock()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "connected", `document.querySelector('#live .live-conn').dataset.state === 'up'`)
	refuse.Store(true)
	eval[bool](t, ctx, `(document.getElementById('live').livePane.ws.close(), true)`)
	// The waits grow (0.5, 1, 2, 4 s…): one of 3 s or more is counted down.
	conn := `document.querySelector('#live .live-conn').textContent`
	var n int
	var txt string
	if !testwait.Until(20*time.Second, func() bool {
		txt = eval[string](t, ctx, conn)
		if m := regexp.MustCompile(`reconnecting in (\d+) s`).FindStringSubmatch(txt); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		return n >= 3
	}) {
		t.Fatalf("no countdown of 3 s or more; the pane says %q", txt)
	}
	time.Sleep(1100 * time.Millisecond) // sleep: a second passes, and the countdown must follow it
	txt = eval[string](t, ctx, conn)
	m := regexp.MustCompile(`reconnecting in (\d+) s`).FindStringSubmatch(txt)
	if m == nil {
		t.Fatalf("a second later the pane says %q", txt)
	}
	if later, _ := strconv.Atoi(m[1]); later >= n {
		t.Errorf("the countdown said %d s, a second later %d s: it does not count down", n, later)
	}
	// After the second's check, not inside it: a screenshot takes seconds on
	// a loaded machine, and the countdown ran out while it was taken.
	screenshot(t, ctx, "reconnect-countdown.png", false)
	refuse.Store(false)
	if !testwait.Until(20*time.Second, func() bool {
		return eval[string](t, ctx, `document.querySelector('#live .live-conn').dataset.state`) == "up"
	}) {
		t.Fatalf("not connected again once the server takes the socket: %q", eval[string](t, ctx, conn))
	}
	watch.check(t)
}

// TestBrowserPaneUpdatesAFewTimesASecond: lines that flood in (the demo at
// 40 a second) join the pane in a few updates a second, not one per line:
// each update lays out and paints up to 2,000 rows.
func TestBrowserPaneUpdatesAFewTimesASecond(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	openDemo(t, ctx, ts.URL+"/k8s/"+r.Tag+"/", viewports[0], false, "housekeeping", 1)
	// Count the list's updates (a render appends its rows at once: one
	// observer callback) and the rows they added, over three seconds.
	eval[bool](t, ctx, `(() => {
		window.paneUpdates = {updates: 0, rows: 0};
		new MutationObserver((ms) => {
			const rows = ms.reduce((n, m) => n + [...m.addedNodes].filter(n => n.matches?.('li.ll')).length, 0);
			if (rows) { paneUpdates.updates++; paneUpdates.rows += rows; }
		}).observe(document.querySelector('#live .live-lines'), {childList: true});
		return true; })()`)
	time.Sleep(3 * time.Second) // sleep: updates are counted over three seconds
	type counts struct{ Updates, Rows int }
	c := eval[counts](t, ctx, `window.paneUpdates`)
	t.Logf("in 3 s: %d rows added in %d updates", c.Rows, c.Updates)
	if c.Rows < 45 {
		t.Fatalf("only %d rows in 3 s of a demo at 40 lines a second: the check below proves nothing", c.Rows)
	}
	if c.Updates > 36 {
		t.Errorf("%d updates of the list in 3 s for %d rows, want at most 36 (10 a second, and slack)", c.Updates, c.Rows)
	}
	watch.check(t)
}
