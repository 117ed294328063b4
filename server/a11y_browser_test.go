package server

// Accessibility: axe-core (installed from npm by .ci/run into .ci/node,
// never committed) runs in the page at a wide and a phone window, light
// and dark, with a case selected so that dimmed log lines are on view.
// WCAG 2.2 AA rules; serious and critical violations fail. Keyboard: a skip
// link leads to the function, log lines take focus and Enter shows their
// case.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// axeSource is axe-core's script, or the test skips (fails under CI=true).
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("SYNCLOOP_AXE")
	if path == "" {
		path = filepath.Join("..", ".ci", "node", "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		msg := fmt.Sprintf("axe-core not found at %s: npm install --no-save --prefix .ci/node axe-core@4.14.1 (.ci/run does)", path)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return string(b)
}

func TestBrowserAccessibility(t *testing.T) {
	t.Parallel()
	axe := axeSource(t)
	ts, r := demoSite(t)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	for _, v := range []viewport{viewports[0], viewports[2]} {
		for _, dark := range []bool{false, true} {
			name := v.name + "-" + themeName(dark)
			t.Run(name, func(t *testing.T) {
				// A tab (and a 90 s budget) each: axe over 2,000 log lines is slow under -race.
				ctx := newBrowser(t)
				watch := watchPage(t, ctx, ts)
				defer watch.check(t)
				openDemo(t, ctx, pageURL, v, dark, "pleg", 3)
				eval[bool](t, ctx, `(document.querySelector('[data-case-select="pleg"]').click(), true)`)
				waitFor(t, ctx, "pleg lines highlighted", `document.querySelectorAll('#live li.ll.sel').length > 0`)
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axe+";true")); err != nil {
					t.Fatal(err)
				}
				found := eval[[]string](t, ctx, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
					.then(res => res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
					.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' — ' + (n.failureSummary || '').split('\n').slice(1, 2).join('')).join(' | ')))`)
				for _, f := range found {
					t.Errorf("axe: %s", f)
				}
				screenshot(t, ctx, "a11y-"+name+".png", false)
			})
		}
	}
}

// TestBrowserKeyboard: the first Tab reaches a skip link to the function; a
// log line takes focus and Enter shows its case; headings nest (a note's
// "Fire it" sits under its case's title).
func TestBrowserKeyboard(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	{
		openDemo(t, ctx, pageURL, viewports[0], false, "sync", 2)
		// The first Tab reaches the skip link; Enter on it moves to the function.
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Tab)); err != nil {
			t.Fatal(err)
		}
		if got := eval[string](t, ctx, `document.activeElement.className + ':' + document.activeElement.getAttribute('href')`); got != "skip:#function" {
			t.Fatalf("the first Tab lands on %q, want the skip link to #function", got)
		}
		// A log line takes focus, and Enter shows its case.
		eval[bool](t, ctx, `(() => { const li = [...document.querySelectorAll('#live li.ll[data-case="sync"]')].pop(); li.focus(); return document.activeElement === li })()`)
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "Enter on a sync line selects sync", `document.querySelector('section.case.selected')?.dataset.case === 'sync' && location.hash.length > 1`)
		// Headings: "Fire it" and "Expect" sit under their case's title,
		// not beside it.
		bad := eval[string](t, ctx, `(() => { const hs = [...document.querySelectorAll('main h1, main h2, main h3, main h4, main h5, main h6')];
			let prev = 0; for (const h of hs) { const n = Number(h.tagName[1]); if (n > prev + 1) return h.tagName + ' ' + h.textContent.trim().slice(0, 40) + ' after h' + prev; prev = n; }
			const note = document.querySelector('section.case .note-title'); const inner = document.querySelector('section.case .note h1, section.case .note h2, section.case .note h3');
			return inner && note ? 'a note heading (' + inner.textContent.trim() + ') at the level of the case title' : ''; })()`)
		if bad != "" && !strings.Contains(bad, "undefined") {
			t.Errorf("heading order: %s", bad)
		}
	}
	watch.check(t)
}
