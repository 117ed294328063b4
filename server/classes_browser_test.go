package server

// A class in Chromium: one instructor and three students, each in their
// own browser context (their own storage), all from one address, as a
// classroom behind one NAT. The instructor makes the class; Ann starts a
// room, Bob joins it from the class page, Cy starts another; the
// instructor's page shows both rooms and who is in them within 5 s, and
// the cases a relay's recorded journal fired in Cy's room (never the
// demo's lines, which Ann's room shows meanwhile); Cy opens rooms past
// the address's own cap; Ann ends her room and both pages turn read-only;
// every hand-in comes in one zip; the instructor's routes want the key.
// Screenshots of the class and instructor pages at 1440×900 and 390×844,
// light and dark, go to the artifacts for a person to look at.

import (
	"archive/zip"
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/browsertest"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
)

func TestBrowserClass(t *testing.T) {
	// Four people's pages and a few dozen steps: more than newBrowser's
	// 90 s on a busy machine.
	path := browsertest.Path(t)
	if testing.Short() && os.Getenv("CI") != "true" {
		t.Skip("browser test skipped in -short mode")
	}
	instructor := browsertest.New(t, path, 4*time.Minute)
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" },
		DemoPeriod: 150 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	t.Cleanup(s.classes.Close) // first: the instructor's stream ends, and ts.Close need not wait for it

	// The instructor makes a class.
	watchI := watchPage(t, instructor, ts)
	if err := chromedp.Do(instructor, enableNetwork, chromedp.Navigate(ts.URL+"/classes"), chromedp.WaitReady(`form.class-new`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, instructor, "class-new-1440.png", false)
	typeInto(t, instructor, `form.class-new input[name="name"]`, "Kubelet internals, group B")
	if err := chromedp.Do(instructor, chromedp.Click(`form.class-new button[type="submit"]`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, instructor, "the instructor page, its key out of the address",
		`location.pathname.startsWith('/classes/') && location.search === '' && !document.querySelector('[data-class-instructor]').hidden`)
	class := eval[string](t, instructor, `document.querySelector('[data-class]').dataset.class`)
	key := eval[string](t, instructor, `sessionStorage.getItem('syncloop-class-key-' + `+jsString(class)+`)`)
	waitFor(t, instructor, "the overview is live", `document.querySelector('[data-class-live]').textContent === 'live'`)
	classURL := ts.URL + "/classes/" + class

	student := func(name string) (context.Context, *pageWatch) {
		ctx, cancel := chromedp.NewContext(instructor, chromedp.WithNewBrowserContext())
		t.Cleanup(cancel)
		w := watchPage(t, ctx, ts)
		if err := chromedp.Do(ctx, enableNetwork, chromedp.Navigate(classURL), chromedp.WaitReady(`[data-class-start]`)); err != nil {
			t.Fatal(err)
		}
		typeInto(t, ctx, `[data-class-name]`, name)
		return ctx, w
	}
	inRoom := func(ctx context.Context, who string) string {
		t.Helper()
		waitFor(t, ctx, who+" in a room", `location.pathname.startsWith('/rooms/') && location.search === '' && !!document.getElementById('room')`)
		return eval[string](t, ctx, `document.getElementById('room').dataset.room`)
	}

	ann, watchA := student("Ann")
	if err := chromedp.Do(ann, chromedp.Click(`[data-class-start]`)); err != nil {
		t.Fatal(err)
	}
	annRoom := inRoom(ann, "Ann")
	waitFor(t, ann, "Ann drives", `document.querySelector('[data-room-role]').textContent.startsWith('You are driving')`)

	bob, watchB := student("Bob")
	waitFor(t, bob, "Ann's room listed on the class page", `[...document.querySelectorAll('[data-class-pairs] li')].some(li => li.textContent.includes('Ann'))`)
	screenshot(t, bob, "class-student-1440.png", false)
	if err := chromedp.Do(bob, chromedp.Click(`[data-class-join="`+annRoom+`"]`)); err != nil {
		t.Fatal(err)
	}
	if got := inRoom(bob, "Bob"); got != annRoom {
		t.Fatalf("Bob joined %s, not Ann's room %s", got, annRoom)
	}
	waitFor(t, bob, "Bob follows Ann", `document.querySelector('[data-room-role]').textContent === 'You follow Ann.'`)

	cy, watchC := student("Cy")
	if err := chromedp.Do(cy, chromedp.Click(`[data-class-start]`)); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cyRoom := inRoom(cy, "Cy")

	row := func(id string) string { return `document.querySelector('[data-class-room="` + id + `"]')` }
	waitFor(t, instructor, "both rooms, and who is in them", `(() => {
		const a = `+row(annRoom)+`, c = `+row(cyRoom)+`;
		return document.querySelectorAll('[data-class-rooms] tr').length === 2 && !!a && !!c &&
			a.textContent.includes('Ann') && a.textContent.includes('Bob') && a.querySelector('.class-reader.driving')?.textContent === 'Ann' &&
			c.textContent.includes('Cy') })()`)
	took := time.Since(start)
	if took > 5*time.Second {
		t.Errorf("the instructor saw the second room %v after it opened, want within 5 s", took)
	}
	t.Logf("the instructor saw both rooms and their readers %v after the second room opened", took.Round(time.Millisecond))

	t.Run("a room's demo shows, and does not count as fired", func(t *testing.T) {
		waitFor(t, ann, "demo lines in Ann's live pane, labelled", `document.querySelectorAll('#live li.ll-demo[data-seq]').length >= 3 && !!document.querySelector('#live .is-demo, #live.is-demo')`)
		time.Sleep(1500 * time.Millisecond) // the overview would have counted them by now
		if got := eval[string](t, instructor, row(annRoom)+`.querySelector('td[data-label="Fired"]').textContent`); got != "none yet" {
			t.Errorf("Ann's room, demo only, shows fired %q", got)
		}
	})

	t.Run("a relay's journal fires cases on the instructor's page within 5 s", func(t *testing.T) {
		cyKey := eval[string](t, cy, `sessionStorage.getItem('syncloop-room-key-' + `+jsString(cyRoom)+`)`)
		ctx := testCtx(t)
		d := dialRoom(t, ctx, ts, cyRoom, cyKey, "Cy's relay")
		rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+cyRoom+"/ingest"), &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}}})
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
		defer rl.CloseNow()
		lines := caseLines(r, 2, "pleg", "sync")
		fired := time.Now()
		wstest.Send(t, ctx, rl, lines...)
		waitFor(t, instructor, "pleg and sync fired in Cy's room", `(() => { const c = `+row(cyRoom)+`;
			return c.querySelector('[data-fired="pleg"] b')?.textContent === '2' && c.querySelector('[data-fired="sync"] b')?.textContent === '2' &&
				c.textContent.includes('relay attached') && c.textContent.includes('kubelet `+r.Tag+`') })()`)
		if took := time.Since(fired); took > 5*time.Second {
			t.Errorf("the fired cases showed after %v, want within 5 s", took)
		} else {
			t.Logf("fired cases on the instructor's page %v after the relay sent them", took.Round(time.Millisecond))
		}
	})

	t.Run("rooms of the class past the address's own cap", func(t *testing.T) {
		// Two rooms so far from this address; three more, the 5th included.
		for i := range 3 {
			if err := chromedp.Do(cy, chromedp.Navigate(classURL), chromedp.WaitReady(`[data-class-start]`), chromedp.Click(`[data-class-start]`)); err != nil {
				t.Fatal(err)
			}
			waitFor(t, cy, "room opened, Cy driving", `location.pathname.startsWith('/rooms/') && location.search === '' && document.querySelector('[data-room-role]')?.textContent.startsWith('You are driving')`)
			t.Logf("room %d of the class from one address opened", 3+i)
		}
		if err := chromedp.Do(cy, chromedp.Navigate(classURL), chromedp.WaitReady(`[data-class-start]`)); err != nil {
			t.Fatal(err)
		}
		if n := eval[int](t, cy, `document.querySelectorAll('[data-class-held-list] li').length`); n != 4 {
			t.Errorf("Your rooms lists %d rooms, want the 4 Cy holds (%s)", n, eval[string](t, cy, `localStorage.getItem('syncloop-held-rooms') || 'nothing kept'`))
		}
		waitFor(t, instructor, "five rooms on the instructor's page", `document.querySelectorAll('[data-class-rooms] tr').length === 5`)
	})

	t.Run("Ann ends her room; its pages turn read-only", func(t *testing.T) {
		if err := chromedp.Do(ann, chromedp.Click(`[data-room-more]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ann, "the end button", `!document.querySelector('[data-room-endbox]').hidden`)
		if err := chromedp.Do(ann, chromedp.Click(`[data-room-end]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ann, "the confirmation", `document.querySelector('[data-room-end-dialog]').open`)
		screenshot(t, ann, "class-room-end-confirm.png", false)
		if err := chromedp.Do(ann, chromedp.Click(`[data-room-end-confirm]`)); err != nil {
			t.Fatal(err)
		}
		for _, p := range []struct {
			who string
			ctx context.Context
		}{{"Ann", ann}, {"Bob", bob}} {
			waitFor(t, p.ctx, p.who+"'s page read-only", `!document.querySelector('[data-room-ended]').hidden && document.body.classList.contains('annot-readonly') &&
				[...document.querySelectorAll('.annot-input')].length > 0 && [...document.querySelectorAll('.annot-input')].every(i => i.readOnly)`)
		}
		screenshot(t, bob, "class-room-ended.png", false)
		waitFor(t, instructor, "the room ended on the instructor's page", row(annRoom)+`.classList.contains('ended')`)
	})

	t.Run("handins.zip holds one worksheet per room; the key is needed", func(t *testing.T) {
		code, b := instructorGet(t, ts, "/classes/"+class+"/handins.zip", key)
		if code != 200 {
			t.Fatalf("handins.zip: %d", code)
		}
		z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		names := map[string]bool{}
		for _, f := range z.File {
			names[f.Name] = true
		}
		if len(names) != 5 || !names[annRoom+".md"] || !names[cyRoom+".md"] {
			t.Errorf("handins.zip holds %v, want 5 ROOM-ID.md files", names)
		}
		for _, p := range []string{"rooms.json", "handins.zip"} {
			if code, _ := instructorGet(t, ts, "/classes/"+class+"/"+p, ""); code != http.StatusUnauthorized {
				t.Errorf("%s without the key: %d, want 401", p, code)
			}
		}
	})

	t.Run("screenshots", func(t *testing.T) {
		for _, scheme := range []string{"light", "dark"} {
			for _, vp := range []struct {
				w, h int64
				name string
			}{{1440, 900, "1440"}, {390, 844, "390"}} {
				for _, p := range []struct {
					ctx  context.Context
					name string
				}{{instructor, "class-instructor"}, {bob, "class-student"}} {
					if p.name == "class-student" {
						if err := chromedp.Do(p.ctx, chromedp.Navigate(classURL), chromedp.WaitReady(`[data-class-start]`)); err != nil {
							t.Fatal(err)
						}
					}
					if err := chromedp.Do(p.ctx, chromedp.EmulateViewport(vp.w, vp.h, chromedp.EmulateScale(1)),
						media(emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})); err != nil {
						t.Fatal(err)
					}
					waitFor(t, p.ctx, "the rooms listed", `document.querySelectorAll('[data-class-pairs] li:not(.class-empty)').length === 5`)
					if p.name == "class-student" {
						// Bob left Ann's room for the class page: the list says so.
						waitFor(t, p.ctx, "Ann alone in her ended room", `document.querySelector('[data-class-pairs] li.ended .class-who')?.textContent === 'Ann (drives)'`)
					}
					if over := eval[bool](t, p.ctx, `document.documentElement.scrollWidth > innerWidth + 1`); over {
						t.Errorf("%s at %s px: the page scrolls sideways", p.name, vp.name)
					}
					time.Sleep(200 * time.Millisecond)
					screenshot(t, p.ctx, p.name+"-"+vp.name+"-"+scheme+".png", vp.w < 400)
				}
			}
		}
	})

	for _, w := range []*pageWatch{watchI, watchA, watchB, watchC} {
		w.check(t)
	}
}
