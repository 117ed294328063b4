package server

// Browser tests for the reading in a person's hands (issue 12): what a reader
// sees at 1440×900, 1024×768 and 390×844, light and dark, on the demo feed.
// Each test looks at the page the way a reader does: is the selected case's
// newest line in view, does the pane hold still when scrolled away, is there
// a horizontal scroll, is the pane reachable. Screenshots go to artifacts/.

import (
	"context"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// viewport is one window a reader reads in.
type viewport struct {
	name   string
	w, h   int64
	mobile bool
}

var viewports = []viewport{
	{"1440", 1440, 900, false},
	{"1024", 1024, 768, false},
	{"390", 390, 844, true},
}

// demoSite serves the default tag's real page with a fast demo feed (and
// the same Reading under other tags, when asked).
func demoSite(t *testing.T, others ...string) (*httptest.Server, *extractor.Reading) {
	t.Helper()
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	for _, tag := range others {
		o := *r
		o.Tag = tag
		fl.Readings[tag] = &o
	}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load,
		Getenv: func(string) string { return "" }, DemoPeriod: 25 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tag := range append(others, r.Tag) {
		waitLoaded(t, s, tag)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts, r
}

// setView sizes the window and picks the colour scheme.
func setView(t *testing.T, ctx context.Context, v viewport, dark bool) {
	t.Helper()
	scheme := "light"
	if dark {
		scheme = "dark"
	}
	if err := chromedp.Do(ctx,
		chromedp.EmulateViewport(v.w, v.h, func(p *emulation.SetDeviceMetricsOverrideParams, _ *emulation.SetTouchEmulationEnabledParams) {
			p.Mobile = v.mobile
		}),
		media(emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}),
	); err != nil {
		t.Fatal(err)
	}
}

func themeName(dark bool) string {
	if dark {
		return "dark"
	}
	return "light"
}

// TestBrowserShots takes the screenshots a person judges the layout by:
// every viewport, both themes, the page opened at the pleg case with its
// lines selected. It asserts what a screenshot shows at a glance: no
// horizontal page scroll, the selected case's title in view.
func TestBrowserShots(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	for _, v := range viewports {
		for _, dark := range []bool{false, true} {
			setView(t, ctx, v, dark)
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/#case-pleg"), chromedp.WaitReady("section.case")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "pleg lines", `document.querySelectorAll('#live li.ll[data-case="pleg"]').length >= 3`)
			eval[bool](t, ctx, `(document.querySelector('[data-case-select="pleg"]').click(), true)`)
			settle(t, ctx)
			name := fmt.Sprintf("shot-%s-%s", v.name, themeName(dark))
			screenshot(t, ctx, name+"-pleg.png", false)
			if sw := eval[int](t, ctx, fmt.Sprintf(`document.documentElement.scrollWidth - %d`, v.w)); sw > 0 {
				t.Errorf("%s: the page scrolls sideways by %d px", name, sw)
			}
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/"), chromedp.WaitReady("section.case")); err != nil {
				t.Fatal(err)
			}
			settle(t, ctx)
			screenshot(t, ctx, name+"-top.png", false)
		}
	}
	watch.check(t)
}

// openDemo opens the default tag's page on a demo site in v, and waits for
// lines of key in the pane.
func openDemo(t *testing.T, ctx context.Context, pageURL string, v viewport, dark bool, key string, atLeast int) {
	t.Helper()
	setView(t, ctx, v, dark)
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, fmt.Sprintf("%d %s lines in the pane", atLeast, key),
		fmt.Sprintf(`document.querySelectorAll('#live li.ll[data-case=%q]').length >= %d`, key, atLeast))
}

// lineInView says why a pane line is not where a reader sees all of it, or
// the empty string when it is: inside the part of the pane's scrolled list on view (the
// list's box, inside the window), below the stepper bar, and under nothing
// else (the "N new ↓ resume" button, a sticky bar): each corner and the
// middle of its edges is the line itself when hit-tested.
const lineInView = `((li) => {
	if (!li) return 'no such line';
	if (li.offsetParent === null) return 'the line is not displayed';
	const l = li.closest('ol'), lr = l.getBoundingClientRect(), r = li.getBoundingClientRect();
	const top = Math.max(lr.top + l.clientTop, 0), bottom = Math.min(lr.top + l.clientTop + l.clientHeight, innerHeight);
	const at = 'line [' + Math.round(r.top) + ',' + Math.round(r.bottom) + '], list on view [' + Math.round(top) + ',' + Math.round(bottom) + ']';
	if (r.top < top - 1 || r.bottom > bottom + 1) return 'not inside the list on view: ' + at;
	const sel = document.querySelector('#live .live-sel');
	if (sel && !sel.hidden && sel.getBoundingClientRect().bottom > r.top + 1) return 'under the stepper bar: ' + at;
	for (const [x, y] of [[r.left + 4, r.top + 2], [r.left + r.width / 2, r.top + 2], [r.right - 4, r.top + 2],
			[r.left + 4, r.bottom - 2], [r.left + r.width / 2, r.bottom - 2], [r.right - 4, r.bottom - 2]]) {
		const hit = document.elementFromPoint(x, y);
		if (!hit || !li.contains(hit)) return 'covered at (' + Math.round(x) + ',' + Math.round(y) + ') by ' + (hit ? hit.tagName + '.' + hit.className : 'nothing') + ': ' + at;
	}
	return '';
})`

