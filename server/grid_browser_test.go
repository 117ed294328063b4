package server

// The instructor's grid (static/grid.js) in real Chromium: six students
// in three rooms (a worksheet with a warning and a confirmation; the
// lab's recorded journal relayed; the same journal with its pod named
// otherwise), the grid's cells as progress.json says, the lab checks
// linking their lines, a note written showing within the overview's
// tick, the sorts, the summary a phone shows, axe, and screenshots at
// 1440 and 390, light and dark.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/classes"
)

// gridClass starts a class of three rooms, two students each, in the
// states above; it returns the class, its key and the rooms.
func gridClass(t *testing.T, ctx context.Context, ts *httptest.Server) (class, key string, ids []string) {
	t.Helper()
	class, key = createClass(t, ts, url.Values{"name": {"Lab <3>"}, "budget": {"6"}})
	var keys []string
	for i := range 3 {
		id, k, code := startClassRoom(t, ts, class)
		if code != http.StatusSeeOther {
			t.Fatalf("room %d: %d", i+1, code)
		}
		ids, keys = append(ids, id), append(keys, k)
	}
	names := [][2]string{{"Ann", "Bob"}, {"Cy", "Dee"}, {"Eve", "Fay"}}
	var tokens []string
	for i, id := range ids {
		d := dialRoom(t, ctx, ts, id, keys[i], names[i][0])
		dialRoom(t, ctx, ts, id, "", names[i][1])
		tokens = append(tokens, d.token)
	}
	putNote(t, ts, ids[0], "writer.config", "pkg/kubelet/config.(*PodConfig).Updates")
	putNote(t, ts, ids[0], "set.actual", "somewhere.go:1")
	putNote(t, ts, ids[0], "set.desired", "DesiredStateOfWorld, pkg/kubelet/volumemanager/cache/desired_state_of_world.go:45")
	putNote(t, ts, ids[0], "sentence", "The loop reconciles what is wanted with what is.")
	relayJournal(t, ctx, ts, ids[1], tokens[1], wholeLabJournal(t, "", ""))
	pinLast(t, ts, ids[1], "liveness", "Cy")
	relayJournal(t, ctx, ts, ids[2], tokens[2], wholeLabJournal(t, "probe-me-lab", "probe-demo-vm"))
	return class, key, ids
}

// gridCells is every [data-cell] of the page's grid and its state.
const gridCells = `Object.fromEntries([...document.querySelectorAll('[data-grid] [data-cell]')].map(td => [td.dataset.cell, td.dataset.state]))`

// gridOrder is the rooms of the grid, in the order shown.
const gridOrder = `[...document.querySelectorAll('[data-grid] tbody tr[data-grid-room]')].map(tr => tr.dataset.gridRoom)`

func gridProgress(r classes.RoomProgress) int {
	lab := 0
	for _, c := range []bool{r.Checks.Added.OK, r.Checks.LivenessFailed.OK, r.Checks.Deleted.OK, r.Checks.Verbosity.OK} {
		if c {
			lab++
		}
	}
	return r.Confirmed*2 + (r.Written-r.Warned-r.Confirmed)*2 + r.Warned + lab*2
}

