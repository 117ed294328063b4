package server

// Browser tests: Debian's Chromium, driven by chromedp, reads the real page of
// the default tag from a loopback server. They check what only a browser can:
// the page loads with no console error and no request to another host,
// links to a case scroll to it and highlight it, the copy-link button yields
// the case's URL, j/k move between cases. Screenshots go to SYNCLOOP_ARTIFACTS
// (default: the repository's artifacts/ folder) for a person to look at.

import (
	"cmp"
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/browsertest"
)

// newBrowser opens a tab for the test in the binary's headless Chromium
// (browsertest.New), or skips when there is none (fails under CI=true).
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := browsertest.Path(t)
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("browser test skipped in -short mode")
	}
	// A budget against a hung page, not a measure: the tests run two at
	// a time (t.Parallel), each at half the machine.
	return browsertest.New(t, path, 3*time.Minute)
}

// pageWatch collects what a page must never do: console errors, uncaught
// exceptions, requests to another host.
type pageWatch struct {
	mu       sync.Mutex
	host     string
	problems []string
	requests int
	// allow, when set, says which problems a test expects (a socket it
	// refuses on purpose); set it before the page does anything.
	allow func(problem string) bool
}

// watchPage starts collecting what the page in ctx must never do, for a
// site served by ts.
func watchPage(t *testing.T, ctx context.Context, ts *httptest.Server) *pageWatch {
	t.Helper()
	base, _ := url.Parse(ts.URL)
	w := &pageWatch{host: base.Host}
	if err := chromedp.Listen(ctx, w.listen); err != nil {
		t.Fatal(err)
	}
	return w
}

func (w *pageWatch) add(format string, args ...any) {
	p := fmt.Sprintf(format, args...)
	w.mu.Lock()
	if w.allow == nil || !w.allow(p) {
		w.problems = append(w.problems, p)
	}
	w.mu.Unlock()
}

func (w *pageWatch) listen(ev any) {
	switch ev := ev.(type) {
	case *runtime.EventExceptionThrown:
		desc := ""
		if ev.ExceptionDetails.Exception != nil {
			desc = ev.ExceptionDetails.Exception.Description
		}
		w.add("exception: %s %s %s", ev.ExceptionDetails.Text, desc, ev.ExceptionDetails.URL)
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				args = append(args, string(a.Value)+a.Description)
			}
			w.add("console.%s: %s", ev.Type, strings.Join(args, " "))
		}
	case *cdplog.EventEntryAdded:
		if ev.Entry.Level == cdplog.EntryLevelError || ev.Entry.Level == cdplog.EntryLevelWarning {
			w.add("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL)
		}
	case *network.EventRequestWillBeSent:
		w.mu.Lock()
		w.requests++
		w.mu.Unlock()
		u, err := url.Parse(ev.Request.URL)
		if err != nil || (u.Scheme != "data" && u.Host != w.host) {
			w.add("request to another host: %s", ev.Request.URL)
		}
	}
}

func (w *pageWatch) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.problems {
		t.Error(p)
	}
	if w.requests == 0 {
		t.Error("saw no network request at all: the watch is not working")
	}
}

