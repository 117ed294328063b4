package main

// Rooms in the cluster, in real browsers: a room made on one replica opens
// on the other; a follower on replica 2 follows a driver on replica 1
// within a second; the wheel handed on one replica is seen on the other;
// and once replica 1 is killed, the room goes on on replica 2.

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/browsertest"
)

// clusterRoom is a room with a browser on each of two replicas.
type clusterRoom struct {
	id, key      string
	ann, bob     context.Context // Ann (the driver link) on replica 1, Bob (the viewer link) on replica 2
	base1, base2 string
}

const isDriving = `document.querySelector('[data-room-role]')?.textContent.startsWith('You are driving')`

func caseSelected(c string) string {
	return `(() => { const e = document.getElementById('case-` + c + `'); if (!e || !e.classList.contains('selected')) return false;
		const r = e.getBoundingClientRect(); return r.top < innerHeight && r.bottom > 0 })()`
}

// pageWait polls a JavaScript condition in a page until it holds.
func pageWait(t *testing.T, ctx context.Context, within time.Duration, what, js string) time.Duration {
	t.Helper()
	start := time.Now()
	var err error
	if !testwait.Until(within, func() bool {
		var ok bool
		ok, err = chromedp.Run(ctx, chromedp.Evaluate[bool](js))
		return err == nil && ok
	}) {
		t.Fatalf("waiting for %s (%s): %v", what, js, err)
	}
	return time.Since(start)
}

func pageDo(t *testing.T, ctx context.Context, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, actions...); err != nil {
		t.Fatal(err)
	}
}

// setName names the reader, as the room's name box does.
func setName(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	js := `(() => { const i = document.querySelector('[data-room-name]'); i.value = '` + name + `'; i.dispatchEvent(new Event('change')); return true })()`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](js)); err != nil {
		t.Fatal(err)
	}
}

// clusterRoomOpen makes a room on base1, opens it on base2, and puts Ann
// at the wheel on base1 and Bob following on base2.
func clusterRoomOpen(t *testing.T, base1, base2 string) *clusterRoom {
	t.Helper()
	waitReading(t, base1)
	waitReading(t, base2)
	id, key := e2eCreateRoom(t, base1)
	for _, u := range []string{base2 + "/rooms/" + id, base2 + "/rooms/" + id + "?k=" + key} {
		if status, body := e2eGet(t, u); status != http.StatusOK || !strings.Contains(body, `data-room="`+id+`"`) {
			t.Fatalf("the room made on replica 1, on replica 2: GET %s: %d", u, status)
		}
	}
	ann := browsertest.New(t, browsertest.Path(t), 3*time.Minute)
	pageDo(t, ann, chromedp.Navigate(base1+"/rooms/"+id+"?k="+key), chromedp.WaitReady("#room"))
	bob, cancel := chromedp.NewContext(ann, chromedp.WithNewBrowserContext()) // the browser runs now
	t.Cleanup(cancel)
	pageWait(t, ann, 20*time.Second, "Ann drives on replica 1", isDriving)
	setName(t, ann, "Ann")
	pageDo(t, bob, chromedp.Navigate(base2+"/rooms/"+id), chromedp.WaitReady("#room"))
	setName(t, bob, "Bob")
	pageWait(t, bob, 20*time.Second, "Bob on replica 2 follows Ann on replica 1", `document.querySelector('[data-room-role]')?.textContent === 'You follow Ann.'`)
	pageWait(t, ann, 10*time.Second, "Ann on replica 1 sees Bob follow", `[...document.querySelectorAll('[data-room-people] li')].some(li => li.textContent.includes('Bob') && li.textContent.includes('follows Ann'))`)
	return &clusterRoom{id: id, key: key, ann: ann, bob: bob, base1: base1, base2: base2}
}

