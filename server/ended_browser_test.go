package server

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestBrowserEndedRoomSaysSoWhereOneTypes: on a phone, once the room is
// ended, each note's editor says so beside it (the room's banner is out
// of view there), and the pane's lines lose their pin buttons (a pin
// would be refused).
func TestBrowserEndedRoomSaysSoWhereOneTypes(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	_, ts := newRoomServer(t, t.TempDir(), nil)
	wctx := testCtx(t)
	class, _ := createClass(t, ts, url.Values{"name": {"Kubelet internals"}, "tag": {fixture.Tag}})
	id, key, code := startClassRoom(t, ts, class)
	if code != http.StatusSeeOther {
		t.Fatalf("start a class room: %d", code)
	}
	d := dialRoom(t, wctx, ts, id, key, "Ann")
	rl, _, err := websocket.Dial(wctx, wstest.URL(ts, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		t.Fatalf("the room's relay: %v", err)
	}
	defer rl.CloseNow()
	add := siteOf(t, fixture.Reading(t), "config", "Tiny ADD")
	entry := journaldEntry("s=5eed;i=2a;b=boot", fmt.Sprintf(`I1201 03:00:01.000000    4242 %s:%d] "Tiny ADD" pods=["default/probe-me-lab"]`, path.Base(add.File), add.Line))
	wstest.Send(t, wctx, rl, relay.Line{ID: "s=5eed;i=2a;b=boot", Raw: entry})

	setView(t, ctx, viewports[2], false)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#room")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the line's pin button and the editors", `!!document.querySelector('#live li.ll .ll-pin') && document.querySelectorAll('.annot-input').length > 0 && !document.querySelector('[data-annot-readonly]')`)

	d.send(t, wctx, map[string]any{"t": "end"})
	waitFor(t, ctx, "the page read-only", `!document.querySelector('[data-room-ended]').hidden && document.body.classList.contains('annot-readonly')`)
	type st struct {
		Editors, Said, Pins, PinsShown int
		Text                           string
	}
	got := eval[st](t, ctx, `(() => {
		const eds = [...document.querySelectorAll('.annot-field')];
		const said = eds.filter(f => { const p = f.querySelector(':scope > [data-annot-readonly]'); return p && p.offsetParent !== null && f.querySelector('.annot-input').getAttribute('aria-describedby') === p.id; });
		const pins = [...document.querySelectorAll('#live .ll-pin')];
		return {Editors: eds.length, Said: said.length, Pins: pins.length, PinsShown: pins.filter(b => getComputedStyle(b).display !== 'none').length,
			Text: (document.querySelector('[data-annot-readonly]') || {}).textContent || ''};
	})()`)
	if got.Editors == 0 || got.Said != got.Editors || got.PinsShown != 0 || got.Text == "" {
		t.Fatalf("after the room ended: %+v; want every editor to say it is read-only beside it, and no pin button shown", got)
	}
	eval[bool](t, ctx, `(document.querySelector('[data-annot-readonly]').scrollIntoView({block: 'center', behavior: 'instant'}), true)`)
	screenshot(t, ctx, "room-ended-editor-390.png", false)
}