// checkHeld checks that the pane's current line is fully on view now (a
// reader looks right away, not eventually) and stays so as new lines
// arrive, the pane paused. It looks every 100 ms until a dozen lines have
// arrived since the first look (the demo sends one every 25 ms; the pane
// renders at most ten times a second, so the list has grown under the
// line several times), four looks at least; lines that never come fail it.
func checkHeld(t *testing.T, ctx context.Context, what string) {
	t.Helper()
	settle(t, ctx) // the pane has placed it
	type st struct {
		Why    string
		Paused bool
		Held   int
	}
	look := func() st {
		return eval[st](t, ctx, `({Why: `+lineInView+`(document.querySelector('#live li.ll.cur')),
			Paused: document.getElementById('live').livePane.paused, Held: document.getElementById('live').livePane.heldCount})`)
	}
	first := look()
	for i, deadline := 0, time.Now().Add(5*time.Second); ; i++ {
		s := look()
		if s.Why != "" {
			t.Fatalf("%s, after %d looks: the current line is not fully on view: %s (the stepper says %q)", what, i+1, s.Why,
				eval[string](t, ctx, `document.querySelector('#live .live-sel-info').textContent`))
		}
		if !s.Paused {
			t.Fatalf("%s: the pane is not paused at the selected line", what)
		}
		if i >= 3 && s.Held >= first.Held+12 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d lines arrived in 5 s (%d held at first): the pane held still while no line arrived, which proves nothing", what, s.Held-first.Held, first.Held)
		}
		time.Sleep(100 * time.Millisecond) // sleep: the pane is looked at over time, as lines arrive
	}
}

// TestBrowserSelectShowsLines: selecting a case brings its newest line in
// the pane fully into view at every width, and keeps it there while lines
// arrive; the reader steps through its lines ("3 of 12") and each stepped-to
// line is fully on view; the counts count what the pane holds and shows.
func TestBrowserSelectShowsLines(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	for _, v := range viewports {
		t.Run(v.name, func(t *testing.T) {
			// A page opened at a case (a shared link, a reload): the case is
			// selected before its lines arrive, and on a narrow window the
			// drawer is closed. Clicking the case must show its newest line.
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
				t.Fatal(err)
			}
			openDemo(t, ctx, pageURL+"#case-pleg", v, false, "pleg", 4)
			eval[bool](t, ctx, `(document.querySelector('[data-case-select="pleg"]').scrollIntoView({block: 'center', behavior: 'instant'}), document.querySelector('[data-case-select="pleg"]').click(), true)`)
			checkHeld(t, ctx, "pleg selected on a page opened at #case-pleg")
			if c := eval[string](t, ctx, `document.querySelector('#live li.ll.cur').dataset.case`); c != "pleg" {
				t.Errorf("the current line is a %q line, want pleg", c)
			}
			screenshot(t, ctx, "select-pleg-"+v.name+".png", false)
			if v.mobile {
				// A phone's drawer is for lines: its chrome (title, controls,
				// stepper) takes under a third of it, and eight lines or more
				// are on view (a line other than the current shows two rows).
				type drawer struct{ Pane, Chrome, Lines float64 }
				d := eval[drawer](t, ctx, `(() => { const p = document.getElementById('live').getBoundingClientRect(), l = document.querySelector('#live .live-lines'), lr = l.getBoundingClientRect();
					const bottom = Math.min(lr.bottom, innerHeight);
					return {Pane: p.height, Chrome: lr.top - p.top, Lines: [...l.children].filter(li => { const r = li.getBoundingClientRect(); return li.offsetParent !== null && r.height > 0 && r.bottom > lr.top + 4 && r.top < bottom - 4; }).length}; })()`)
				if d.Chrome > d.Pane*0.3 || d.Lines < 8 {
					t.Errorf("the phone's drawer: %.0f of its %.0f px are chrome, %.0f lines on view; want under 30%% and 8 or more", d.Chrome, d.Pane, d.Lines)
				}
			}

			// config: the pod is added once, early; its lines are far
			// from the tail, where a pane that only follows never shows them.
			if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
				t.Fatal(err)
			}
			openDemo(t, ctx, pageURL, v, false, "pleg", 4)
			waitFor(t, ctx, "a config line", `!!document.querySelector('#live li.ll[data-case="config"]')`)
			eval[bool](t, ctx, `(document.querySelector('[data-case-select="config"]').scrollIntoView({block: 'center', behavior: 'instant'}), document.querySelector('[data-case-select="config"]').click(), true)`)
			checkHeld(t, ctx, "config selected")
			screenshot(t, ctx, "select-config-"+v.name+".png", false)
			type sel struct {
				Info  string
				Shown int
				Cur   bool
			}
			st := eval[sel](t, ctx, `(() => { const ls = [...document.querySelectorAll('#live li.ll[data-case="config"]')].filter(li => li.offsetParent !== null);
				return {Info: document.querySelector('#live .live-sel').textContent, Shown: ls.length, Cur: ls.length > 0 && ls[ls.length - 1].classList.contains('cur')} })()`)
			if want := fmt.Sprintf("line %d of %d", st.Shown, st.Shown); !strings.Contains(st.Info, want) || !st.Cur {
				t.Errorf("selection says %q (newest config line current: %v), want %q on the newest", st.Info, st.Cur, want)
			}
			// Step back through the case's lines, when there is more than one.
			pleg := eval[int](t, ctx, `(document.querySelector('[data-case-select="pleg"]').click(), [...document.querySelectorAll('#live li.ll[data-case="pleg"]')].filter(li => li.offsetParent !== null).length)`)
			checkHeld(t, ctx, "pleg selected after config")
			// (New pleg lines may join the list meanwhile: the line two back
			// is named by its sequence number.)
			back := eval[int](t, ctx, `(() => { const p = document.getElementById('live').livePane, ls = p.caseLines();
				const i = ls.findIndex(li => Number(li.dataset.seq) === p.curSeq);
				document.querySelector('#live .live-prev').click(); document.querySelector('#live .live-prev').click();
				return i >= 2 ? Number(ls[i - 2].dataset.seq) : -1; })()`)
			if pleg >= 3 && back < 0 {
				t.Fatal("the current pleg line is not the newest")
			}
			waitFor(t, ctx, "two lines back", fmt.Sprintf(`(() => { const p = document.getElementById('live').livePane, i = p.caseLines().findIndex(li => Number(li.dataset.seq) === %d);
				return p.curSeq === %d && document.querySelector('#live .live-sel').textContent.includes('line ' + (i + 1) + ' of ') })()`, back, back))
			checkHeld(t, ctx, "two pleg lines back")
			if c := eval[string](t, ctx, `document.querySelector('#live li.ll.cur').dataset.case`); c != "pleg" {
				t.Errorf("stepped to a %q line, want pleg", c)
			}
			// Showing the lines without a case changes the layout above the
			// current line: it stays on view.
			eval[bool](t, ctx, `(document.querySelector('#live [data-hide-none]').click(), true)`)
			checkHeld(t, ctx, "lines without a case shown")
			eval[bool](t, ctx, `(document.querySelector('#live [data-hide-none]').click(), true)`)
			// Counts are what the pane holds and shows: a pod filter that
			// matches nothing leaves nothing to count.
			eval[bool](t, ctx, `(() => { const p = document.querySelector('#live .live-pod'); p.value = 'no-such-pod'; p.dispatchEvent(new Event('input')); return true })()`)
			waitFor(t, ctx, "counters at zero", `[...document.querySelectorAll('[data-case-count]')].every(s => s.textContent === '0') && /no line/.test(document.querySelector('#live .live-sel').textContent)`)
			eval[bool](t, ctx, `(() => { const p = document.querySelector('#live .live-pod'); p.value = ''; p.dispatchEvent(new Event('input')); return true })()`)
			mismatch := eval[string](t, ctx, `(() => { for (const s of document.querySelectorAll('[data-case-count]')) {
				const n = document.querySelectorAll('#live li.ll[data-case="' + s.dataset.caseCount + '"]').length;
				if (Number(s.textContent) !== n) return s.dataset.caseCount + ': counter ' + s.textContent + ', pane ' + n; } return ''; })()`)
			if mismatch != "" {
				t.Errorf("a counter counts lines the pane does not hold: %s", mismatch)
			}
		})
	}
	watch.check(t)
}

