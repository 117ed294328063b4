package server

import (
	"net/http/httptest"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// TestBrowserComparePage reads v1.30.0 → v1.36.3 (the container case
// added, every case's logging gone contextual) at 1440×900, where the
// clauses sit side by side, and at 390×844, where they are one unified
// column; and reaches it from the reading page's "compare with…" form.
func TestBrowserComparePage(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := realServer(t, "v1.30.0", "v1.36.3")
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	watch := watchPage(t, ctx, ts)
	if err := chromedp.Do(ctx, enableNetwork); err != nil {
		t.Fatal(err)
	}

	// From the reading page: the form leads to the compare.
	if err := chromedp.Do(ctx,
		chromedp.Navigate(ts.URL+"/k8s/v1.36.3/"), chromedp.WaitReady("form.compare-with"),
		chromedp.SetValue("#compare-to", "v1.30.0"), chromedp.Submit("#compare-to"),
	); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the compare page", `location.pathname === '/k8s/compare/v1.36.3...v1.30.0' && !!document.querySelector('section.cmp-case')`)
	screenshot(t, ctx, "compare-from-reading-form.png", false)

	page := ts.URL + "/k8s/compare/v1.30.0...v1.36.3"
	// noOverflow: nothing makes the page wider than the window.
	const noOverflow = `document.documentElement.scrollWidth <= window.innerWidth`
	// shown says which layout of a case's clause is on screen.
	shown := func(key string) string {
		return eval[string](t, ctx, `(() => {
			const c = document.querySelector('#case-`+key+` .code-wrap');
			const vis = s => getComputedStyle(c.querySelector(s)).display !== 'none';
			return (vis('.sbs') ? 'side-by-side' : '') + (vis('.uni') ? 'unified' : '') })()`)
	}

	t.Run("wide", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(page), chromedp.WaitReady("section.cmp-case")); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "compare-wide-top.png", false)
		if got := shown("config"); got != "side-by-side" {
			t.Errorf("config at 1440px: %s", got)
		}
		// The two tags' lines sit in two columns of about equal width.
		cols := eval[[]float64](t, ctx, `(() => {
			const r = document.querySelector('#case-config .sbs tr.chg');
			const [a, b] = [...r.querySelectorAll('td.src')].map(e => e.getBoundingClientRect());
			return [a.left, a.width, b.left, b.width] })()`)
		if !(cols[0]+cols[1] <= cols[2]+1 && cols[1] > 400 && cols[3] > 400) {
			t.Errorf("side-by-side columns (left, width, left, width): %v", cols)
		}
		if !eval[bool](t, ctx, noOverflow) {
			t.Error("the page is wider than the window at 1440px")
		}
		// The container case, added: all its lines on the newer side.
		if err := chromedp.Do(ctx, chromedp.Click(`a.cmp-chip[href="#case-container"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "container at the top", `location.hash === '#case-container' && Math.abs(document.querySelector('#case-container').getBoundingClientRect().top) < 40`)
		n := eval[[]int](t, ctx, `[document.querySelectorAll('#case-container .uni tr.add').length, document.querySelectorAll('#case-container .uni tbody tr:not(.add)').length]`)
		if n[0] < 5 || n[1] != 0 {
			t.Errorf("container: %d added rows, %d others", n[0], n[1])
		}
		// It has lines at one tag only: one column, not half the page empty.
		if got := shown("container"); got != "unified" {
			t.Errorf("container (added) at 1440px: %s", got)
		}
		if w := eval[float64](t, ctx, `document.querySelector('#case-container .uni tr.add td.src').getBoundingClientRect().width`); w < 1000 {
			t.Errorf("container's lines are %.0fpx wide at 1440px", w)
		}
		screenshot(t, ctx, "compare-wide-container.png", false)
		if err := chromedp.Do(ctx, chromedp.Navigate(page+"#case-config"), chromedp.WaitReady("section.cmp-case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "config at the top", `Math.abs(document.querySelector('#case-config').getBoundingClientRect().top) < 40`)
		screenshot(t, ctx, "compare-wide-config.png", false)
		// Chroma's classes colour the code.
		if n := eval[int](t, ctx, `document.querySelectorAll('#case-config .sbs td.src span.nx').length`); n == 0 {
			t.Error("no chroma token classes in the config case")
		}
	})

	t.Run("narrow", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(page+"#case-config"), chromedp.WaitReady("section.cmp-case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "config at the top", `Math.abs(document.querySelector('#case-config').getBoundingClientRect().top) < 40`)
		if got := shown("config"); got != "unified" {
			t.Errorf("config at 390px: %s", got)
		}
		if !eval[bool](t, ctx, noOverflow) {
			t.Errorf("the page is wider than the window at 390px: %v", eval[[]string](t, ctx, `[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > window.innerWidth + 1).slice(0, 5).map(e => e.tagName + '.' + e.className)`))
		}
		// Unified: each changed line's old text, then its new one.
		kinds := eval[string](t, ctx, `[...document.querySelectorAll('#case-config .uni tbody tr')].slice(0, 8).map(r => r.className[0]).join('')`)
		if kinds == "" || kinds[0] != 's' {
			t.Errorf("config unified rows start %q", kinds)
		}
		screenshot(t, ctx, "compare-narrow-config.png", false)
		// A line too long for the column wraps with its rest hung in, as on
		// the reading page, not at the left edge where it would read as a
		// line of its own.
		if in := eval[float64](t, ctx, hungIn); in < 18 {
			t.Errorf("a wrapped line's rest starts %.1fpx into its cell", in)
		}
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView("#case-config .uni tr.del")); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "compare-narrow-config-code.png", false)
		if err := chromedp.Do(ctx, chromedp.Navigate(page), chromedp.WaitReady("section.cmp-case")); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "compare-narrow-top.png", false)
		// The two sets: each sighting's file at a tag gets the width of the
		// page, not a quarter of it.
		if err := chromedp.Do(ctx, chromedp.Navigate(page+"#two-sets"), chromedp.WaitReady("#two-sets")); err != nil {
			t.Fatal(err)
		}
		if w := eval[float64](t, ctx, `Math.min(...[...document.querySelectorAll('#two-sets td[data-tag]')].map(td => td.getBoundingClientRect().width))`); w < 300 {
			t.Errorf("a two-set sighting's file at 390px is in a cell %.0fpx wide", w)
		}
		screenshot(t, ctx, "compare-narrow-two-sets.png", false)
	})
	t.Run("dark", func(t *testing.T) {
		if err := chromedp.Do(ctx,
			media(emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}}),
			chromedp.EmulateViewport(1440, 900), chromedp.Navigate(page+"#case-config"), chromedp.WaitReady("section.cmp-case"),
		); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "config at the top", `Math.abs(document.querySelector('#case-config').getBoundingClientRect().top) < 40`)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView("#case-config .sbs tr.chg")); err != nil {
			t.Fatal(err)
		}
		// Added and removed lines keep a dark background under light text.
		bg := eval[string](t, ctx, `getComputedStyle(document.querySelector('#case-config .sbs tr.chg td.src')).backgroundColor`)
		if bg != "rgb(45, 21, 23)" {
			t.Errorf("a removed line's background in the dark theme: %s", bg)
		}
		screenshot(t, ctx, "compare-dark.png", false)
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(page+"#case-config"), chromedp.WaitReady("section.cmp-case")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "config at the top", `Math.abs(document.querySelector('#case-config').getBoundingClientRect().top) < 40`)
		screenshot(t, ctx, "compare-dark-narrow.png", false)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView("#case-config .uni tr.del")); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "compare-dark-narrow-code.png", false)
	})
	watch.check(t)
}

// hungIn is how far into its cell (px) the second line of the first
// wrapped source line in the config case's unified table starts: the
// leftmost box of its text below the first line.
const hungIn = `(() => {
	for (const td of document.querySelectorAll('#case-config .uni td.src')) {
		const r = document.createRange();
		r.selectNodeContents(td);
		const rects = [...r.getClientRects()].filter(b => b.width > 0);
		if (rects.length === 0) continue;
		const top = Math.min(...rects.map(b => b.top));
		const rest = rects.filter(b => b.top > top + 5);
		if (rest.length > 0) return Math.min(...rest.map(b => b.left)) - td.getBoundingClientRect().left;
	}
	return -1 })()`