// followTime clicks sel in the driver's page and returns how long after
// that page took the click the follower's page met cond, on the pages' own
// clocks (browsertest.MarkEvent, MarkWhen): what is measured is the
// product's path (click handler, websocket, NATS, websocket, selection,
// scroll), not chromedp's round trips before the click (finding and
// scrolling to the node) and after the change (the test's poll), which on
// a loaded machine took a good part of a second.
func followTime(t *testing.T, driver, follower context.Context, sel, cond, what string) time.Duration {
	t.Helper()
	if err := browsertest.MarkEvent(driver, "syncloopClicked", sel, "click"); err != nil {
		t.Fatalf("arming the driver's page: %v", err)
	}
	if err := browsertest.MarkWhen(follower, "syncloopFollowed", cond); err != nil {
		t.Fatalf("arming the follower's page for %s: %v", what, err)
	}
	pageDo(t, driver, chromedp.Click(sel))
	pageWait(t, follower, 10*time.Second, what, `window.syncloopFollowed !== undefined`)
	clickAt, ok, err := browsertest.Marked(driver, "syncloopClicked")
	if err != nil || !ok {
		t.Fatalf("the driver's page did not see the click on %s: %v", sel, err)
	}
	followAt, _, err := browsertest.Marked(follower, "syncloopFollowed")
	if err != nil {
		t.Fatal(err)
	}
	return followAt.Sub(clickAt)
}

// followAndHand: Bob follows Ann's selections across replicas within a
// second; Ann hands Bob the wheel, both replicas say so, and Ann follows Bob.
func (r *clusterRoom) followAndHand(t *testing.T) {
	var took []time.Duration
	for _, c := range []string{"pleg", "housekeeping", "sync"} {
		took = append(took, followTime(t, r.ann, r.bob, `#case-`+c+` .case-chip`, caseSelected(c), "Bob on replica 2 shows "+c))
	}
	t.Logf("a follower on replica 2 followed the driver on replica 1 in %v (click, websocket, NATS, websocket, scroll; the pages' own clocks)", took)
	for _, d := range took {
		if d > time.Second {
			t.Errorf("the follower on the other replica followed after %v, want within a second", d)
		}
	}

	pageWait(t, r.ann, 10*time.Second, "the hand-over control names Bob", `!document.querySelector('[data-room-hand]').hidden && document.querySelector('[data-room-hand-to]').selectedOptions[0]?.textContent === 'Bob'`)
	if closed, _ := chromedp.Run(r.ann, chromedp.Evaluate[bool](`document.getElementById('room-panel').hidden`)); closed {
		pageDo(t, r.ann, chromedp.Click(`[data-room-more]`)) // the hand-over control is in the room's panel
	}
	pageWait(t, r.ann, 5*time.Second, "the room's panel open", `!document.getElementById('room-panel').hidden`)
	pageDo(t, r.ann, chromedp.Click(`[data-room-hand-go]`))
	pageWait(t, r.bob, 10*time.Second, "Bob drives on replica 2", isDriving)
	pageWait(t, r.ann, 10*time.Second, "Ann on replica 1 sees Bob drive", `document.querySelector('[data-room-role]')?.textContent === 'You follow Bob.'`)
	if d := followTime(t, r.bob, r.ann, `#case-pleg .case-chip`, caseSelected("pleg"), "Ann on replica 1 follows Bob on replica 2"); d > time.Second {
		t.Errorf("the driver on replica 2 was followed on replica 1 after %v", d)
	}
}

// afterKill: replica 1 is gone (SIGKILL, Ann's page with it); the room goes
// on on replica 2: its page, Bob still at the lent wheel, and the driver
// link opened on replica 2 sees him drive.
func (r *clusterRoom) afterKill(t *testing.T) {
	if status, _ := e2eGet(t, r.base2+"/rooms/"+r.id); status != http.StatusOK {
		t.Fatalf("the room on replica 2 after replica 1 was killed: %d", status)
	}
	pageWait(t, r.bob, 10*time.Second, "Bob still drives on replica 2", isDriving)
	ann2, cancel := chromedp.NewContext(r.ann, chromedp.WithNewBrowserContext())
	defer cancel()
	pageDo(t, ann2, chromedp.Navigate(r.base2+"/rooms/"+r.id+"?k="+r.key), chromedp.WaitReady("#room"))
	pageWait(t, ann2, 20*time.Second, "the driver link on replica 2 sees Bob drive, and Ann's gone page not there",
		`(() => { const li = [...document.querySelectorAll('[data-room-people] li')]; return li.length === 2 && document.querySelector('[data-room-role]')?.textContent.includes('Bob') })()`)
	pageDo(t, r.bob, chromedp.Click(`#case-housekeeping .case-chip`))
	pageWait(t, ann2, 5*time.Second, "Ann, back on replica 2, follows Bob", caseSelected("housekeeping"))
}