// TestBrowserPaneHoldsStill: the pane follows the tail only while the reader
// is at its bottom. A scroll away by the scrollbar (no wheel event) or by
// PageUp pauses it, with "N new ↓ resume"; back at the bottom, it follows.
func TestBrowserPaneHoldsStill(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	for _, v := range []viewport{viewports[0], viewports[2]} {
		t.Run(v.name, func(t *testing.T) {
			openDemo(t, ctx, pageURL, v, false, "housekeeping", 30)
			// On a narrow window the pane is a drawer: open it.
			eval[bool](t, ctx, `(() => { const b = document.querySelector('#live .live-toggle'); if (b && b.getAttribute('aria-expanded') === 'false') b.click(); return true })()`)
			waitFor(t, ctx, "the lines on view", `document.querySelector('#live .live-lines').clientHeight > 50`)
			// A scrollbar drag moves scrollTop and fires scroll, no wheel.
			top := eval[float64](t, ctx, `(() => { const l = document.querySelector('#live .live-lines'); l.scrollTop = l.scrollHeight - l.clientHeight - 300; return l.scrollTop })()`)
			time.Sleep(1500 * time.Millisecond) // sleep: a window in which a pane that does not hold would go back to the tail
			type st struct {
				Top    float64
				Paused bool
				More   string
			}
			s := eval[st](t, ctx, `({Top: document.querySelector('#live .live-lines').scrollTop, Paused: document.getElementById('live').livePane.paused,
				More: document.querySelector('#live .live-more').hidden ? '' : document.querySelector('#live .live-more').textContent})`)
			if !s.Paused || s.Top != top || !regexp.MustCompile(`^\d+ new ↓ resume$`).MatchString(s.More) {
				t.Fatalf("after a scrollbar drag to %v: %+v; want the pane paused where the reader left it, with \"N new ↓ resume\"", top, s)
			}
			screenshot(t, ctx, "pane-paused-"+v.name+".png", false)
			// Back to the bottom: it follows again.
			eval[bool](t, ctx, `(() => { const l = document.querySelector('#live .live-lines'); l.scrollTop = l.scrollHeight; return true })()`)
			waitFor(t, ctx, "following again", `!document.getElementById('live').livePane.paused && document.querySelector('#live .live-more').hidden`)
			// PageUp in the pane (keyboard users) pauses too.
			if err := chromedp.Do(ctx, chromedp.Focus(`#live .live-lines`), chromedp.KeyEvent(kb.PageUp)); err != nil {
				t.Fatal(err)
			}
			time.Sleep(1500 * time.Millisecond) // sleep: a window in which a pane that does not hold would go back to the tail
			if !eval[bool](t, ctx, `document.getElementById('live').livePane.paused && document.querySelector('#live .live-lines').scrollTop < document.querySelector('#live .live-lines').scrollHeight - document.querySelector('#live .live-lines').clientHeight - 50`) {
				t.Fatal("PageUp in the pane did not hold it: it went back to the tail")
			}
			eval[bool](t, ctx, `(document.querySelector('#live .live-more').click(), true)`)
			waitFor(t, ctx, "resumed", `!document.getElementById('live').livePane.paused`)
		})
	}
	watch.check(t)
}

