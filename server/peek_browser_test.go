package server

// Definitions opened in place (static/peek.js, site/def.go), in Chromium:
// a call through an interface opens its implementation, nested peeks carry
// a breadcrumb, Esc closes the innermost and gives the focus back, the
// keyboard alone opens one, and an identifier the module does not define
// is no control. Screenshots of a peek at 1440×900 and 390×844.

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/syncloop/syncloop/extractor"
)

func TestBrowserPeek(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	s := newRealServer(t)
	tag := s.cfg.DefaultTag
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + tag + "/"
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
		t.Fatal(err)
	}
	const add = `pkg/kubelet.SyncHandler.HandlePodAdditions`
	ctl := fmt.Sprintf(`#case-config button[data-def=%q]`, add)

	t.Run("a call through an interface opens its implementation", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(ctl), chromedp.Click(ctl)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the peek of HandlePodAdditions", `!!document.querySelector('[data-peek="`+add+`"] .peek-def + .peek-impls')`)
		got := eval[string](t, ctx, `document.querySelector('[data-peek="`+add+`"]').innerText`)
		for _, want := range []string{"SyncHandler.HandlePodAdditions", "interface method", "Implemented in the module at " + tag, "(*Kubelet).HandlePodAdditions", "func (kl *Kubelet) HandlePodAdditions("} {
			if !strings.Contains(got, want) {
				t.Errorf("the peek lacks %q:\n%.600s", want, got)
			}
		}
		// Under its line: the peek follows the control's line.
		if !eval[bool](t, ctx, `(() => { const c = document.querySelector('`+jsQuote(ctl)+`'); return c.closest('.line').nextElementSibling?.dataset.peek === '`+add+`' })()`) {
			t.Error("the peek is not right under the control's line")
		}
		if eval[string](t, ctx, `document.querySelector('`+jsQuote(ctl)+`').getAttribute('aria-expanded')`) != "true" {
			t.Error("the control does not say it is expanded")
		}
		// Line numbers link upstream at the tag.
		href := eval[string](t, ctx, `document.querySelector('[data-peek="`+add+`"] .peek-def:last-of-type a.ln').href`)
		if !strings.HasPrefix(href, "https://github.com/kubernetes/kubernetes/blob/"+tag+"/pkg/kubelet/kubelet.go#L") {
			t.Errorf("a line number links to %s", href)
		}
		screenshot(t, ctx, "peek-1440.png", false)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#case-config .written-by`)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "written-by-1440.png", false)
	})

	t.Run("nested peeks have a breadcrumb; Esc closes the innermost", func(t *testing.T) {
		const upd = `pkg/kubelet.PodWorkers.UpdatePod`
		inner := fmt.Sprintf(`[data-peek=%q] button[data-def=%q]`, add, upd)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(inner), chromedp.Click(inner)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the nested peek of UpdatePod", `!!document.querySelector('[data-peek="`+add+`"] [data-peek="`+upd+`"] .peek-impls')`)
		crumbs := eval[string](t, ctx, `document.querySelector('[data-peek="`+upd+`"] .peek-crumbs').textContent`)
		if crumbs != "SyncHandler.HandlePodAdditions › PodWorkers.UpdatePod" {
			t.Errorf("breadcrumb %q", crumbs)
		}
		// Third click: the pod worker's loop, from inside UpdatePod.
		const loop = `pkg/kubelet.(*podWorkers).podWorkerLoop`
		third := fmt.Sprintf(`[data-peek=%q] button[data-def=%q]`, upd, loop)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(third), chromedp.Click(third)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the pod worker's loop", `!!document.querySelector('[data-peek="`+loop+`"] .peek-def')`)
		screenshot(t, ctx, "peek-nested-1440.png", false)
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the loop's peek closed", `!document.querySelector('[data-peek="`+loop+`"]')`)
		if !eval[bool](t, ctx, `!!document.querySelector('[data-peek="`+upd+`"]') && document.activeElement?.dataset.def === '`+loop+`'`) {
			t.Error("Esc did not close only the innermost peek and give the focus back to its control")
		}
		for _, sym := range []string{upd, add} {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, sym+" closed", `!document.querySelector('[data-peek="`+sym+`"]')`)
		}
	})

	t.Run("keyboard: focus a control and press Enter", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Focus(ctl)); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Enter)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the peek opened by Enter", `!!document.querySelector('[data-peek="`+add+`"] .peek-def')`)
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "closed by Esc", `!document.querySelector('[data-peek]') && document.activeElement?.dataset.def === '`+add+`'`)
	})

	t.Run("a symbol the module does not define stays plain text", func(t *testing.T) {
		// klog (a dependency) and the builtin len are written in the loop,
		// and neither is a control; every control names a module symbol.
		n := eval[int](t, ctx, `[...document.querySelectorAll('#function button[data-def]')].filter(b => !b.dataset.def.startsWith('pkg/') && !b.dataset.def.startsWith('cmd/')).length`)
		if n != 0 {
			t.Errorf("%d controls name a symbol outside the module", n)
		}
		if !eval[bool](t, ctx, `[...document.querySelectorAll('#function .cl')].some(l => /klog\.V\(/.test(l.textContent) || /klog\./.test(l.textContent))`) {
			t.Fatal("no klog call in the function: pick another non-module name")
		}
		if eval[bool](t, ctx, `[...document.querySelectorAll('#function button[data-def]')].some(b => /^(klog|V|InfoS|ErrorS|len)$/.test(b.textContent))`) {
			t.Error("a klog call or a builtin is a control")
		}
	})

	t.Run("axe with a peek open", func(t *testing.T) {
		axe := axeSource(t)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(ctl), chromedp.Click(ctl)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the peek", `!!document.querySelector('[data-peek="`+add+`"] .peek-def')`)
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axe+";true")); err != nil {
			t.Fatal(err)
		}
		// The peek and the margin's "Written by" only: the rest of the page
		// is TestBrowserAccessibility's.
		found := eval[[]string](t, ctx, `axe.run({include: [['[data-peek]'], ['#case-config .written-by']]}, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
			.then(res => res.passes.length === 0 ? ['checked nothing: the selectors match no element'] : res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
			.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')))`)
		for _, f := range found {
			t.Errorf("axe: %s", f)
		}
		if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("390x844", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(ctl), chromedp.Click(ctl)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the peek", `!!document.querySelector('[data-peek="`+add+`"] .peek-def')`)
		if w := eval[int](t, ctx, `document.documentElement.scrollWidth`); w > 390 {
			t.Errorf("the page is %dpx wide with a peek open at 390", w)
		}
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`[data-peek] .peek-head`)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "peek-390.png", false)
	})
	watch.check(t)
	_ = extractor.DefaultTag
}

// jsQuote makes a CSS selector safe inside a single-quoted JS string.
func jsQuote(s string) string { return strings.ReplaceAll(s, `'`, `\'`) }
