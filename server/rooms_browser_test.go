package server

// A pair session in two Chromium browser contexts (separate storage, as two
// people's browsers): the driver starts a room from the reading page, the
// viewer opens the viewer link; the driver selects pleg and the viewer's
// page follows within a second; the viewer's own websocket cannot steer;
// a shared case link opens the room at that case; a relay with the room's
// token feeds both live panes.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// newRealServerTags serves the real Reading of the default tag, and the
// same Reading under each of the other tags, all loaded: the header then
// lists them all as cached, as on a server that has read a few.
func newRealServerTags(t *testing.T, others ...string) *Server {
	t.Helper()
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	for _, tag := range others {
		o := *r
		o.Tag = tag
		fl.Readings[tag] = &o
	}
	// The tags are loaded without a request (TagReady), which all share
	// one budget of new tags an hour: room for every one of them.
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" },
		NewTagsPerHour: len(others) + 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for _, tag := range append(others, r.Tag) {
		waitLoaded(t, s, tag)
	}
	return s
}

// headerRows is how many rows the page header's items take: items whose
// vertical extents overlap share a row.
const headerRows = `(() => {
	const items = [...document.querySelectorAll('header.site :is(a, button, input, label)')]
		.map(e => e.getBoundingClientRect()).filter(r => r.width > 0 && r.height > 0)
		.sort((a, b) => a.top - b.top);
	let rows = 0, bottom = -Infinity;
	for (const r of items) {
		if (r.top >= bottom - 1) { rows++; bottom = r.bottom } else bottom = Math.max(bottom, r.bottom);
	}
	return rows })()`

// headerOverlaps lists the page header's items that overlap another.
const headerOverlaps = `(() => {
	const items = [...document.querySelectorAll('header.site :is(a, button, input, label)')]
		.map(e => [e, e.getBoundingClientRect()]).filter(([, r]) => r.width > 0 && r.height > 0);
	const out = [];
	for (const [i, [a, r]] of items.entries())
		for (const [b, q] of items.slice(i + 1))
			if (!a.contains(b) && !b.contains(a) && r.left < q.right - 1 && q.left < r.right - 1 && r.top < q.bottom - 1 && q.top < r.bottom - 1)
				out.push(a.textContent.trim() + ' / ' + b.textContent.trim());
	return out })()`

// checkHeader checks the page header at a few window widths: one row from
// 1024px, wrapped without overlap below; and that Export ▾ opens under its
// button. It leaves the window 1440px wide.
func checkHeader(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	for _, tc := range []struct {
		width   int64
		oneRow  bool
		capture string
	}{
		{1440, true, "header-1440.png"},
		{1280, true, ""},
		{1024, true, "header-1024.png"},
		{1000, false, ""},
		{400, false, "header-400.png"},
	} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(tc.width, 900)); err != nil {
			t.Fatal(err)
		}
		if rows := eval[int](t, ctx, headerRows); tc.oneRow && rows != 1 {
			t.Errorf("%s at %d px: the header takes %d rows, want 1", page, tc.width, rows)
		}
		if o := eval[[]string](t, ctx, headerOverlaps); len(o) > 0 {
			t.Errorf("%s at %d px: header items overlap: %q", page, tc.width, o)
		}
		if tc.capture != "" {
			screenshot(t, ctx, page+"-"+tc.capture, false)
		}
	}
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Click(".export-button")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "Export ▾ opens under its button", `(() => {
		const b = document.querySelector('.export-button').getBoundingClientRect();
		const m = document.getElementById('export-menu'); const r = m.getBoundingClientRect();
		const json = m.querySelector('a[href$="/reading.json"]').getBoundingClientRect();
		return m.matches(':popover-open') && json.width > 0 && Math.abs(r.left - b.left) < 2 && r.top >= b.bottom && r.top < b.bottom + 16 })()`)
	if err := chromedp.Do(ctx, chromedp.KeyEvent(kb.Escape)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "Escape closes Export ▾", `!document.getElementById('export-menu').matches(':popover-open')`)
}