// artifacts is where screenshots go.
func artifacts(t *testing.T) string {
	dir := os.Getenv("SYNCLOOP_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func screenshot(t *testing.T, ctx context.Context, name string, full bool) {
	t.Helper()
	var shot []byte
	var err error
	if full {
		shot, err = chromedp.Run(ctx, chromedp.FullScreenshot(90))
	} else {
		// A PNG encoded for speed: a third less of Chromium's time a shot,
		// at a fifth more bytes (184 shots a run).
		var r page.CaptureScreenshotResult
		r, err = chromedp.Call(ctx, page.CaptureScreenshot, page.CaptureScreenshotParams{FromSurface: new(true), OptimizeForSpeed: new(true)})
		shot = r.Data
	}
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	path := filepath.Join(artifacts(t), name)
	if err := os.WriteFile(path, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func eval[T any](t *testing.T, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// waitFor polls a JavaScript condition until it holds.
func waitFor(t *testing.T, ctx context.Context, what, js string) {
	t.Helper()
	var err error
	defer func() { // on a timeout, say what the page last answered
		if t.Failed() && err != nil {
			t.Logf("waiting for %s (%s): %v", what, js, err)
		}
	}()
	testwait.For(t, 10*time.Second, what, func() bool {
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		return err == nil && ok
	})
}

// markEvent and markWhen note moments in a page (browsertest.MarkEvent,
// MarkWhen): a reader's wait between two pages is measured on their clocks.
func markEvent(t *testing.T, ctx context.Context, name, selector, event string) {
	t.Helper()
	if err := browsertest.MarkEvent(ctx, name, selector, event); err != nil {
		t.Fatal(err)
	}
}

func markWhen(t *testing.T, ctx context.Context, name, cond string) {
	t.Helper()
	if err := browsertest.MarkWhen(ctx, name, cond); err != nil {
		t.Fatal(err)
	}
}

// between is the time from mark from in the page of fromCtx to mark to in
// the page of toCtx, once both are noted. Both marks fall after since (when
// the test began what brings them about) and before between reads them: a
// mark outside that is a broken measure, and fails the test. (Date.now()
// counts whole milliseconds: a millisecond either side is rounding.)
func between(t *testing.T, fromCtx context.Context, from string, toCtx context.Context, to string, since time.Time) time.Duration {
	t.Helper()
	waitFor(t, toCtx, to+" noted", `typeof window[`+jsString(to)+`] === 'number'`)
	a, okA, errA := browsertest.Marked(fromCtx, from)
	b, _, errB := browsertest.Marked(toCtx, to)
	if err := cmp.Or(errA, errB); err != nil || !okA {
		t.Fatalf("the pages' marks %s (noted: %v) and %s: %v", from, okA, to, err)
	}
	lo, hi := since.Add(-time.Millisecond), time.Now().Add(time.Millisecond)
	if a.Before(lo) || b.Before(a) || b.After(hi) {
		t.Fatalf("the pages' marks: %s at %v, %s at %v; want both between %v and %v, in that order", from, a, to, b, lo, hi)
	}
	return b.Sub(a)
}

func TestBrowserReadingPage(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := newRealServer(t)
	r := s.site.Reading(s.cfg.DefaultTag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	watch := watchPage(t, ctx, ts)
	if err := chromedp.Do(ctx,
		chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			if _, err := chromedp.Call(ctx, network.Enable, network.EnableParams{}); err != nil {
				return err
			}
			_, err := chromedp.Call(ctx, cdplog.Enable, struct{}{})
			return err
		}),
	); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-write", AllowWithoutSanitization: true},
		Setting:    browser.PermissionSettingGranted, Origin: ts.URL, BrowserContextID: browsertest.ContextID(ctx),
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.CallBrowser(ctx, browser.SetPermission, browser.SetPermissionParams{
		Permission: &browser.PermissionDescriptor{Name: "clipboard-read"},
		Setting:    browser.PermissionSettingGranted, Origin: ts.URL, BrowserContextID: browsertest.ContextID(ctx),
	}); err != nil {
		t.Fatal(err)
	}

	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "reading-top.png", false)

	t.Run("one block per case", func(t *testing.T) {
		keys := eval[[]string](t, ctx, `[...document.querySelectorAll('section.case')].map(s => s.dataset.case)`)
		var want []string
		for _, c := range r.Function.Cases {
			want = append(want, c.Key)
		}
		if strings.Join(keys, " ") != strings.Join(want, " ") {
			t.Errorf("case blocks %v, want %v", keys, want)
		}
	})

	t.Run("#case-pleg scrolls and highlights", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"#case-pleg"), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "pleg selected", `document.querySelector('#case-pleg').classList.contains('selected')`)
		waitFor(t, ctx, "pleg at the top of the window", `(() => { const y = document.querySelector('#case-pleg').getBoundingClientRect().top; return y >= -2 && y < 40 })()`)
		if n := eval[int](t, ctx, `document.querySelectorAll('section.case.selected').length`); n != 1 {
			t.Errorf("%d cases selected, want 1", n)
		}
		screenshot(t, ctx, "reading-case-pleg.png", false)
	})

	t.Run("copy link yields the case URL", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Click(`#case-sync [data-copy-link]`)); err != nil {
			t.Fatal(err)
		}
		want := pageURL + "#case-sync"
		waitFor(t, ctx, "the button's link", `document.querySelector('#case-sync [data-copy-link]').dataset.copied === `+jsString(want))
		got := eval[string](t, ctx, `navigator.clipboard.readText()`)
		if got != want {
			t.Errorf("clipboard %q, want %q", got, want)
		}
	})

	t.Run("j and k move between cases", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"#case-pleg"), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "pleg selected", `document.querySelector('#case-pleg').classList.contains('selected')`)
		keys := r.Function.Cases
		i := 0
		for keys[i].Key != "pleg" {
			i++
		}
		steps := []struct {
			key  string
			want int
		}{{"j", i + 1}, {"j", i + 2}, {"k", i + 1}, {"k", i}, {"k", i - 1}}
		for _, st := range steps {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(st.key)); err != nil {
				t.Fatal(err)
			}
			want := keys[st.want].Key
			waitFor(t, ctx, st.key+" to "+want, `document.querySelector('section.case.selected')?.dataset.case === `+jsString(want)+` && location.hash === '#case-`+want+`'`)
		}
	})

	t.Run("line and range links", func(t *testing.T) {
		c := r.Function.Cases[0]
		a, b := c.Start+1, c.Start+4
		if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s#L%d-L%d", pageURL, a, b)), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "range highlighted", fmt.Sprintf(`[...document.querySelectorAll('.line.hl')].map(e => e.id).join() === %s`,
			jsString(fmt.Sprintf("L%d,L%d,L%d,L%d", a, a+1, a+2, a+3))))
		// Click one line number, shift-click another: a range link.
		if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`#L%d > a.ln`, c.Start))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "one line", fmt.Sprintf(`location.hash === '#L%d'`, c.Start))
		_ = eval[bool](t, ctx, fmt.Sprintf(`document.querySelector('#L%d > a.ln').dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, shiftKey: true}))`, c.Start+2))
		waitFor(t, ctx, "shift-click range", fmt.Sprintf(`location.hash === '#L%d-L%d' && document.querySelectorAll('.line.hl').length === 3`, c.Start, c.Start+2))
	})

	t.Run("live pane hears the case", func(t *testing.T) {
		// The page's one selection (static/selection.js) is what the pane
		// follows: no side events.
		if err := chromedp.Do(ctx, chromedp.Click(`#case-housekeeping .case-chip`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the pane follows the selection", `document.getElementById('live').livePane.selected === 'housekeeping'`)
		eval[bool](t, ctx, fmt.Sprintf(`(import('/static/selection.js').then(m => m.select({key: 'pleg', lo: %d}, {from: 'pane', scroll: true})), true)`, r.Function.Cases[1].Start+1))
		waitFor(t, ctx, "goto a line", fmt.Sprintf(`document.querySelector('.line.hl')?.id === 'L%d'`, r.Function.Cases[1].Start+1))
	})

	t.Run("a line folded in a helper", func(t *testing.T) {
		if len(r.Function.Helpers) == 0 {
			t.Skip("no helper at this tag")
		}
		h := r.Function.Helpers[len(r.Function.Helpers)-1]
		if err := chromedp.Do(ctx, chromedp.Navigate(fmt.Sprintf("%s#L%d", pageURL, h.End-1)), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the helper unfolded and its line highlighted", fmt.Sprintf(
			`document.getElementById('helper-%s').open && document.querySelector('.line.hl')?.id === 'L%d'`, h.Name, h.End-1))
	})

	t.Run("two sets", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"#two-sets"), chromedp.WaitReady("#two-sets")); err != nil {
			t.Fatal(err)
		}
		n := eval[int](t, ctx, `document.querySelectorAll('#two-sets ul.sightings li a[href^="https://github.com/kubernetes/kubernetes/blob/`+r.Tag+`/"]').length`)
		if n != len(r.TwoSets) {
			t.Errorf("%d sighting links, want %d", n, len(r.TwoSets))
		}
		screenshot(t, ctx, "reading-two-sets.png", false)
	})

	t.Run("y copies, ? shows the keys", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"#case-startup"), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "startup selected", `document.querySelector('#case-startup').classList.contains('selected')`)
		if err := chromedp.Do(ctx, chromedp.KeyEvent("y")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "y copied", `document.querySelector('#case-startup [data-copy-link]').dataset.copied === `+jsString(pageURL+"#case-startup"))
		if got := eval[string](t, ctx, `navigator.clipboard.readText()`); got != pageURL+"#case-startup" {
			t.Errorf("clipboard after y: %q", got)
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent("?")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "keys dialog open", `document.getElementById('keys').open`)
		if err := chromedp.Do(ctx, chromedp.KeyEvent("?")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "keys dialog closed", `!document.getElementById('keys').open`)
	})

	t.Run("print", func(t *testing.T) {
		if err := chromedp.Do(ctx, media(emulation.SetEmulatedMediaParams{Media: "print"})); err != nil {
			t.Fatal(err)
		}
		hidden := eval[bool](t, ctx, `['header.site', '#live', '.copy-link'].every(s => { const e = document.querySelector(s); return !e || getComputedStyle(e).display === 'none' })`)
		if !hidden {
			t.Error("print shows the header, the live pane or the copy links")
		}
		// On paper: the folded doc comment and helpers open, a case's code
		// is whole (not a sticky box that scrolls) beside its note.
		type paper struct {
			Folded         int
			Position, MaxH string
			Columns        int
		}
		p := eval[paper](t, ctx, `(() => { window.dispatchEvent(new Event('beforeprint'));
			const pre = document.querySelector('#case-pleg pre.code'), cs = getComputedStyle(pre);
			return {Folded: document.querySelectorAll('#doc-comment:not([open]), details.helper:not([open])').length,
				Position: cs.position, MaxH: cs.maxHeight,
				Columns: getComputedStyle(document.getElementById('case-pleg')).gridTemplateColumns.split(' ').length} })()`)
		// A long case may run over a page (kept whole, it left page 2
		// mostly blank); a table row may not be split.
		breaks := eval[string](t, ctx, `getComputedStyle(document.getElementById('case-pleg')).breakInside + ' ' + getComputedStyle(document.querySelector('.reconcile tr')).breakInside`)
		if breaks != "auto avoid" {
			t.Errorf("on paper a case's and a table row's break-inside are %q; want \"auto avoid\"", breaks)
		}
		eval[bool](t, ctx, `(window.dispatchEvent(new Event('afterprint')), true)`)
		if p.Folded != 0 || p.Position != "static" || p.MaxH != "none" || p.Columns != 2 {
			t.Errorf("printing: %+v; want the doc comment and helpers open, the code static and whole beside its note", p)
		}
		screenshot(t, ctx, "reading-print.png", false)
		if err := chromedp.Do(ctx, media(emulation.SetEmulatedMediaParams{})); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("dark and narrow", func(t *testing.T) {
		if err := chromedp.Do(ctx,
			media(emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}),
			chromedp.Navigate(pageURL+"#case-liveness"), chromedp.WaitReady("section.case"),
		); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "liveness at the top", `(() => { const y = document.querySelector('#case-liveness').getBoundingClientRect().top; return y >= -2 && y < 40 })()`)
		screenshot(t, ctx, "reading-dark.png", false)
		// Every token must be legible on the dark background: none may keep
		// a light-theme colour.
		dark := eval[[]string](t, ctx, `[...document.querySelectorAll('pre.code .cl span')].filter(e => {
			const [r, g, b] = getComputedStyle(e).color.match(/\d+/g).map(Number);
			return 0.2126*r + 0.7152*g + 0.0722*b < 110;
		}).map(e => e.className + ':' + e.textContent + ':' + getComputedStyle(e).color).slice(0, 5)`)
		if len(dark) > 0 {
			t.Errorf("tokens too dark on the dark theme: %v", dark)
		}
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(400, 850), chromedp.Navigate(pageURL+"#case-config"), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "config at the top", `(() => { const y = document.querySelector('#case-config').getBoundingClientRect().top; return y >= -2 && y < 40 })()`)
		screenshot(t, ctx, "reading-narrow.png", false)
	})

	watch.check(t)
}