// TestBrowserLayout: a note and its code are read together at every width,
// the page never scrolls sideways (320–390 px included), the live pane is
// reachable at every width (a column, or a drawer over the source), and a
// phone's header is compact.
func TestBrowserLayout(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	all := append([]viewport{{"320", 320, 640, true}}, viewports...)
	for _, v := range all {
		t.Run(v.name, func(t *testing.T) {
			openDemo(t, ctx, pageURL, v, false, "pleg", 1)
			if sw := eval[int](t, ctx, `document.documentElement.scrollWidth`); sw > int(v.w) {
				wide := eval[string](t, ctx, fmt.Sprintf(`[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > %d + 1 && !e.closest('pre, table, .live-lines')).slice(0, 3).map(e => e.tagName + '.' + e.className).join(', ')`, v.w))
				t.Errorf("the page is %d px wide in a %d px window (%s)", sw, v.w, wide)
			}
			// Reading the middle of the pleg note, its code is in view.
			type rd struct{ NoteMid, CodeTop, CodeBottom, Inner float64 }
			p := eval[rd](t, ctx, `(() => {
				const c = document.getElementById('case-pleg'), note = c.querySelector('.margin'), code = c.querySelector('pre.code');
				const nr = note.getBoundingClientRect();
				window.scrollBy(0, nr.top + nr.height * 0.6 - innerHeight / 2);
				const cr = code.getBoundingClientRect(), n2 = note.getBoundingClientRect();
				return {NoteMid: n2.top + n2.height * 0.6, CodeTop: cr.top, CodeBottom: cr.bottom, Inner: innerHeight};
			})()`)
			if p.CodeBottom <= 0 || p.CodeTop >= p.Inner || p.CodeBottom-max(p.CodeTop, 0) < 80 {
				t.Errorf("reading the pleg note at y=%.0f, its code is at %.0f–%.0f of a %.0f px window", p.NoteMid, p.CodeTop, p.CodeBottom, p.Inner)
			}
			screenshot(t, ctx, "layout-note-code-"+v.name+".png", false)
			// A note's pre and list items stay in the note's column (a pre
			// wraps or scrolls in itself); the title is not clipped.
			if spill := eval[string](t, ctx, `(() => { for (const m of document.querySelectorAll('section.case > .margin')) {
					const mr = m.getBoundingClientRect();
					for (const e of m.querySelectorAll('pre, li, p, table')) {
						const r = e.getBoundingClientRect();
						if (r.right > mr.right + 1 || (e.tagName === 'PRE' && e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX === 'visible'))
							return m.parentElement.id + ' ' + e.tagName + ' ends at ' + Math.round(r.right) + ', its column at ' + Math.round(mr.right); } } return ''; })()`); spill != "" {
				t.Errorf("a note's block leaves its column: %s", spill)
			}
			if clip := eval[string](t, ctx, `(() => { const h = document.querySelector('h1'), r = h.getBoundingClientRect();
				return h.scrollWidth > h.clientWidth + 1 || r.right > innerWidth + 1 ? 'h1 ' + h.scrollWidth + ' px in ' + h.clientWidth + ', ends at ' + Math.round(r.right) : '' })()`); clip != "" {
				t.Errorf("the title is clipped: %s", clip)
			}
			if !v.mobile && v.w >= 1200 {
				// Item 12: the pane is as tall as the window, its lines to its
				// bottom (not capped, with blank space under it).
				type pane struct{ Pane, Lines, Inner float64 }
				p := eval[pane](t, ctx, `(() => { const l = document.getElementById('live').getBoundingClientRect(), s = document.querySelector('#live .live-scroll').getBoundingClientRect();
					return {Pane: l.height, Lines: s.bottom, Inner: innerHeight} })()`)
				if p.Pane < p.Inner-2 || p.Lines < p.Inner-24 {
					t.Errorf("the live pane is %.0f px tall in a %.0f px window, its lines end at %.0f", p.Pane, p.Inner, p.Lines)
				}
			}
			// The live pane is reachable: beside the source, or a drawer
			// whose bar is in view and opens over it.
			reach := `(() => { const r = document.querySelector('#live .live-lines').getBoundingClientRect(); return r.height > 80 && r.top < innerHeight && r.bottom > 0 && r.left < innerWidth })()`
			if !eval[bool](t, ctx, reach) {
				toggle := `(() => { const b = document.querySelector('#live .live-toggle'); const r = b.getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.bottom <= innerHeight })()`
				if !eval[bool](t, ctx, toggle) {
					t.Fatal("the live pane is out of reach: neither beside the source nor a drawer in view")
				}
				eval[bool](t, ctx, `(document.querySelector('#live .live-toggle').click(), true)`)
				waitFor(t, ctx, "the drawer open over the source", reach)
				eval[bool](t, ctx, `(document.querySelector('#live .live-toggle').click(), true)`)
			}
			if v.mobile {
				// Two rows on a 390 px phone, three at most at 320.
				limit := 100.0
				if v.w < 360 {
					limit = 120
				}
				if h := eval[float64](t, ctx, `document.querySelector('header.site').getBoundingClientRect().height`); h > limit {
					t.Errorf("the header is %.0f px tall on a %d px phone", h, v.w)
				}
			}
		})
	}
	watch.check(t)
}

