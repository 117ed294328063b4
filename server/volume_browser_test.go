package server

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/extractor/volume"
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
	fsys := extractortest.FS(t, r.Tag)
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Getenv: func(string) string { return "" },
		Load: (&fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}).Load,
		LoadVolume: func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
			return volume.Derive(fsys, o.Tag)
		},
		DemoPeriod: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	for _, v := range []viewport{viewports[0], viewports[2]} {
		for _, dark := range []bool{false, true} {
			name := v.name + "-" + themeName(dark)
			t.Run(name, func(t *testing.T) {
				ctx := newBrowser(t)
				watch := watchPage(t, ctx, ts)
				defer watch.check(t)
				setView(t, ctx, v, dark)
				if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/volume-manager")); err != nil {
					t.Fatal(err)
				}
				// The first request may answer the page that reloads while
				// the reading is derived.
				waitFor(t, ctx, "the phases", `document.querySelectorAll('section.part').length === 6 && !!document.querySelector('#part-mountOrAttachVolumes .direction-add-missing')`)
				if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
					t.Errorf("the page scrolls sideways by %d px", w)
				}
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axe+";true")); err != nil {
					t.Fatal(err)
				}
				found := eval[[]string](t, ctx, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
					.then(res => res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
					.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' — ' + (n.failureSummary || '').split('\n').slice(1, 2).join('')).join(' | ')))`)
				for _, f := range found {
					t.Errorf("axe: %s", f)
				}
				screenshot(t, ctx, "volume-manager-"+name+".png", false)
			})
		}
	}
}
