package server

// The room page's hand-in ([data-room-handin], classes/handin.go): a
// student confirms, the page says when and turns read-only as an ended
// room's does, the server refuses a write after it, and a page opened
// afterwards says so from the start.

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

func TestBrowserHandIn(t *testing.T) {
	ctx := newBrowser(t)
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }, DemoPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	class, key := createClass(t, ts, map[string][]string{"name": {"Hand-in"}})

	w := watchPage(t, ctx, ts)
	if err := chromedp.Do(ctx, enableNetwork, chromedp.Navigate(ts.URL+"/classes/"+class), chromedp.WaitReady(`[data-class-start]`)); err != nil {
		t.Fatal(err)
	}
	typeInto(t, ctx, `[data-class-name]`, "Ann")
	if err := chromedp.Do(ctx, chromedp.Click(`[data-class-start]`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "Ann in a room", `location.pathname.startsWith('/rooms/') && !!document.getElementById('room')`)
	room := eval[string](t, ctx, `document.getElementById('room').dataset.room`)
	waitFor(t, ctx, "the hand-in button", `!document.querySelector('[data-room-handin]').hidden`)
	// A second page on the room, open before the hand-in (a partner's).
	other, cancel := chromedp.NewContext(ctx)
	t.Cleanup(cancel)
	if err := chromedp.Do(other, chromedp.Navigate(ts.URL+"/rooms/"+room), chromedp.WaitReady(`#room`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, other, "the other page's notes live", `document.body.classList.contains('annot-live')`)

	// Cancelled at the confirmation: nothing handed in.
	eval[bool](t, ctx, `(window.confirm = () => false, document.querySelector('[data-room-handin]').click(), true)`)
	if p := progressOf(t, ts.URL, class, key); len(p.Rooms) != 1 || p.Rooms[0].HandedIn != nil {
		t.Fatalf("handed in without confirming: %+v", p.Rooms)
	}
	eval[bool](t, ctx, `(window.confirm = () => true, document.querySelector('[data-room-handin]').click(), true)`)
	waitFor(t, ctx, "Handed in at HH:MM, the notes read-only",
		`/^Handed in at \d\d:\d\d$/.test(document.querySelector('[data-room-handedin]').textContent) && document.querySelector('[data-room-handin]').hidden && document.body.classList.contains('annot-readonly')`)
	screenshot(t, ctx, "room-handed-in-1440.png", false)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844)); err != nil {
		t.Fatal(err)
	}
	if over := eval[bool](t, ctx, `document.documentElement.scrollWidth > innerWidth + 1 || document.querySelector('[data-room-handedin]').getBoundingClientRect().right > innerWidth`); over {
		t.Error("at 390 px the room bar, its hand-in said, runs wider than the window")
	}
	screenshot(t, ctx, "room-handed-in-390.png", false)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900)); err != nil {
		t.Fatal(err)
	}
	if p := progressOf(t, ts.URL, class, key); p.Rooms[0].HandedIn == nil || time.Since(*p.Rooms[0].HandedIn) > time.Minute {
		t.Errorf("progress.json after the hand-in: %+v", p.Rooms[0])
	}
	w.check(t)

	// The page open before it learns at its next write: refused, it
	// turns read-only, saying when.
	typeInto(t, other, `[data-annotate="config"]`, "written on the other page")
	waitFor(t, other, "the other page read-only after its write was refused",
		`document.body.classList.contains('annot-readonly') && /handed in at/.test(document.querySelector('[data-annot-status]')?.textContent || '')`)

	// The server's word, not only the page's: a write from this browser
	// (its class session) is refused, saying why.
	got := eval[string](t, ctx, `fetch('/rooms/`+room+`/notes/case.config', {method: 'PUT', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({text: 'late edit', rev: 0})}).then(async (r) => r.status + ' ' + (await r.json()).error)`)
	if !strings.HasPrefix(got, "423 ") || !strings.Contains(got, "handed in at") {
		t.Errorf("a write after the hand-in: %s", got)
	}
	// A page opened afterwards says so from the start.
	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the reloaded page says it was handed in",
		`!document.querySelector('[data-room-handedin]').hidden && document.querySelector('[data-room-handin]').hidden && document.body.classList.contains('annot-readonly')`)

	// The instructor's form sets a due time (an hour ago, as the
	// browser's local time) and the release at it: the hand-in is late.
	inst, cancelInst := chromedp.NewContext(ctx)
	t.Cleanup(cancelInst)
	if err := chromedp.Do(inst, chromedp.Navigate(ts.URL+"/classes/"+class+"?k="+key), chromedp.WaitReady(`[data-class-settings]`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, inst, "the instructor's settings", `!document.querySelector('[data-class-instructor]').hidden`)
	eval[bool](t, inst, `(() => { const f = document.querySelector('[data-class-settings]'); const t = new Date(Date.now() - 3600e3);
		f.due.value = new Date(t.getTime() - t.getTimezoneOffset() * 60000).toISOString().slice(0, 16); f.release.value = 'due'; f.requestSubmit(); return true })()`)
	waitFor(t, inst, "saved", `/^Saved: .* due /.test(document.querySelector('[data-class-settings-said]').textContent)`)
	p := progressOf(t, ts.URL, class, key)
	if d := time.Until(p.Class.Due); p.Class.Release != "due" || d > -59*time.Minute || d < -61*time.Minute || !p.Rooms[0].Late {
		t.Errorf("after the form: due %v (%v from now), release %q, late %v", p.Class.Due, d, p.Class.Release, p.Rooms[0].Late)
	}
	if err := chromedp.Do(inst, chromedp.Reload(), chromedp.WaitReady(`[data-class-settings]`)); err != nil {
		t.Fatal(err)
	}
	if v := eval[string](t, inst, `document.querySelector('[data-class-settings]').due.value`); v == "" {
		t.Error("the reloaded form does not show the due time")
	}

	// The grid says so, and reopens the room: its notes take writes again.
	waitFor(t, inst, "the grid's hand-in, late",
		`document.querySelector('[data-grid-room="`+room+`"] [data-grid-handed-in]')?.dataset.gridHandedIn === 'late'`)
	screenshot(t, inst, "grid-handed-in-1440.png", false)
	eval[bool](t, inst, `(window.confirm = () => true, document.querySelector('[data-grid-room="`+room+`"] [data-grid-reopen]').click(), true)`)
	waitFor(t, inst, "reopened", `!document.querySelector('[data-grid-room="`+room+`"] [data-grid-handed-in]')`)
	if p := progressOf(t, ts.URL, class, key); p.Rooms[0].HandedIn != nil {
		t.Errorf("progress.json after the reopen: %+v", p.Rooms[0])
	}
	got = eval[string](t, ctx, `fetch('/rooms/`+room+`/notes/case.pleg', {method: 'PUT', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({text: 'after the reopen', rev: 0})}).then((r) => String(r.status))`)
	if got != "200" {
		t.Errorf("a write after the reopen: %s", got)
	}

	// An extension from the grid: the room's minutes past the due time,
	// asked for in a prompt; a prompt answered with no number changes none.
	ext := `document.querySelector('[data-grid-room="` + room + `"] [data-grid-extend]')`
	waitFor(t, inst, "the room's extend button", ext+` !== null`)
	eval[bool](t, inst, `(window.prompt = () => 'soon', `+ext+`.click(), true)`)
	waitFor(t, inst, "a refused extension said so", `/whole number of minutes/.test(document.querySelector('[data-grid-said]').textContent)`)
	eval[bool](t, inst, `(window.prompt = () => '90', `+ext+`.click(), true)`)
	testwait.For(t, 10*time.Second, "the room's 90 minutes in the class's settings", func() bool {
		return progressOf(t, ts.URL, class, key).Class.Extensions[room] == 90
	})
	waitFor(t, inst, "the grid shows the extension", ext+`?.textContent.startsWith('+90 min')`)
}