func TestBrowserClassGrid(t *testing.T) {
	t.Parallel()
	browser := newBrowser(t)
	_, ts := newRoomServer(t, "", func(c *Config) { c.DemoPeriod = -1 })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	class, key, ids := gridClass(t, ctx, ts)
	var p classes.Progress
	testwait.For(t, 30*time.Second, "both journals checked", func() bool {
		p = progressOf(t, ts.URL, class, key)
		return p.Rooms[1].Checks.Added.OK && p.Rooms[2].Checks.Lines > 0 && p.Rooms[2].Checks.Lines == p.Rooms[1].Checks.Lines
	})

	watch := watchPage(t, browser, ts)
	defer watch.check(t)
	if err := chromedp.Do(browser, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(ts.URL+"/classes/"+class+"?k="+url.QueryEscape(key)),
		chromedp.WaitReady("[data-grid]")); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, r := range p.Rooms {
		for _, it := range p.Items {
			want[r.ID+":"+it.ID] = r.Cells[it.ID]
		}
	}
	waitFor(t, browser, "the grid drawn", fmt.Sprintf(`document.querySelectorAll('[data-grid] [data-cell]').length === %d`, len(want)))

	t.Run("the cells are what each room wrote and what the checker says", func(t *testing.T) {
		got := eval[map[string]string](t, browser, gridCells)
		for k, w := range want {
			if got[k] != w {
				t.Errorf("cell %s: %q, want %q", k, got[k], w)
			}
		}
		// The rooms' table beneath: no tick beside a count of none.
		waitFor(t, browser, "room 3's worksheet says none is checked", `document.querySelector('[data-class-room="`+ids[2]+`"] .class-checked')?.textContent === 'none checked yet'`)
		warned := `[data-cell="` + ids[0] + `:set.actual"]`
		reason := p.Rooms[0].Warnings["set.actual"][0]
		if tip := eval[string](t, browser, `(() => { const td = document.querySelector('`+warned+`'); td.focus(); return document.activeElement === td ? getComputedStyle(td, '::after').content : 'no focus' })()`); !strings.Contains(tip, reason) {
			t.Errorf("the warned cell on focus shows %q, want the checker's %q", tip, reason)
		}
	})

	t.Run("a row per student beneath a room, on demand", func(t *testing.T) {
		r := p.Rooms[0]
		if len(r.Students) == 0 {
			t.Fatalf("room 1 lists no student: %+v", r)
		}
		eval[bool](t, browser, `(() => { document.querySelector('[data-grid-students="`+r.ID+`"]').click(); return true })()`)
		waitFor(t, browser, "room 1's students' rows", fmt.Sprintf(`document.querySelectorAll('tr[data-grid-student^="%s:"]').length === %d`, r.ID, len(r.Students)))
		got := eval[map[string]string](t, browser, `Object.fromEntries([...document.querySelectorAll('[data-student-cell^="`+r.ID+`:"]')].map(td => [td.dataset.studentCell, td.dataset.state]))`)
		wrote := 0
		for _, name := range r.Students {
			for _, it := range p.Items {
				want := "empty"
				if r.By[it.ID] == name {
					want, wrote = r.Cells[it.ID], wrote+1
				}
				if k := r.ID + ":" + name + ":" + it.ID; got[k] != want {
					t.Errorf("%s's cell %s: %q, want %q", name, it.ID, got[k], want)
				}
			}
		}
		if wrote == 0 {
			t.Errorf("no answer of room 1 is by one of its students %v (by: %v): the rows show nothing", r.Students, r.By)
		}
		if n := eval[int](t, browser, `document.querySelectorAll('[data-grid] [data-cell]').length`); n != len(want) {
			t.Errorf("with the students shown the grid has %d room cells, want %d", n, len(want))
		}
		eval[bool](t, browser, `(() => { document.querySelector('[data-grid-students="`+r.ID+`"]').click(); return true })()`)
		waitFor(t, browser, "room 1's students' rows hidden again", `document.querySelectorAll('tr[data-grid-student]').length === 0`)
	})

	t.Run("the lab checks link their lines", func(t *testing.T) {
		row := `[data-grid-room="` + ids[1] + `"]`
		href := eval[string](t, browser, `document.querySelector('`+row+` [data-check="added"]')?.getAttribute('href') || ''`)
		if href != p.Rooms[1].Checks.Added.At.Link {
			t.Errorf("room 2's added check links %q, want %q", href, p.Rooms[1].Checks.Added.At.Link)
		}
		code, body := httpGet(t, ts.URL+href)
		if code != 200 || !strings.Contains(body, "SyncLoop ADD") || !strings.Contains(body, "probe-me-lab") {
			t.Errorf("the link reads %d %.300s", code, body)
		}
		other := eval[string](t, browser, `document.querySelector('[data-grid-room="`+ids[2]+`"] [data-check="added"]').getAttribute('aria-label')`)
		if !strings.Contains(other, "saw default/probe-demo-vm") {
			t.Errorf("room 3's added check says %q", other)
		}
	})

	t.Run("a note written shows at once", func(t *testing.T) {
		putNote(t, ts, ids[0], "case.config", "The config channel carries pod updates from the sources.")
		cell := `[data-cell="` + ids[0] + `:case.config"]`
		start := time.Now()
		waitFor(t, browser, "the new note's cell written", `document.querySelector('`+cell+`')?.dataset.state === 'written'`)
		t.Logf("the note showed in the grid %v after it was written", time.Since(start).Round(10*time.Millisecond))
		p = progressOf(t, ts.URL, class, key)
	})

	t.Run("sorted by progress and by activity", func(t *testing.T) {
		byProgress := slices.Clone(p.Rooms)
		slices.SortStableFunc(byProgress, func(a, b classes.RoomProgress) int { return gridProgress(a) - gridProgress(b) })
		eval[bool](t, browser, `(document.querySelector('[data-grid-sort="progress"]').click(), true)`)
		var wantIDs []string
		for _, r := range byProgress {
			wantIDs = append(wantIDs, r.ID)
		}
		if got := eval[[]string](t, browser, gridOrder); !slices.Equal(got, wantIDs) {
			t.Errorf("by progress: %v, want %v", got, wantIDs)
		}
		eval[bool](t, browser, `(document.querySelector('[data-grid-sort="activity"]').click(), true)`)
		if got := eval[[]string](t, browser, gridOrder); got[len(got)-1] != ids[0] {
			t.Errorf("by activity: %v, want room 1 (written in last) last", got)
		}
		if pressed := eval[string](t, browser, `document.querySelector('[data-grid-sort][aria-pressed="true"]').dataset.gridSort`); pressed != "activity" {
			t.Errorf("the pressed sort is %q", pressed)
		}
		eval[bool](t, browser, `(document.querySelector('[data-grid-sort="n"]').click(), true)`)
	})

	t.Run("a column's heading shows that question across every room", func(t *testing.T) {
		hostile := `<img src=x onerror="document.title='pwned'"> DesiredStateOfWorld`
		putNote(t, ts, ids[1], "set.actual", hostile)
		eval[bool](t, browser, `(document.querySelector('[data-grid-item="set.actual"]').click(), true)`)
		waitFor(t, browser, "every room's actual set", `document.querySelectorAll('[data-grid-answers-list] [data-answer-room]').length === 3`)
		got := eval[[]string](t, browser, `[...document.querySelectorAll('[data-grid-answers-list] [data-answer-room]')].map(li => li.dataset.state + '|' + li.textContent)`)
		if !strings.HasPrefix(got[0], "warned|Room 1") || !strings.Contains(got[0], "by Ann") || !strings.Contains(got[0], "somewhere.go:1") || !strings.Contains(got[0], "⚠ ") {
			t.Errorf("room 1's answer: %q", got[0])
		}
		if !strings.Contains(got[1], hostile) || !strings.Contains(got[2], "no answer yet") {
			t.Errorf("rooms 2 and 3: %q", got[1:])
		}
		if n := eval[int](t, browser, `document.querySelectorAll('[data-grid-answers] img').length`); n != 0 || eval[string](t, browser, `document.title`) == "pwned" {
			t.Error("an answer's text ran as HTML")
		}
		screenshot(t, browser, "class-grid-answers.png", false)
		eval[bool](t, browser, `(document.querySelector('[data-grid-answers-close]').click(), true)`)
	})

	t.Run("the class names its pod", func(t *testing.T) {
		eval[bool](t, browser, `(() => { const f = document.querySelector('[data-class-settings]'); f.pod.value = 'probe-demo'; f.requestSubmit(); return true })()`)
		waitFor(t, browser, "room 3's pod added, by the pod named", `document.querySelector('[data-grid-pod]').textContent === 'probe-demo' &&
			document.querySelector('[data-grid-room="`+ids[2]+`"] [data-check="added"]')?.classList.contains('ok')`)
		if ok := eval[bool](t, browser, `document.querySelector('[data-grid-room="`+ids[1]+`"] [data-check="added"]').classList.contains('ok')`); ok {
			t.Error("room 2 (probe-me-lab) still passes for probe-demo")
		}
		eval[bool](t, browser, `(() => { const f = document.querySelector('[data-class-settings]'); f.pod.value = ''; f.requestSubmit(); return true })()`)
		waitFor(t, browser, "the pod back to probe-me", `document.querySelector('[data-grid-pod]').textContent === 'probe-me'`)
	})

	t.Run("screenshots, and a phone's summary", func(t *testing.T) {
		axe := axeSource(t)
		for _, sc := range []struct {
			width, height int
			dark          bool
		}{{1440, 900, false}, {1440, 900, true}, {390, 844, false}, {390, 844, true}} {
			scheme := map[bool]string{false: "light", true: "dark"}[sc.dark]
			name := fmt.Sprintf("class-grid-%d-%s.png", sc.width, scheme)
			if err := chromedp.Do(browser, chromedp.EmulateViewport(int64(sc.width), int64(sc.height)),
				media(emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}})); err != nil {
				t.Fatal(err)
			}
			narrow := sc.width < 600
			summary := eval[bool](t, browser, `(() => { const s = document.querySelector('[data-grid-summary]'); return !!s && s.offsetParent !== null })()`)
			cells := eval[bool](t, browser, `getComputedStyle(document.querySelector('[data-grid] [data-cell]')).display !== 'none'`)
			if summary != narrow || cells == narrow {
				t.Errorf("%s: summary shown %v, cells shown %v", name, summary, cells)
			}
			if narrow {
				if s := eval[string](t, browser, `document.querySelector('[data-grid-summary="`+ids[0]+`"]').textContent`); !strings.Contains(s, "written") || !strings.Contains(s, "⚠") {
					t.Errorf("room 1's summary: %q", s)
				}
				if wide := eval[[]string](t, browser, overflowing); len(wide) > 0 {
					t.Errorf("%s: the page scrolls sideways: %v", name, wide)
				}
			}
			eval[bool](t, browser, `(document.activeElement.blur(), document.querySelector('.class-grid-wrap').scrollLeft = 0, document.querySelector('.class-grid-box').scrollIntoView(), true)`)
			if !narrow {
				if w := eval[[]int](t, browser, `(() => { const w = document.querySelector('.class-grid-wrap'); return [w.scrollWidth, w.clientWidth] })()`); w[0] > w[1] {
					t.Errorf("%s: the grid scrolls sideways (%d px in %d)", name, w[0], w[1])
				}
				if wide := eval[[]string](t, browser, overflowing); len(wide) > 0 {
					t.Errorf("%s: the page scrolls sideways: %v", name, wide)
				}
			}
			screenshot(t, browser, name, false)
			if _, err := chromedp.Run(browser, chromedp.Evaluate[bool](axe+";true")); err != nil {
				t.Fatal(err)
			}
			found := eval[[]string](t, browser, `axe.run(document.querySelector('.class-grid-box'), {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
				.then(res => res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
				.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' — ' + (n.failureSummary || '').split('\n').slice(1, 2).join('')).join(' | ')))`)
			for _, f := range found {
				t.Errorf("%s: axe: %s", name, f)
			}
		}
	})

	t.Run("a room shows its readers the checks the grid shows", func(t *testing.T) {
		tab, cancel := chromedp.NewContext(browser)
		defer cancel()
		if err := chromedp.Do(tab, chromedp.EmulateViewport(390, 844), chromedp.Navigate(ts.URL+"/rooms/"+ids[1]), chromedp.WaitReady("#room")); err != nil {
			t.Fatal(err)
		}
		checks := p.Rooms[1].Checks
		done := checks.Done()
		waitFor(t, tab, "the room's checklist drawn", `(() => { const b = document.querySelector('[data-room-checks]'); return b && !b.hidden && b.querySelectorAll('li').length === 4 })()`)
		eval[bool](t, tab, `(() => { document.querySelector('[data-room-checks]').open = true; return true })()`)
		got := eval[map[string]string](t, tab, `Object.fromEntries([...document.querySelectorAll('[data-room-checks] li')].map(li => [li.dataset.check, li.dataset.ok]))`)
		for name, c := range map[string]bool{"added": checks.Added.OK, "liveness_failed": checks.LivenessFailed.OK, "deleted": checks.Deleted.OK, "verbosity": checks.Verbosity.OK} {
			if got[name] != fmt.Sprint(c) {
				t.Errorf("the room's %s check shows ok=%s, the grid's %v", name, got[name], c)
			}
		}
		if sum := eval[string](t, tab, `document.querySelector('[data-room-checks-sum]').textContent`); sum != fmt.Sprintf("%d/4", done) || done == 0 {
			t.Errorf("the checklist's sum reads %q, want %d/4 (and the journal to pass some)", sum, done)
		}
		href := eval[string](t, tab, `document.querySelector('[data-room-checks] li[data-check="added"] a')?.getAttribute('href') || ''`)
		if href != checks.Added.At.Link {
			t.Errorf("the room's added check links %q, want %q", href, checks.Added.At.Link)
		}
		screenshot(t, tab, "room-checklist-390.png", false)
		if wide := eval[[]string](t, tab, overflowing); len(wide) > 0 {
			t.Errorf("the room with its checklist scrolls sideways at 390: %v", wide)
		}
	})
}