// TestBrowserSelectionAgrees: the source, the pane and the address show one
// selection. A line selects its case in the pane too; a log line selects its
// case in the source and highlights its case's lines in the pane; going Back
// to the bare address selects nothing.
func TestBrowserSelectionAgrees(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	openDemo(t, ctx, pageURL, viewports[0], false, "sync", 2)
	var config extractor.Case
	for _, c := range r.Function.Cases {
		if c.Key == extractor.KeyConfig {
			config = c
		}
	}
	type agree struct {
		Pane, Source, Hash string
		PaneSel, WrongSel  int
	}
	state := `({Pane: document.getElementById('live').livePane.selected,
		Source: document.querySelector('section.case.selected')?.dataset.case || '',
		Hash: location.hash,
		PaneSel: document.querySelectorAll('#live li.ll.sel').length,
		WrongSel: [...document.querySelectorAll('#live li.ll.sel')].filter(li => li.dataset.case !== document.getElementById('live').livePane.selected).length})`

	eval[bool](t, ctx, `(document.querySelector('[data-case-select="pleg"]').click(), true)`)
	line := config.Start + 1
	eval[bool](t, ctx, fmt.Sprintf(`(document.querySelector('#L%d > a.ln').click(), true)`, line))
	if s := eval[agree](t, ctx, state); s.Pane != "config" || s.Source != "config" || s.Hash != fmt.Sprintf("#L%d", line) {
		t.Errorf("pleg selected, then line %d of config clicked: %+v; want config in the pane and the source, #L%d", line, s, line)
	}

	eval[bool](t, ctx, `(document.querySelector('#live li.ll[data-case="sync"]').click(), true)`)
	if s := eval[agree](t, ctx, state); s.Pane != "sync" || s.Source != "sync" || s.PaneSel == 0 || s.WrongSel != 0 {
		t.Errorf("a sync log line clicked: %+v; want sync selected in the source and its lines in the pane", s)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("section.case"),
		chromedp.Navigate(pageURL+"#case-sync"), chromedp.WaitReady("section.case")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "sync selected", `document.getElementById('live').livePane.selected === 'sync'`)
	eval[bool](t, ctx, `(history.back(), true)`)
	waitFor(t, ctx, "nothing selected at the bare address", `location.hash === '' && !document.querySelector('section.case.selected') && document.getElementById('live').livePane.selected === ''`)
	watch.check(t)
}

// TestBrowserFeedAtAnotherTag: a server whose feed is a real journal (here
// a journal file of the default tag's log sites) has one feed, read at the
// default tag; a page at another tag says so and links no log line to its
// own source lines (they would point at the wrong code).
func TestBrowserFeedAtAnotherTag(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := realReading(t)
	o := *r
	o.Tag = "v1.31.0"
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r, o.Tag: &o}}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load,
		Getenv: func(string) string { return "" }, JournalFile: siteJournal(t, r)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	waitLoaded(t, s, o.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	watch := watchPage(t, ctx, ts)
	openDemo(t, ctx, ts.URL+"/k8s/v1.31.0/", viewports[0], false, "pleg", 3)
	waitFor(t, ctx, "the note that the feed reads another tag", `(() => { const n = document.querySelector('#live .live-version'); return !n.hidden && n.textContent.includes('v1.31.0') })()`)
	if n := eval[int](t, ctx, `document.querySelectorAll('#live [data-seq][data-line]').length`); n != 0 {
		t.Errorf("%d log lines of another tag's kubelet link to this page's source lines", n)
	}
	if eval[bool](t, ctx, `document.getElementById('live').livePane.served !== 'default'`) {
		t.Error("a page at another tag was given another feed than the server's journal")
	}
	screenshot(t, ctx, "feed-another-tag.png", false)
	watch.check(t)
}

