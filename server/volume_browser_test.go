package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestBrowserVolumePage: the second reading's page at the default tag, at
// a wide and a phone window, light and dark: every phase's section, no
// horizontal scroll, and axe's WCAG 2.2 AA rules (serious and critical
// violations fail). Screenshots are kept as artifacts.
func TestBrowserVolumePage(t *testing.T) {
	t.Parallel()
	axe := axeSource(t)
	r := realReading(t)
	extractortest.Prefetch(diff.MinorTags(r.Tag)...) // the history reads every minor
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Getenv: func(string) string { return "" },
		Load: (&fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}).Load,
		LoadVolume: func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
			return volume.Derive(extractortest.FS(t, o.Tag), o.Tag)
		},
		DemoPeriod: time.Hour, NewTagsPerHour: 100}) // the history reads 18 tags new to this server
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	// The reading is derived on the first request: have it before the
	// windows open, so that none waits out its first derivation.
	testwait.For(t, 2*time.Minute, "the reading at "+r.Tag, func() bool {
		resp, err := http.Get(ts.URL + "/k8s/" + r.Tag + "/volume-manager")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	for _, v := range []viewport{viewports[0], viewports[2]} {
		for _, dark := range []bool{false, true} {
			name := v.name + "-" + themeName(dark)
			t.Run(name, func(t *testing.T) {
				ctx := newBrowser(t)
				watch := watchPage(t, ctx, ts)
				defer watch.check(t)
				setView(t, ctx, v, dark)
				if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/volume-manager#part-unmountVolumes")); err != nil {
					t.Fatal(err)
				}
				// The first request may answer the page that reloads while
				// the reading is derived.
				waitFor(t, ctx, "the phases", `document.querySelectorAll('section.part').length === 6 && !!document.querySelector('#part-mountOrAttachVolumes .direction-add-missing')`)
				if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
					t.Errorf("the page scrolls sideways by %d px", w)
				}
				checkNotesBeside(t, ctx, v.mobile)
				screenshot(t, ctx, "volume-manager-"+name+".png", false)
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, 0); true`)); err != nil {
					t.Fatal(err)
				}
				screenshot(t, ctx, "volume-manager-top-"+name+".png", false)
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('entry').scrollIntoView(); true`)); err != nil {
					t.Fatal(err)
				}
				screenshot(t, ctx, "volume-manager-entry-"+name+".png", false)
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById('set-ActualStateOfWorld').scrollIntoView(); true`)); err != nil {
					t.Fatal(err)
				}
				screenshot(t, ctx, "volume-manager-sets-"+name+".png", false)
				openPeek(t, ctx)
				volumeAxe(t, ctx, axe) // with a peek open
				screenshot(t, ctx, "volume-manager-peek-"+name+".png", false)
			})
		}
	}
	// Compare and history across the move of the entry (reconciler.go →
	// reconciler_new.go, reconcile → reconcileNew at v1.27.0).
	for _, v := range []viewport{viewports[0], viewports[2]} {
		t.Run("compare-history-"+v.name, func(t *testing.T) {
			ctx := newBrowser(t)
			watch := watchPage(t, ctx, ts)
			defer watch.check(t)
			setView(t, ctx, v, v.mobile)
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/volume-manager/compare/v1.26.0...v1.27.0")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "the compare", `!!document.querySelector('#part-entry .unit-says')`)
			says := eval[string](t, ctx, `document.querySelector('#part-entry .unit-says').innerText`)
			if !strings.Contains(says, "moved from pkg/kubelet/volumemanager/reconciler/reconciler.go to pkg/kubelet/volumemanager/reconciler/reconciler_new.go") || !strings.Contains(says, "renamed from reconcile to reconcileNew") {
				t.Errorf("the compare's entry says %q", says)
			}
			table := map[bool]string{false: "sbs", true: "uni"}[v.mobile]
			if !eval[bool](t, ctx, `(() => { const t = document.querySelector('#part-entry table.`+table+`'); return !!t && t.getBoundingClientRect().height > 0 })()`) {
				t.Errorf("the entry's %s table is not shown at %s", table, v.name)
			}
			if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
				t.Errorf("the compare scrolls sideways by %d px", w)
			}
			volumeAxe(t, ctx, axe)
			screenshot(t, ctx, "volume-compare-"+v.name+"-"+themeName(v.mobile)+".png", false)
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/volume-manager/history/entry")); err != nil {
				t.Fatal(err)
			}
			// 18 minors are read on the first visit: the page reloads until then.
			testwait.For(t, 3*time.Minute, "the history", func() bool {
				ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.querySelectorAll('table.history-table tbody tr').length >= 18`))
				return err == nil && ok
			})
			row := eval[string](t, ctx, `[...document.querySelectorAll('table.history-table tbody tr')].find(r => r.querySelector('th').innerText === 'v1.27.0').innerText`)
			if !strings.Contains(row, "reconcileNew") || !strings.Contains(row, "reconciler_new.go") || !strings.Contains(row, "changed: moved, renamed, gate, body") {
				t.Errorf("the history's v1.27.0 row: %q", row)
			}
			if href := eval[string](t, ctx, `[...document.querySelectorAll('table.history-table tbody tr')].find(r => r.querySelector('th').innerText === 'v1.31.0').querySelector('td a').getAttribute('href')`); href != "/k8s/volume-manager/compare/v1.30.0...v1.31.0#part-entry" {
				t.Errorf("the v1.31.0 row links %q", href)
			}
			volumeAxe(t, ctx, axe)
			screenshot(t, ctx, "volume-history-"+v.name+"-"+themeName(v.mobile)+".png", false)
		})
	}
}

