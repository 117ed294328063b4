package server

import (
	"context"
	"net/url"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestBrowserRosterGone: a student in no room reads "no room" on the
// instructor's roster while their class page says hello; seen from 4
// minutes later (the instructor page's clock moved on), "gone".
func TestBrowserRosterGone(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	_, ts := newRoomServer(t, t.TempDir(), nil)
	class, key := createClass(t, ts, url.Values{"name": {"Kubelet internals"}, "tag": {fixture.Tag}})
	if err := chromedp.Do(ctx, enableNetwork, chromedp.Navigate(ts.URL+"/classes/"+class), chromedp.WaitReady(`[data-class-start]`)); err != nil {
		t.Fatal(err)
	}
	typeInto(t, ctx, `[data-class-name]`, "Dee")
	eval[bool](t, ctx, `(document.querySelector('[data-class-name]').dispatchEvent(new Event('change')), true)`)
	waitFor(t, ctx, "Dee's name said", `document.body.textContent.includes('Your instructor sees you as Dee.')`)

	roster := func(later bool) string {
		ictx, cancel := chromedp.NewContext(ctx, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		shift := chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
			if !later {
				return nil
			}
			_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument,
				page.AddScriptToEvaluateOnNewDocumentParams{Source: `{ const now = Date.now; Date.now = () => now() + 4 * 60 * 1000; }`})
			return err
		})
		if err := chromedp.Do(ictx, enableNetwork, shift, chromedp.Navigate(ts.URL+"/classes/"+class+"?k="+key), chromedp.WaitReady(`[data-class-roster]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ictx, "Dee on the roster", `!!document.querySelector('[data-class-roster] li[data-student="Dee"]')`)
		return eval[string](t, ictx, `(() => { const li = document.querySelector('[data-class-roster] li[data-student="Dee"]');
			return li.className + ' | ' + li.textContent + ' | ' + document.querySelector('[data-class-roster-count]').textContent + ' | ' + (document.querySelector('[data-class-absent]').hidden ? '' : document.querySelector('[data-class-absent]').textContent) })()`)
	}
	if got, want := roster(false), "out | Deeno room | (1: 0 in 0 rooms, 1 in none) | In no room now (1): Dee"; got != want {
		t.Errorf("now: %q, want %q", got, want)
	}
	if got := roster(true); got != "out gone | Deegone (last seen 4 min ago) | (1: 0 in 0 rooms, 0 in none, 1 gone) | " {
		t.Errorf("4 minutes on: %q, want Dee gone, not among those in no room", got)
	}
}