// realDemoSite serves the real Readings of the default tag and of others,
// with a fast demo feed; a tag's own demo is let go after idle.
func realDemoSite(t *testing.T, idle time.Duration, others ...string) (*httptest.Server, *Server, map[string]*extractor.Reading) {
	t.Helper()
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	for _, tag := range others {
		fl.Readings[tag] = extractortest.Reading(t, tag, content.Symbols())
	}
	s, err := openTuned(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load,
		Getenv: func(string) string { return "" }, DemoPeriod: 25 * time.Millisecond},
		func(p *Plan) { p.Feeds.DemoIdle = idle })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for tag := range fl.Readings {
		waitLoaded(t, s, tag)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts, s, fl.Readings
}

// logCallRE is a log call in kubelet.go: klog's, or a contextual logger's.
var logCallRE = regexp.MustCompile(`\b(klog|logger)\.(V\(\d+\)\.)?(Info|Error|Warning)`)

// TestBrowserDemoAtTag (issue 12, item 9): the demo feed follows the
// page's tag. At v1.20.0 (five cases, printf-style klog) and at the default
// tag, the pane's demo lines are only that tag's cases, each with the
// source line of its log call at that tag (checked against the tag's real
// kubelet.go, not the Reading), and clicking one selects its case and
// line. Before, every tag showed the default tag's demo: readiness lines at
// v1.20.0, and no data-line at all.
func TestBrowserDemoAtTag(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	def := extractor.DefaultTag
	ts, _, readings := realDemoSite(t, 0, "v1.20.0", "v1.31.0")
	watch := watchPage(t, ctx, ts)
	for _, tag := range []string{"v1.20.0", "v1.31.0", def} {
		t.Run(tag, func(t *testing.T) {
			r := readings[tag]
			b, err := fs.ReadFile(extractortest.FS(t, tag), r.Function.File)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			keys := map[string]bool{}
			for _, c := range r.Function.Cases {
				keys[c.Key] = true
			}
			if tag == "v1.20.0" && (keys["readiness"] || keys["startup"] || keys["container"] || !keys["liveness"]) {
				t.Fatalf("the v1.20.0 Reading has cases %v; the check below assumes liveness and no readiness, startup or container", keys)
			}
			openDemo(t, ctx, ts.URL+"/k8s/"+tag+"/", viewports[0], false, "liveness", 2)
			waitFor(t, ctx, "config, pleg and housekeeping lines too", `['config', 'pleg', 'housekeeping'].every(k => document.querySelector('#live li.ll[data-case="'+k+'"]'))`)
			if keys["container"] {
				// The container manager's case (from v1.27 on) fires too.
				waitFor(t, ctx, "a container line", `!!document.querySelector('#live li.ll[data-case="container"]')`)
			}
			type line struct {
				Case string
				Line int
				Text string
			}
			lines := eval[[]line](t, ctx, `[...document.querySelectorAll('#live [data-seq]')].filter(li => li.dataset.case).map(li => ({Case: li.dataset.case, Line: Number(li.dataset.line || 0), Text: li.textContent}))`)
			if len(lines) < 5 {
				t.Fatalf("%d lines with a case in the pane", len(lines))
			}
			srcLines := strings.Split(src, "\n")
			for _, l := range lines {
				if !keys[l.Case] {
					t.Errorf("a %s line at %s, which has no such case: %q", l.Case, tag, l.Text)
					continue
				}
				if l.Line == 0 {
					t.Errorf("a %s line without its source line: %q", l.Case, l.Text)
					continue
				}
				if l.Line > len(srcLines) || !logCallRE.MatchString(srcLines[l.Line-1]) {
					t.Errorf("a %s line points at %s:%d, which is no log call there: %q", l.Case, r.Function.File, l.Line, srcLines[min(l.Line, len(srcLines))-1])
				}
			}
			if tag == "v1.20.0" {
				// Item 12: a symbol a note names that this tag does not have
				// looks like what it is, not like plain text.
				type sym struct {
					N                     int
					Deco, After, Color, P string
				}
				s := eval[sym](t, ctx, `(() => { const e = document.querySelector('.sym-unresolved'); if (!e) return {N: 0};
					const cs = getComputedStyle(e);
					return {N: document.querySelectorAll('.sym-unresolved').length, Deco: cs.textDecorationStyle + ' ' + cs.textDecorationLine,
						After: getComputedStyle(e, '::after').content, Color: cs.color, P: getComputedStyle(e.parentElement).color}; })()`)
				if s.N == 0 || s.Deco != "dotted underline" || !strings.Contains(s.After, "not at this tag") || s.Color == s.P {
					t.Errorf("unresolved symbols at v1.20.0: %+v; want some, dotted, marked \"(not at this tag)\", in another colour than the text", s)
				}
			}
			// Item 12: the demo's first screen shows the loop at work: its
			// lines without a case (there are some) are hidden at first.
			waitFor(t, ctx, "a demo line without a case", `!!document.querySelector('#live li.ll-none')`)
			if !eval[bool](t, ctx, `document.querySelector('#live [data-hide-none]').checked && [...document.querySelectorAll('#live li.ll-none')].every(li => li.offsetParent === null)`) {
				t.Error("the demo shows its lines without a case at first")
			}
			note := eval[string](t, ctx, `document.querySelector('#live .live-version').hidden ? '' : document.querySelector('#live .live-version').textContent`)
			if note != "" {
				t.Errorf("the pane says the feed reads another tag: %q", note)
			}
			screenshot(t, ctx, "demo-at-"+tag+".png", false)

			// Clicking a liveness line selects its case and shows its line.
			want := eval[int](t, ctx, `(() => { const li = [...document.querySelectorAll('#live li.ll[data-case="liveness"]')].pop(); li.click(); return Number(li.dataset.line); })()`)
			waitFor(t, ctx, "the liveness case selected at its log line",
				fmt.Sprintf(`document.querySelector('section.case.selected')?.dataset.case === 'liveness' && location.hash === '#L%d' && !!document.querySelector('#L%d')`, want, want))
		})
	}
	watch.check(t)
}

