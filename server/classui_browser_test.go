package server

// Browser tests for what a class meets on the page itself (issue 22): a
// follower who reloads keeps following, printing fits on paper, the header's
// tags scale, the floating pills leave the pane's lines readable, Back stays
// on the site, the hand-in is the student's.

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
)

// startRoom opens the default tag's page in ctx, starts a pair session and
// names its driver; it returns the room's id.
func startRoom(t *testing.T, ctx context.Context, ts *httptest.Server, tag, name string) string {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+tag+"/"), chromedp.WaitReady("form.pair-start button"),
		chromedp.Click("form.pair-start button")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the room", `location.pathname.startsWith('/rooms/') && !!document.getElementById('room')`)
	waitFor(t, ctx, "the driver drives", `document.querySelector('[data-room-role]').textContent.startsWith('You are driving')`)
	setRoomName(t, ctx, name)
	return eval[string](t, ctx, `document.getElementById('room').dataset.room`)
}

func setRoomName(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	eval[bool](t, ctx, `(() => { const i = document.querySelector('[data-room-name]'); i.value = `+jsString(name)+`; i.dispatchEvent(new Event('change')); return true })()`)
}

// TestBrowserFollowAfterReload: a follower who never paused, whose address
// took the driver's #case-…, still follows after a reload (the README's
// promise); one who moved on purpose still reads on their own after theirs.
func TestBrowserFollowAfterReload(t *testing.T) {
	driver := newBrowser(t)
	s := newRealServerTags(t)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	id := startRoom(t, driver, ts, s.cfg.DefaultTag, "Ann")

	viewer, cancelV := chromedp.NewContext(driver, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelV)
	watch := watchPage(t, viewer, ts)
	if err := chromedp.Do(viewer, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#room")); err != nil {
		t.Fatal(err)
	}
	setRoomName(t, viewer, "Bob")
	following := `document.querySelector('[data-room-role]').textContent === 'You follow Ann.' && document.querySelector('[data-room-paused]').hidden`
	waitFor(t, viewer, "Bob follows Ann", following)

	// Ann selects pleg: Bob's page follows, and his address says #case-pleg.
	if err := chromedp.Do(driver, chromedp.Click(`#case-pleg .case-chip`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, viewer, "Bob at pleg, by address", `location.hash === '#case-pleg' && document.getElementById('case-pleg').classList.contains('selected')`)

	for i := range 3 { // the issue saw it fail 3 times of 3
		if err := chromedp.Do(viewer, chromedp.Reload(), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "still following after reload "+itoa(i+1), following)
		key := []string{"startup", "sync", "housekeeping"}[i]
		if err := chromedp.Do(driver, chromedp.Click(`#case-`+key+` .case-chip`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "the reloaded follower follows to "+key, `document.getElementById('case-`+key+`').classList.contains('selected') && location.hash === '#case-`+key+`'`)
	}

	// Bob moves on purpose: after a reload he still reads on his own.
	eval[bool](t, viewer, `(window.dispatchEvent(new WheelEvent('wheel', {deltaY: 400})), window.scrollBy(0, 400), true)`)
	waitFor(t, viewer, "Bob paused", `!document.querySelector('[data-room-paused]').hidden`)
	if err := chromedp.Do(viewer, chromedp.Reload(), chromedp.WaitReady("#room")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, viewer, "still on his own after a reload", `!document.querySelector('[data-room-paused]').hidden && document.querySelector('[data-room-role]').textContent !== 'You follow Ann.'`)
	if err := chromedp.Do(driver, chromedp.Click(`#case-config .case-chip`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, viewer, "told where Ann is", `document.querySelector('[data-room-where]').textContent.includes('config')`)
	if eval[bool](t, viewer, `document.getElementById('case-config').classList.contains('selected')`) {
		t.Error("a follower who moved on purpose was moved by the driver after a reload")
	}
	watch.check(t)
}