// volumeAxe runs axe's WCAG 2.2 AA rules on the page: serious and
// critical violations fail.
func volumeAxe(t *testing.T, ctx context.Context, axe string) {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axe+";true")); err != nil {
		t.Fatal(err)
	}
	found := eval[[]string](t, ctx, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
		.then(res => res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
		.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' — ' + (n.failureSummary || '').split('\n').slice(1, 2).join('')).join(' | ')))`)
	for _, f := range found {
		t.Errorf("axe: %s", f)
	}
}

// checkNotesBeside: every phase's note is shown, beside its source on a
// wide window (left of it, side by side), above it on a phone.
func checkNotesBeside(t *testing.T, ctx context.Context, mobile bool) {
	t.Helper()
	bad := eval[[]string](t, ctx, `[...document.querySelectorAll('section.vm-unit.part, section.vm-unit.entry')].flatMap(s => {
		const note = s.querySelector('.margin .prose.note'), code = s.querySelector('.unit-code pre');
		if (!note || !code) return [s.id + ': no note or no code'];
		const n = note.getBoundingClientRect(), c = code.getBoundingClientRect();
		if (n.height < 40 || n.width < 150) return [s.id + ': the note is ' + n.width + 'x' + n.height];
		const beside = n.right <= c.left + 1 && n.top < c.bottom && c.top < n.bottom;
		const above = n.bottom <= c.top + 1;
		return (`+map[bool]string{false: "beside", true: "above"}[mobile]+`) ? [] : [s.id + ': note ' + JSON.stringify(n) + ' code ' + JSON.stringify(c)];
	})`)
	for _, b := range bad {
		t.Errorf("note not %s its phase: %s", map[bool]string{false: "beside", true: "above"}[mobile], b)
	}
}

// openPeek opens the definition of a set's method from unmountVolumes'
// source: the interface method with the cache's implementation under it,
// which Escape closes.
func openPeek(t *testing.T, ctx context.Context) {
	t.Helper()
	const sel = `#part-unmountVolumes button[data-def$="ActualStateOfWorld.GetAllMountedVolumes"]`
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(sel), chromedp.Click(sel)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the peek", `!!document.querySelector('#part-unmountVolumes .peek .peek-impls') && document.querySelectorAll('#part-unmountVolumes .peek .peek-def').length === 2`)
	if got := eval[string](t, ctx, `document.querySelector('#part-unmountVolumes .peek .peek-def:last-child .peek-name').textContent`); got != "(*actualStateOfWorld).GetAllMountedVolumes" {
		t.Errorf("the peek's implementation is %q", got)
	}
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#part-unmountVolumes .peek`)); err != nil {
		t.Fatal(err)
	}
}