// TestBrowserSelectedCaseLinesArrive (issue 12): a reader who selected a
// case sees its new lines arrive. At its newest line, the pane moves on to
// each new one and keeps it fully on view; stepped back to an older one,
// the pane holds still there while the case's new lines still join the
// list. Before, selecting a case paused the pane and its new lines waited
// behind "N new ↓ resume".
func TestBrowserSelectedCaseLinesArrive(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	for _, v := range []viewport{viewports[0], viewports[1], viewports[2]} {
		t.Run(v.name, func(t *testing.T) {
			openDemo(t, ctx, pageURL, v, false, "pleg", 3)
			eval[bool](t, ctx, `(document.querySelector('[data-case-select="pleg"]').scrollIntoView({block: 'center', behavior: 'instant'}), document.querySelector('[data-case-select="pleg"]').click(), true)`)
			waitFor(t, ctx, "a current pleg line", `!!document.querySelector('#live li.ll.cur[data-case="pleg"]')`)
			first := eval[int](t, ctx, `document.getElementById('live').livePane.curSeq`)
			for i, seen := 0, first; i < 2; i++ {
				waitFor(t, ctx, fmt.Sprintf("pleg line %d after the one at selection in the pane, current", i+1),
					fmt.Sprintf(`(() => { const ls = [...document.querySelectorAll('#live li.ll[data-case="pleg"]')]; const last = ls[ls.length - 1];
						return Number(last.dataset.seq) > %d && last.classList.contains('cur') })()`, seen))
				settle(t, ctx)
				if why := eval[string](t, ctx, lineInView+`(document.querySelector('#live li.ll.cur'))`); why != "" {
					t.Fatalf("the new pleg line is not fully on view: %s", why)
				}
				seen = eval[int](t, ctx, `document.getElementById('live').livePane.curSeq`)
			}
			if !eval[bool](t, ctx, `document.getElementById('live').livePane.paused && /^\d+ new ↓ resume$/.test(document.querySelector('#live .live-more').textContent)`) {
				t.Error("the pane at a selected case's line is not paused with \"N new ↓ resume\"")
			}
			// Stepped back: the pane holds there; new pleg lines still join.
			eval[bool](t, ctx, `(document.querySelector('#live .live-prev').click(), true)`)
			at := eval[int](t, ctx, `document.getElementById('live').livePane.curSeq`)
			newest := eval[int](t, ctx, `Number([...document.querySelectorAll('#live li.ll[data-case="pleg"]')].pop().dataset.seq)`)
			waitFor(t, ctx, "a newer pleg line in the list", fmt.Sprintf(`Number([...document.querySelectorAll('#live li.ll[data-case="pleg"]')].pop().dataset.seq) > %d`, newest))
			if cur := eval[int](t, ctx, `document.getElementById('live').livePane.curSeq`); cur != at {
				t.Errorf("stepped back to line %d, the pane moved on to %d", at, cur)
			}
			if why := eval[string](t, ctx, lineInView+`(document.querySelector('#live li.ll.cur'))`); why != "" {
				t.Errorf("the stepped-to line left the view as lines arrived: %s", why)
			}
			screenshot(t, ctx, "selected-lines-arrive-"+v.name+".png", false)
		})
	}
	watch.check(t)
}

// onView says why an element is not fully on view to a reader, or "" when
// it is: inside the window, above the live drawer (narrow windows), and
// under nothing else (a sticky header, a sticky code block): its corners
// and middle hit-test to itself.
const onView = `((e) => {
	if (!e) return 'no such element';
	const r = e.getBoundingClientRect();
	const live = document.getElementById('live');
	let bottom = innerHeight;
	if (live && getComputedStyle(live).position === 'fixed') bottom = Math.min(bottom, live.getBoundingClientRect().top);
	const at = '[' + Math.round(r.top) + ',' + Math.round(r.bottom) + '] of [0,' + Math.round(bottom) + ']';
	if (r.height === 0) return 'not displayed';
	if (r.top < -1 || r.bottom > bottom + 1) return 'outside the view: ' + at;
	for (const [x, y] of [[r.left + 8, r.top + 2], [r.left + Math.min(r.width / 2, 200), r.top + r.height / 2], [r.left + 8, r.bottom - 2]]) {
		const hit = document.elementFromPoint(x, y);
		if (!hit || !(e.contains(hit) || hit.contains(e))) return 'covered at (' + Math.round(x) + ',' + Math.round(y) + ') by ' + (hit ? hit.tagName + '.' + hit.className : 'nothing') + ': ' + at;
	}
	return '';
})`