// enableNetwork turns on the CDP network domain for the page (its request
// and response events), as several browser tests do before they navigate.
var enableNetwork = chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
	_, err := chromedp.Call(ctx, network.Enable, network.EnableParams{})
	return err
})

func TestBrowserOtherPages(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := newRealServer(t)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	watch := watchPage(t, ctx, ts)
	if err := chromedp.Do(ctx, enableNetwork); err != nil {
		t.Fatal(err)
	}
	tag := s.cfg.DefaultTag
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+tag+"/pod-workers"), chromedp.WaitReady("section.type")); err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "pod-workers.png", false)
	// Item 12: a defined type is called one, not "ident".
	if k := eval[string](t, ctx, `[...document.querySelectorAll('section.type h2')].filter(h => h.textContent.includes('type PodWorkerState')).map(h => h.querySelector('.kind').textContent).join()`); k != "defined type" {
		t.Errorf("type PodWorkerState is shown as kind %q, want \"defined type\"", k)
	}
	// Item 12: the 404 page of a tag tells a visitor what a visitor can
	// do, not a server flag.
	watch.mu.Lock()
	watch.allow = func(p string) bool { return strings.Contains(p, "404") && strings.Contains(p, "/k8s/v1.99.99/") }
	watch.mu.Unlock()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/v1.99.99/"), chromedp.WaitReady("main")); err != nil {
		t.Fatal(err)
	}
	if txt := eval[string](t, ctx, `document.querySelector('main').textContent`); strings.Contains(txt, "--source-dir") || !strings.Contains(txt, "v1.99.99") {
		t.Errorf("the 404 page of an unknown tag says: %.400q", txt)
	}
	// The tag switcher's form leads to the tag's page of the same kind.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/k8s/"+tag+"/pod-workers"), chromedp.WaitReady("#tag-input"),
		chromedp.SetValue("#tag-input", tag), chromedp.Submit("#tag-input"),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the switcher's redirect", `location.pathname === '/k8s/`+tag+`/pod-workers' && !!document.querySelector('section.type')`)
	watch.check(t)
}

func jsString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