func TestBrowserRoom(t *testing.T) {
	driver := newBrowser(t)
	s := newRealServerTags(t, "v1.31.0")
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	tag := s.cfg.DefaultTag

	watchD := watchPage(t, driver, ts)
	// The driver starts a pair session from the reading page, whose
	// header (two tags cached, and the pair and help buttons) is one row
	// on a wide screen.
	if err := chromedp.Do(driver, enableNetwork,
		chromedp.Navigate(ts.URL+"/k8s/"+tag+"/"), chromedp.WaitReady("form.pair-start button"),
	); err != nil {
		t.Fatal(err)
	}
	if n := eval[int](t, driver, `document.querySelectorAll('header.site #cached-tags option').length`); n != 2 {
		t.Errorf("the header's tag input suggests %d cached tags, want 2", n)
	}
	checkHeader(t, driver, "reading")
	if err := chromedp.Do(driver, chromedp.Click("form.pair-start button")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, driver, "the room, its key out of the address", `location.pathname.startsWith('/rooms/') && location.search === '' && !!document.getElementById('room')`)
	id := eval[string](t, driver, `document.getElementById('room').dataset.room`)
	waitFor(t, driver, "the driver drives", `document.querySelector('[data-room-role]').textContent.startsWith('You are driving')`)
	checkHeader(t, driver, "room")
	eval[bool](t, driver, `(() => { const i = document.querySelector('[data-room-name]'); i.value = 'Ann'; i.dispatchEvent(new Event('change')); return true })()`)

	// The viewer: another browser context (its own storage), the viewer link.
	viewer, cancelV := chromedp.NewContext(driver, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelV)
	watchV := watchPage(t, viewer, ts)
	if err := chromedp.Do(viewer, enableNetwork, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#room")); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, viewer, `(() => { const i = document.querySelector('[data-room-name]'); i.value = 'Bob'; i.dispatchEvent(new Event('change')); return true })()`)
	waitFor(t, viewer, "the viewer follows Ann", `document.querySelector('[data-room-role]').textContent === 'You follow Ann.'`)
	waitFor(t, driver, "the driver sees Bob follow", `[...document.querySelectorAll('[data-room-people] li')].some(li => li.textContent.includes('Bob') && li.textContent.includes('follows Ann'))`)
	waitFor(t, driver, "the name panel closed", `document.getElementById('room-panel').hidden`)
	screenshot(t, driver, "room-driver-top.png", false)
	if eval[bool](t, viewer, `!document.querySelector('[data-room-feedbox]').hidden || document.querySelector('[data-room-cmd]').textContent !== ''`) {
		t.Error("the viewer sees the relay command")
	}

	t.Run("the viewer follows the driver to pleg within a second", func(t *testing.T) {
		followed := `(() => { const c = document.getElementById('case-pleg'); const r = c.getBoundingClientRect();
			return c.classList.contains('selected') && r.top < innerHeight && r.bottom > 0 })()`
		markEvent(t, driver, "syncloopClicked", `#case-pleg .case-chip`, "click")
		markWhen(t, viewer, "syncloopFollowed", followed)
		start := time.Now()
		if err := chromedp.Do(driver, chromedp.Click(`#case-pleg .case-chip`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "pleg selected and in view", followed)
		outer := time.Since(start)
		// From the click on the driver's page to pleg in view on the
		// viewer's: the driver's page, its websocket, the server, the
		// viewer's websocket and page.
		took := between(t, driver, "syncloopClicked", viewer, "syncloopFollowed", start)
		if took > time.Second {
			t.Errorf("the viewer followed %v after the driver's click, want within a second", took)
		}
		t.Logf("the viewer followed %v after the driver's click (%v as the test saw it)", took.Round(time.Millisecond), outer.Round(time.Millisecond))
		screenshot(t, viewer, "room-viewer-following.png", false)
	})

	t.Run("the viewer's websocket cannot steer", func(t *testing.T) {
		ctx := testCtx(t)
		v := dialRoom(t, ctx, ts, id, "", "Mallory")
		v.send(t, ctx, map[string]any{"t": "at", "case": "sync", "first": 1})
		e := v.until(t, ctx, "a refusal", func(m map[string]any) bool { return m["t"] == "error" })
		if !strings.Contains(fmt.Sprint(e["error"]), "only the driver") {
			t.Errorf("refusal %v", e)
		}
		v.send(t, ctx, map[string]any{"t": "take"})
		v.until(t, ctx, "a refusal to take the wheel", func(m map[string]any) bool { return m["t"] == "error" })
		v.c.Close(websocket.StatusNormalClosure, "")
		time.Sleep(300 * time.Millisecond) // sleep: a window in which a wrongly accepted message would have moved the page
		if got := eval[string](t, viewer, `document.querySelector('section.case.selected')?.dataset.case || ''`); got != "pleg" {
			t.Errorf("the viewer's page moved to %q", got)
		}
		if !eval[bool](t, driver, `document.querySelector('[data-room-role]').textContent.startsWith('You are driving')`) {
			t.Error("the driver lost the wheel")
		}
	})

	t.Run("own scrolling pauses following; resume catches up", func(t *testing.T) {
		eval[bool](t, viewer, `(window.dispatchEvent(new WheelEvent('wheel', {deltaY: 400})), window.scrollBy(0, 400), true)`)
		waitFor(t, viewer, "paused control", `!document.querySelector('[data-room-paused]').hidden`)
		waitFor(t, driver, "the driver sees Bob on his own", `[...document.querySelectorAll('[data-room-people] li')].some(li => li.textContent.includes('Bob') && li.textContent.includes('on their own'))`)
		if err := chromedp.Do(driver, chromedp.Click(`#case-housekeeping .case-chip`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "where the driver is", `document.querySelector('[data-room-where]').textContent.includes('housekeeping')`)
		if got := eval[string](t, viewer, `document.querySelector('section.case.selected')?.dataset.case || ''`); got != "pleg" {
			t.Errorf("a paused viewer moved to %q", got)
		}
		screenshot(t, viewer, "room-viewer-paused.png", false)
		if err := chromedp.Do(viewer, chromedp.Click(`[data-room-resume]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "caught up", `document.getElementById('case-housekeeping').classList.contains('selected') && document.querySelector('[data-room-paused]').hidden`)
	})

	t.Run("the viewer follows the driver to pod_workers and back", func(t *testing.T) {
		if err := chromedp.Do(driver, chromedp.Click(`nav.pages a[href="/rooms/`+id+`/pod-workers"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "the viewer on pod_workers", `location.pathname === '/rooms/`+id+`/pod-workers' && !!document.querySelector('section.type')`)
		waitFor(t, driver, "the driver drives again", `document.querySelector('[data-room-role]')?.textContent.startsWith('You are driving')`)
		screenshot(t, viewer, "room-viewer-pod-workers.png", false)
		if err := chromedp.Do(driver, chromedp.Click(`nav.pages a[href="/rooms/`+id+`"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "the viewer back on the function", `location.pathname === '/rooms/`+id+`' && !!document.getElementById('case-pleg')`)
		waitFor(t, driver, "the driver drives on the function", `!!document.getElementById('case-pleg') && document.querySelector('[data-room-role]')?.textContent.startsWith('You are driving')`)
	})

	t.Run("the viewer follows the driver into a note, and across a reload", func(t *testing.T) {
		// The driver reads the lower half of the pleg note: no code line
		// needs to be in view for the viewer to read the same paragraph.
		eval[bool](t, driver, `(() => { const n = document.querySelector('#case-pleg .margin').getBoundingClientRect();
			window.scrollBy(0, n.top + n.height * 0.75 - innerHeight / 2); window.dispatchEvent(new Event('scroll')); return true })()`)
		readsPleg := `(() => { const bar = document.getElementById('room').getBoundingClientRect().bottom; const y = bar + (innerHeight - bar) / 3;
			const r = document.getElementById('case-pleg').getBoundingClientRect(); const f = (y - r.top) / r.height;
			return document.querySelector('[data-room-role]').textContent === 'You follow Ann.' && f > 0.4 && f < 1 })()`
		waitFor(t, viewer, "the viewer in the lower half of the pleg note, still following", readsPleg)
		// Its code beside it: the note and its code are read together.
		waitFor(t, viewer, "the pleg code in view beside the note", `(() => { const r = document.querySelector('#case-pleg pre.code').getBoundingClientRect(); return r.top < innerHeight && r.bottom > 100 })()`)
		screenshot(t, viewer, "room-viewer-in-note.png", false)
		// A reload keeps following, though the address took the driver's case.
		if err := chromedp.Do(viewer, chromedp.Reload(), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "still following after a reload", `document.querySelector('[data-room-role]').textContent === 'You follow Ann.' && document.querySelector('[data-room-paused]').hidden`)
		if err := chromedp.Do(driver, chromedp.Click(`#case-startup .case-chip`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "the reloaded viewer follows to startup", `document.getElementById('case-startup').classList.contains('selected')`)
	})

	t.Run("share this case opens the room at the case", func(t *testing.T) {
		if err := chromedp.Do(driver, chromedp.Click(`#case-sync .case-chip`), chromedp.Click(`[data-room-share]`)); err != nil {
			t.Fatal(err)
		}
		want := ts.URL + "/rooms/" + id + "#case-sync"
		waitFor(t, driver, "the shared link", `document.querySelector('[data-room-share]').dataset.copied === `+jsString(want))
		if err := chromedp.Do(driver, chromedp.Click(`#case-pleg .case-chip`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "the viewer follows to pleg", `document.getElementById('case-pleg').classList.contains('selected')`)
		// A shared link opens in a fresh page.
		if err := chromedp.Do(viewer, chromedp.Navigate("about:blank"), chromedp.Navigate(want), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "sync selected and at the top", `(() => {
			const c = document.getElementById('case-sync'); const r = c.getBoundingClientRect();
			return c.classList.contains('selected') && r.top < innerHeight && r.bottom > 0 })()`)
		waitFor(t, viewer, "not following, told where the driver is", `!document.querySelector('[data-room-paused]').hidden && document.querySelector('[data-room-where]').textContent.includes('pleg')`)
		if !eval[bool](t, viewer, `document.getElementById('case-sync').classList.contains('selected')`) {
			t.Error("the driver's position overrode the shared case")
		}
	})

	t.Run("a relay with the room token feeds both live panes", func(t *testing.T) {
		if err := chromedp.Do(driver, chromedp.Click(`[data-room-more]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, driver, "the relay command", `document.querySelector('[data-room-cmd]').textContent.includes('--feed room-`+id+`')`)
		cmd := eval[string](t, driver, `document.querySelector('[data-room-cmd]').textContent`)
		_, tok, _ := strings.Cut(cmd, "--token ")
		tok, _, _ = strings.Cut(tok, " ")
		if !strings.HasPrefix(cmd, "syncloop relay --server "+ts.URL+" --feed room-"+id+" --token ") || !strings.Contains(cmd, `--cmd "ssh user@worker sudo journalctl -u kubelet -f -o json --all"`) {
			t.Errorf("relay command %q", cmd)
		}
		curl := eval[string](t, driver, `document.querySelector('[data-room-cmd-curl]').textContent`)
		if want := "ssh user@worker 'sudo journalctl -u kubelet -f -o json --all' | curl -sS --no-buffer -T - -H 'Authorization: Bearer " + tok + "' " + ts.URL + "/feeds/room-" + id + "/journal"; curl != want {
			t.Errorf("curl command\n%q\nwant\n%q", curl, want)
		}
		ctx := testCtx(t)
		feedURL := wstest.URL(ts, "/feeds/room-"+id+"/ingest")
		if _, resp, err := websocket.Dial(ctx, feedURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer wrong"}}}); err == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a wrong token: %v", err)
		}
		rl, _, err := websocket.Dial(ctx, feedURL, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
		if err != nil {
			t.Fatalf("relay with the room's token: %v", err)
		}
		defer rl.CloseNow()
		wstest.Send(t, ctx, rl,
			relay.Line{ID: "c0", Raw: `I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion="v1.31.0"`},
			relay.Line{ID: "c1", Raw: `I1130 01:02:04.000000    1234 kubelet.go:2407] "SyncLoop ADD" source="api" pods=["default/probe-me"]`})
		for name, ctx := range map[string]context.Context{"driver": driver, "viewer": viewer} {
			waitFor(t, ctx, name+"'s live pane shows the line", `document.querySelector('#live .live-lines')?.textContent.includes('probe-me')`)
			waitFor(t, ctx, name+" is told the journal's version", `document.querySelector('[data-room-version]').textContent.includes('runs v1.31.0')`)
		}
		// The page's curl command as it is, a journal line piped in for
		// the ssh before it.
		_, curlCmd, _ := strings.Cut(curl, "| ")
		sh := exec.Command("sh", "-c", curlCmd)
		sh.Stdin = strings.NewReader(`I1130 01:02:05.000000    1234 kubelet.go:2407] "SyncLoop ADD" source="api" pods=["default/curl-fed"]` + "\n")
		if out, err := sh.CombinedOutput(); err != nil || !strings.Contains(string(out), `"stored":1`) {
			t.Errorf("the page's curl command: %v\n%s", err, out)
		}
		for name, ctx := range map[string]context.Context{"driver": driver, "viewer": viewer} {
			waitFor(t, ctx, name+"'s live pane shows the curl-fed line", `document.querySelector('#live .live-lines')?.textContent.includes('curl-fed')`)
		}
		if !eval[bool](t, driver, `[...document.querySelectorAll('[data-room-version] button')].some(b => b.textContent === 'Switch the room to v1.31.0')`) {
			t.Error("the driver has no button to switch the room's tag")
		}
		if eval[bool](t, viewer, `!!document.querySelector('[data-room-version] button')`) {
			t.Error("the viewer can switch the room's tag")
		}
		// Item 11: the kubelet's version is told once (the room bar, with
		// the driver's switch), and nothing on the page leaves the room
		// without a word: no "Read v1.31.0" link in the pane, no tag box
		// in the header.
		for name, ctx := range map[string]context.Context{"driver": driver, "viewer": viewer} {
			type leave struct {
				Told          int
				PaneLinks     int
				TagForms      int
				RoomTagHeader bool
			}
			l := eval[leave](t, ctx, `({
				Told: (() => { const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT); let n = 0;
					while (w.nextNode()) { const e = w.currentNode.parentElement; if (/runs v1\.31\.0/.test(w.currentNode.data) && e.offsetParent !== null) n++; } return n; })(),
				PaneLinks: [...document.querySelectorAll('#live a')].filter(a => a.offsetParent !== null && a.getAttribute('href').startsWith('/k8s/')).length,
				TagForms: document.querySelectorAll('header.site form.tags').length,
				RoomTagHeader: !!document.querySelector('header.site .room-tag, .room-tag')})`)
			if l.Told != 1 || l.PaneLinks != 0 || l.TagForms != 0 || !l.RoomTagHeader {
				t.Errorf("%s: %+v; want the version told once, no link out of the room in the pane, the room's tag (not a tag box) in the header", name, l)
			}
		}
		screenshot(t, driver, "room-driver.png", false)
		screenshot(t, viewer, "room-viewer.png", false)
	})

	t.Run("hand the wheel, keep it across pages, take it back", func(t *testing.T) {
		const isDriving = `document.querySelector('[data-room-role]')?.textContent.startsWith('You are driving')`
		selected := func(c string) string {
			return `document.getElementById('case-` + c + `')?.classList.contains('selected')`
		}
		clickCase := func(ctx context.Context, c string) {
			t.Helper()
			if err := chromedp.Do(ctx, chromedp.Click(`#case-`+c+` .case-chip`)); err != nil {
				t.Fatal(err)
			}
		}
		waitFor(t, driver, "the hand-over control", `!document.querySelector('[data-room-hand]').hidden && document.querySelector('[data-room-hand-to]').selectedOptions[0]?.textContent === 'Bob'`)
		if err := chromedp.Do(driver, chromedp.Click(`[data-room-hand-go]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "Bob drives", isDriving)
		if eval[bool](t, viewer, `!document.querySelector('[data-room-feedbox]').hidden`) {
			t.Error("a lent wheel shows the ingest token")
		}

		// Bob moves to pod_workers and back, and reloads: he keeps the
		// wheel, and Ann follows him.
		if err := chromedp.Do(viewer, chromedp.Click(`nav.pages a[href="/rooms/`+id+`/pod-workers"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "Bob drives on pod_workers", `location.pathname === '/rooms/`+id+`/pod-workers' && `+isDriving)
		waitFor(t, driver, "Ann follows Bob to pod_workers", `location.pathname === '/rooms/`+id+`/pod-workers' && document.querySelector('[data-room-role]')?.textContent === 'You follow Bob.'`)
		if err := chromedp.Do(viewer, chromedp.Click(`nav.pages a[href="/rooms/`+id+`"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "Bob drives on the function", `!!document.getElementById('case-pleg') && `+isDriving)
		if err := chromedp.Do(viewer, chromedp.Reload(), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "Bob drives after a reload", `!!document.getElementById('case-pleg') && `+isDriving)
		waitFor(t, driver, "Ann follows Bob back to the function", `!!document.getElementById('case-pleg') && document.querySelector('[data-room-role]')?.textContent === 'You follow Bob.'`)
		clickCase(viewer, "config")
		waitFor(t, driver, "Ann's page follows Bob's to config", selected("config"))
		// Ann, no longer driving, moves only her own page.
		clickCase(driver, "liveness")
		waitFor(t, driver, "Ann reads on her own", `!document.querySelector('[data-room-paused]').hidden`)
		time.Sleep(300 * time.Millisecond) // sleep: a window in which a wrongly accepted position would have moved the page
		if !eval[bool](t, viewer, selected("config")+` && !`+selected("liveness")) {
			t.Error("Ann, who handed the wheel away, moved Bob's page")
		}
		screenshot(t, viewer, "room-handed-after-reload.png", false)

		waitFor(t, driver, "Ann may take the wheel back", `!document.querySelector('[data-room-take]').hidden`)
		if err := chromedp.Do(driver, chromedp.Click(`[data-room-take]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, driver, "Ann drives", isDriving)
		waitFor(t, viewer, "Bob no longer drives", `!`+isDriving)
		// Taken back, the wheel stays taken when Bob loads the room again
		// (the address without his case, so that he follows): his page
		// drops the ticket, and his clicks move no one else.
		if err := chromedp.Do(viewer, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "Bob follows Ann on his next page", `document.querySelector('[data-room-role]')?.textContent === 'You follow Ann.'`)
		if eval[bool](t, viewer, `Object.keys(sessionStorage).some(k => k.startsWith('syncloop-room-wheel-'))`) {
			t.Error("Bob's tab keeps a ticket that no longer works")
		}
		clickCase(driver, "sync")
		waitFor(t, viewer, "Bob's page follows Ann's to sync", selected("sync"))
		clickCase(viewer, "pleg")
		time.Sleep(300 * time.Millisecond) // sleep: a window in which a wrongly accepted click would have moved Ann's page
		if !eval[bool](t, driver, selected("sync")+` && `+isDriving) {
			t.Error("Bob moved Ann's page after she took the wheel back")
		}
	})

	t.Run("narrow", func(t *testing.T) {
		if err := chromedp.Do(viewer, chromedp.EmulateViewport(400, 850), chromedp.Navigate(ts.URL+"/rooms/"+id+"#case-config"), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "config at the top", `(() => { const y = document.getElementById('case-config').getBoundingClientRect().top; return y >= -2 && y < 60 })()`)
		screenshot(t, viewer, "room-narrow.png", false)
		// Item 7: on a phone, More opens its panel right under the bar,
		// on view, not hundreds of pixels away over the article.
		if err := chromedp.Do(viewer, chromedp.EmulateViewport(390, 844), chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		// (The bar scrolls away on a phone: the reader goes up to it.)
		eval[bool](t, viewer, `(window.dispatchEvent(new WheelEvent('wheel', {deltaY: -400})), scrollTo(0, 0), true)`)
		settle(t, viewer)
		eval[bool](t, viewer, `(scrollTo(0, 0), document.querySelector('[data-room-more]').click(), true)`)
		waitFor(t, viewer, "the panel open", `!document.getElementById('room-panel').hidden`)
		gap := eval[float64](t, viewer, `(() => { const m = document.querySelector('[data-room-more]').getBoundingClientRect(), p = document.getElementById('room-panel').getBoundingClientRect();
			return p.top < innerHeight && p.bottom > 0 ? p.top - m.bottom : 9999 })()`)
		if gap < -1 || gap > 120 {
			t.Errorf("on a phone the room panel opens %.0f px below its More button", gap)
		}
		screenshot(t, viewer, "room-panel-390.png", false)
		// The "following paused" control is whole, above the drawer's bar.
		if why := eval[string](t, viewer, `(() => { const p = document.querySelector('[data-room-paused]'); if (p.hidden) return 'hidden';
			const r = p.getBoundingClientRect(), d = document.getElementById('live').getBoundingClientRect();
			return r.bottom > d.top + 1 || r.right > innerWidth ? 'at [' + Math.round(r.top) + ',' + Math.round(r.bottom) + '], right ' + Math.round(r.right) + '; the drawer from ' + Math.round(d.top) : '' })()`); why != "" {
			t.Errorf("on a phone the following-paused control: %s", why)
		}
		eval[bool](t, viewer, `(document.querySelector('[data-room-more]').click(), true)`)
	})

	watchD.check(t)
	watchV.check(t)
}