// TestBrowserScrollTargets (issue 12): what the page scrolls to, a reader
// sees whole. A log line of a probe case, logged in the helper it calls
// (handleProbeSync), clicked in the pane: its source line is fully on view
// and near the middle of the reading (not cut at the top edge). A case
// selected by the keyboard (j) or a link (#case-pleg): its heading is on
// view, not under the drawer or a sticky block. At every width.
func TestBrowserScrollTargets(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	for _, v := range viewports {
		for _, dark := range []bool{false, true} {
			name := v.name + "-" + themeName(dark)
			t.Run(name, func(t *testing.T) {
				openDemo(t, ctx, pageURL, v, dark, "liveness", 1)
				eval[bool](t, ctx, `(() => { const b = document.querySelector('#live .live-toggle'); if (b.getAttribute('aria-expanded') === 'false') b.click(); return true })()`)
				if !v.mobile && v.w < 1200 {
					// The drawer's rows are for lines: the demo's note is the
					// banner's title, not a row of its own.
					if h := eval[float64](t, ctx, `document.querySelector('#live .live-note').getBoundingClientRect().height`); h > 1 {
						t.Errorf("the demo note takes %.0f px of the drawer", h)
					}
					if !eval[bool](t, ctx, `document.querySelector('#live .live-banner').title.includes('simulated')`) {
						t.Error("the DEMO FEED banner does not say what the demo is")
					}
				}
				line := eval[int](t, ctx, `(() => { const li = [...document.querySelectorAll('#live li.ll[data-case="liveness"][data-line]')].pop(); li.scrollIntoView({block: 'nearest'}); li.click(); return Number(li.dataset.line); })()`)
				if eval[bool](t, ctx, fmt.Sprintf(`!!document.getElementById('L%d').closest('section.case')`, line)) {
					t.Fatalf("liveness logs at L%d, inside a case: want a helper's line for this check", line)
				}
				settle(t, ctx)
				if why := eval[string](t, ctx, onView+fmt.Sprintf(`(document.getElementById('L%d'))`, line)); why != "" {
					t.Errorf("L%d after clicking its log line: %s", line, why)
				}
				// Near the middle of what the reader sees of the reading.
				off := eval[float64](t, ctx, fmt.Sprintf(`(() => { const r = document.getElementById('L%d').getBoundingClientRect(), live = document.getElementById('live');
					const bottom = getComputedStyle(live).position === 'fixed' ? live.getBoundingClientRect().top : innerHeight;
					return Math.abs((r.top + r.bottom) / 2 - bottom / 2) / bottom; })()`, line))
				if off > 0.2 {
					t.Errorf("L%d is %.0f%% of the view away from its middle", line, off*100)
				}
				screenshot(t, ctx, "helper-line-"+name+".png", false)
				// A line inside a case (on one column, in its sticky code block).
				line = eval[int](t, ctx, `(() => { const li = [...document.querySelectorAll('#live li.ll[data-case="pleg"][data-line]')].pop(); li.scrollIntoView({block: 'nearest'}); li.click(); return Number(li.dataset.line); })()`)
				settle(t, ctx)
				if why := eval[string](t, ctx, onView+fmt.Sprintf(`(document.getElementById('L%d'))`, line)); why != "" {
					t.Errorf("L%d (pleg) after clicking its log line: %s", line, why)
				}
				screenshot(t, ctx, "case-line-"+name+".png", false)

				// j from the top selects the first case; again, the second.
				if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
					t.Fatal(err)
				}
				eval[bool](t, ctx, `(() => { const b = document.querySelector('#live .live-toggle'); if (b.getAttribute('aria-expanded') === 'false') b.click(); return true })()`)
				for i := 0; i < 3; i++ {
					if err := chromedp.Do(ctx, chromedp.KeyEvent("j")); err != nil {
						t.Fatal(err)
					}
					settle(t, ctx)
					key := eval[string](t, ctx, `document.querySelector('section.case.selected')?.dataset.case || ''`)
					if why := eval[string](t, ctx, onView+`(document.querySelector('section.case.selected > .case-head'))`); why != "" {
						t.Errorf("j (%d) selected %q: its heading is not on view: %s", i+1, key, why)
					}
				}
				screenshot(t, ctx, "case-by-j-"+name+".png", false)
				// A case's chip clicked low in the window: on a narrow one the
				// drawer opens to show its lines, and must not cover it.
				if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
					t.Fatal(err)
				}
				eval[bool](t, ctx, `(() => { const c = document.querySelector('[data-case-select="sync"]'); c.scrollIntoView({block: 'start', behavior: 'instant'}); scrollBy(0, -innerHeight * 0.75); c.click(); return true })()`)
				settle(t, ctx)
				if why := eval[string](t, ctx, onView+`(document.querySelector('#case-sync > .case-head'))`); why != "" {
					t.Errorf("the sync chip clicked low in the window: its heading is not on view: %s", why)
				}
				if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"#case-pleg"), chromedp.WaitReady("section.case")); err != nil {
					t.Fatal(err)
				}
				settle(t, ctx)
				if why := eval[string](t, ctx, onView+`(document.querySelector('#case-pleg > .case-head'))`); why != "" {
					t.Errorf("#case-pleg: its heading is not on view: %s", why)
				}
			})
		}
	}
	watch.check(t)
}
