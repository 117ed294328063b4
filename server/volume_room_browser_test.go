package server

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/syncloop/syncloop/server/annotations"
)

// TestBrowserVolumeRoom: a room that reads the volume manager, as its
// driver sees it at a wide and a phone window, light and dark: the room
// bar, the live pane (a column beside the phases at 1440, a drawer at
// 390) showing what a relay sent the room's feed, the worksheet enabled
// from the room's notes; an answer typed in
// is saved and checked against the derived model; no sideways scroll, and
// axe's WCAG 2.2 AA rules pass. Screenshots are kept as artifacts.
func TestBrowserVolumeRoom(t *testing.T) {
	t.Parallel()
	axe := axeSource(t)
	ts, vr := serveVolume(t, false)
	// The server derives the second reading on its first request: once,
	// before the pages (a page asked meanwhile reloads until it is ready).
	getUntil200(t, ts.URL+"/k8s/"+vr.Tag+"/volume-manager.json")
	var phase, answer string
	for _, p := range vr.Parts {
		if p.Direction != "" && len(p.Starts) > 0 {
			phase, answer = p.Key, p.Direction+", and it starts "+p.Starts[0].Call
			break
		}
	}
	for _, v := range []viewport{viewports[0], viewports[2]} {
		for _, dark := range []bool{false, true} {
			name := v.name + "-" + themeName(dark)
			t.Run(name, func(t *testing.T) {
				id, link := createVolumeRoomKey(t, ts, vr.Tag)
				getUntil200(t, ts.URL+"/rooms/"+id)
				ctx := newBrowser(t)
				watch := watchPage(t, ctx, ts)
				defer watch.check(t)
				setView(t, ctx, v, dark)
				if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+link)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, ctx, "the room's worksheet, enabled", `!!document.querySelector('#room') && document.querySelectorAll('section.part').length === `+fmt.Sprint(len(vr.Parts))+
					` && !!document.querySelector('textarea[data-vm-note="vm.desired"]:not([disabled])') && !!document.querySelector('#live.live-pane')`)
				// A first-time reader gives a name (the panel asks for it) and
				// the panel closes.
				if err := chromedp.Do(ctx, chromedp.SendKeys(`[data-room-name]`, "Ann"+kb.Enter)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, ctx, "the panel closed", `document.getElementById('room-panel').hidden`)
				relayed(t, ctx, ts, id)
				if v.w >= 1200 {
					if d := eval[float64](t, ctx, `document.querySelector('#live').getBoundingClientRect().left - document.querySelector('main.volume-manager').getBoundingClientRect().right`); d < -1 {
						t.Errorf("at %s the live pane overlaps the reading by %.0f px", v.name, -d)
					}
				}
				sel := `textarea[data-vm-note="vmphase.` + phase + `"]`
				if err := chromedp.Do(ctx, chromedp.ScrollIntoView(sel), chromedp.SendKeys(sel, answer), chromedp.Blur(sel)); err != nil {
					t.Fatal(err)
				}
				waitFor(t, ctx, "the answer's checks", `[...document.querySelectorAll('[data-vm-checks="vmphase.`+phase+`"] li')].some(li => li.textContent.includes('The direction is right'))`)
				if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
					t.Errorf("the page scrolls sideways by %d px", w)
				}
				// At the top, where the room bar is in its place: scrolled, the
				// sticky bar lies over whatever passes under it, which axe's
				// target-size counts as obscured.
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, 0); `+axe+";true")); err != nil {
					t.Fatal(err)
				}
				found := eval[[]string](t, ctx, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
					.then(res => res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
					.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ') + ' — ' + (n.failureSummary || '').split('\n').slice(1, 2).join('')).join(' | ')))`)
				for _, f := range found {
					t.Errorf("axe: %s", f)
				}
				eval[bool](t, ctx, `(document.getElementById('worksheet').scrollIntoView(), true)`)
				screenshot(t, ctx, "volume-room-"+name+"-worksheet.png", false)
				if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.scrollTo(0, 0); true`)); err != nil {
					t.Fatal(err)
				}
				screenshot(t, ctx, "volume-room-"+name+".png", false)
				if v.name == "1440" && !dark {
					printSheet(t, ctx, answer)
				}
				if body := eval[string](t, ctx, `document.body.innerText`); !strings.Contains(body, "Pair session") {
					t.Errorf("no room bar on the page")
				}
			})
		}
	}
}

// printSheet prints the room's worksheet ("Print the worksheet") to A4:
// it begins as worksheet.md does and holds the answer typed, as text, and
// none of the page's source.
func printSheet(t *testing.T, ctx context.Context, answer string) {
	t.Helper()
	eval[bool](t, ctx, `(window.print = () => { window.__printed = (window.__printed || 0) + 1; }, document.querySelector('[data-vm-print]').click(), true)`)
	waitFor(t, ctx, "asked to print", `window.__printed === 1 && document.body.classList.contains('vm-print-sheet') && !!document.querySelector('#paper-head h1')`)
	printA4(t, ctx, "volume-room-print")
	text := squeezed(pdfText(t, "volume-room-print"))
	for _, want := range []string{"syncloop worksheet: the volume manager's reconciler", "Written by: Ann", answer, "(left empty)"} {
		if !strings.Contains(text, squeezed(want)) {
			t.Errorf("the printed worksheet lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "func (rc *reconciler)") {
		t.Errorf("the printed worksheet holds the page's source")
	}
}

// TestBrowserVolumeClassGrid: the instructor's grid of a class that reads
// the volume manager: a column per item of its worksheet, a phase's under
// the phase, each cell what the room wrote and the checker says; axe
// passes.
func TestBrowserVolumeClassGrid(t *testing.T) {
	t.Parallel()
	axe := axeSource(t)
	ts, vr := serveVolume(t, false)
	class, key := createClass(t, ts, url.Values{"name": {"Volumes"}, "reading": {"volume-manager"}, "tag": {vr.Tag}})
	room, _, code := startClassRoom(t, ts, class)
	if code != http.StatusSeeOther {
		t.Fatalf("start a room of the class: %d", code)
	}
	p := vr.Parts[0]
	answer := p.Direction
	for _, st := range p.Starts {
		answer += ", starts " + st.Call
	}
	revs := roomNotes{}
	for id, text := range map[string]string{annotations.VolumePhaseID(p.Key): answer, annotations.VolumeDesired: "the kubelet"} {
		if code, body := revs.put(t, ts.URL, room, id, text); code != 200 {
			t.Fatalf("PUT %s: %d %s", id, code, body)
		}
	}
	ctx := newBrowser(t)
	watch := watchPage(t, ctx, ts)
	defer watch.check(t)
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(ts.URL+"/classes/"+class+"?k="+url.QueryEscape(key)),
		chromedp.WaitReady("[data-grid]")); err != nil {
		t.Fatal(err)
	}
	items := len(annotations.VolumeExpected(vr))
	waitFor(t, ctx, "the grid drawn", fmt.Sprintf(`document.querySelectorAll('[data-grid] [data-cell]').length === %d`, items))
	cells := map[string]string{annotations.VolumePhaseID(p.Key): "confirmed", annotations.VolumeDesired: "warned", annotations.VolumeSentence: "empty"}
	for id, want := range cells {
		waitFor(t, ctx, id+" "+want, `document.querySelector('[data-cell="`+room+`:`+id+`"]')?.dataset.state === '`+want+`'`)
	}
	if n := eval[int](t, ctx, `[...document.querySelectorAll('[data-grid] th.grid-item-h')].filter(th => th.textContent.includes('dir.')).length`); n != len(vr.Parts) {
		t.Errorf("%d columns headed dir., want one per phase (%d)", n, len(vr.Parts))
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axe+";true")); err != nil {
		t.Fatal(err)
	}
	found := eval[[]string](t, ctx, `axe.run(document, {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
		.then(res => res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
		.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')))`)
	for _, f := range found {
		t.Errorf("axe: %s", f)
	}
	eval[bool](t, ctx, `(document.querySelector('[data-grid]').scrollIntoView(), true)`)
	screenshot(t, ctx, "volume-class-grid-1440.png", false)
}

// relayed sends a line of the volume manager to room id's feed as a relay
// does (PUT …/journal with the room's token, which its driver's panel
// shows) and waits for the room page's live pane to show it.
func relayed(t *testing.T, ctx context.Context, ts *httptest.Server, id string) {
	t.Helper()
	waitFor(t, ctx, "the relay command", `/Bearer [A-Za-z0-9_-]+/.test(document.querySelector('[data-room-cmd-curl]').textContent)`)
	tok := eval[string](t, ctx, `/Bearer ([A-Za-z0-9_-]+)/.exec(document.querySelector('[data-room-cmd-curl]').textContent)[1]`)
	line := `I1204 10:00:00.000000    1234 reconciler_common.go:231] "operationExecutor.MountVolume started for volume \"cache\" (UniqueName: \"kubernetes.io/empty-dir/uid-cache\") pod \"web\" (UID: \"uid\") " pod="default/web"` + "\n"
	req, _ := http.NewRequest("PUT", ts.URL+"/feeds/room-"+id+"/journal", strings.NewReader(line))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT the journal: %d", resp.StatusCode)
	}
	waitFor(t, ctx, "the relayed line in the live pane", `[...document.querySelectorAll('#live li.ll')].some(li => li.textContent.includes('operationExecutor.MountVolume started'))`)
}
