package server

import (
	"net/http/httptest"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserOtherPagePausesFollowing: a follower who opens the room's
// pod_workers page on purpose (the nav's link) reads it on their own, as
// after a scroll: not pulled back to the driver's case, with "paused —
// resume following"; "Go there" takes them back.
func TestBrowserOtherPagePausesFollowing(t *testing.T) {
	t.Parallel()
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
	waitFor(t, viewer, "Bob follows Ann", `document.querySelector('[data-room-role]').textContent === 'You follow Ann.'`)
	if err := chromedp.Do(driver, chromedp.Click(`#case-pleg .case-chip`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, viewer, "Bob at pleg", `location.hash === '#case-pleg'`)

	if err := chromedp.Do(viewer, chromedp.Click(`nav.pages a[href$="/pod-workers"]`)); err != nil {
		t.Fatal(err)
	}
	// The driver's state, once it arrives, is shown, not obeyed.
	waitFor(t, viewer, "Bob on pod_workers, paused, told where Ann is",
		`location.pathname === '/rooms/`+id+`/pod-workers' && document.readyState === 'complete' && !!document.getElementById('room') &&
		!document.querySelector('[data-room-paused]').hidden && document.querySelector('[data-room-where]').textContent.includes('Ann is at the function')`)
	if err := chromedp.Do(driver, chromedp.Click(`#case-config .case-chip`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, viewer, "still on pod_workers after Ann moved", `location.pathname === '/rooms/`+id+`/pod-workers' && !document.querySelector('[data-room-paused]').hidden`)

	eval[bool](t, viewer, `(document.querySelector('[data-room-where] button').click(), true)`)
	waitFor(t, viewer, "back with Ann at config", `location.pathname === '/rooms/`+id+`' && document.getElementById('case-config')?.classList.contains('selected') && document.querySelector('[data-room-role]').textContent === 'You follow Ann.'`)
	watch.check(t)
}
