package server

// Browser tests for what a class meets on the page itself (issue 22): a
// follower who reloads keeps following, printing fits on paper, the header's
// tags scale, the floating pills leave the pane's lines readable, Back stays
// on the site, the hand-in is the student's.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
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

// shotsAll takes a screenshot of the page in ctx at every viewport, light
// and dark, after prepare (run after each resize, may be nil); it leaves
// the window at 1440×900, light.
func shotsAll(t *testing.T, ctx context.Context, name string, prepare func(v viewport)) {
	t.Helper()
	for _, v := range viewports {
		for _, dark := range []bool{false, true} {
			setView(t, ctx, v, dark)
			if prepare != nil {
				prepare(v)
			}
			time.Sleep(200 * time.Millisecond)
			screenshot(t, ctx, fmt.Sprintf("%s-%s-%s.png", name, v.name, themeName(dark)), false)
		}
	}
	setView(t, ctx, viewports[0], false)
}

// TestBrowserHeaderTags: a server that has read 21 tags shows one tag
// control in the header, which suggests them all, not a link per tag; the
// header stays one row wide and a few tab stops long; the switcher on the
// pod_workers page opens the other tag's pod_workers page.
func TestBrowserHeaderTags(t *testing.T) {
	ctx := newBrowser(t)
	var others []string
	for minor := 20; minor <= 36; minor++ {
		others = append(others, fmt.Sprintf("v1.%d.0", minor))
	}
	others = append(others, "v1.36.1", "v1.36.2", "v1.37.0", "v1.37.1")
	s := newRealServerTags(t, others...)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	watch := watchPage(t, ctx, ts)
	tag := s.cfg.DefaultTag
	for _, page := range []string{"/k8s/" + tag + "/", "/k8s/" + tag + "/pod-workers"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+page), chromedp.WaitReady("header.site")); err != nil {
			t.Fatal(err)
		}
		type header struct {
			Suggested, TagLinks, TabStops, Rows int
		}
		h := eval[header](t, ctx, `({
			Suggested: document.querySelectorAll('header.site #cached-tags option').length,
			TagLinks: [...document.querySelectorAll('header.site a')].filter(a => /^\/k8s\/v\d/.test(a.getAttribute('href')) && a.offsetParent !== null && !a.closest('[popover]')).length,
			TabStops: [...document.querySelectorAll('header.site :is(a, button, input:not([type=hidden]))')].filter(e => e.offsetParent !== null && e.tabIndex >= 0 && !e.closest('[popover]')).length,
			Rows: `+headerRows+`})`)
		if h.Suggested != len(others)+1 || h.TagLinks > 3 || h.TabStops > 10 || h.Rows != 1 {
			t.Errorf("%s: %+v; want %d tags suggested by one input, no link per tag, at most 10 tab stops, one row", page, h, len(others)+1)
		}
	}
	shotsAll(t, ctx, "header-tags", func(viewport) { chromedp.Run(ctx, chromedp.ScrollIntoView("header.site")) })
	// The switcher on pod_workers stays on pod_workers.
	if err := chromedp.Do(ctx, chromedp.SetValue("#tag-input", "v1.31.0"), chromedp.Submit("#tag-input")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "v1.31.0's pod_workers page", `location.pathname === '/k8s/v1.31.0/pod-workers' && !!document.querySelector('section.type')`)
	watch.check(t)
}

// pdfPages counts the pages of a PDF Chromium printed: its /Type /Page
// objects (not /Pages, the tree's nodes). Chromium writes page objects
// uncompressed; a count of zero says the PDF is not one we can read.
func pdfPages(t *testing.T, pdf []byte) int {
	t.Helper()
	n := len(regexp.MustCompile(`/Type\s*/Page\b`).FindAll(pdf, -1))
	if n == 0 {
		t.Fatalf("no /Type /Page object in a %d-byte PDF (starts %q)", len(pdf), pdf[:min(len(pdf), 16)])
	}
	return n
}

// printA4 prints the page in ctx to an A4 PDF as Chromium's print dialog
// would (beforeprint and afterprint fired around it, backgrounds off),
// keeps it in artifacts/name.pdf and returns its page count.
func printA4(t *testing.T, ctx context.Context, name string) int {
	t.Helper()
	var pdf []byte
	if err := chromedp.Do(ctx, chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		res, err := chromedp.Call(ctx, page.PrintToPDF, page.PrintToPDFParams{PaperWidth: 210 / 25.4, PaperHeight: 297 / 25.4})
		pdf = res.Data
		return err
	})); err != nil {
		t.Fatalf("print %s: %v", name, err)
	}
	path := filepath.Join(artifacts(t), name+".pdf")
	if err := os.WriteFile(path, pdf, 0o644); err != nil {
		t.Fatal(err)
	}
	n := pdfPages(t, pdf)
	t.Logf("%s: %d A4 pages (%s)", name, n, path)
	return n
}

// narrowText lists the text blocks that print narrower than 40% of the
// paper's text width (the body's), in print media at the paper's width:
// a note, a reader's note or comment, the code, a worksheet answer.
const narrowText = `(() => {
	const W = document.body.getBoundingClientRect().width, out = [];
	for (const e of document.querySelectorAll('.seg > .margin, .seg > pre.code, .prose, .annot-print-text, .annot-view, .annot-comment, .annot-sheet, .annot-field')) {
		const r = e.getBoundingClientRect();
		if (e.offsetParent === null || r.height < 2 || !e.textContent.trim()) continue;
		if (r.width < 0.4 * W) out.push((e.closest('[id]')?.id || '') + ' ' + e.className + ': ' + Math.round(r.width) + ' of ' + Math.round(W) + ' px');
	}
	return out.slice(0, 8) })()`

// TestBrowserPrint: a reading page prints in at most 30 A4 pages, "Print
// with my annotation" in at most 20, the worksheet alone in at most 4; on
// paper no text column is narrower than 40% of the page's width, the
// reader's notes included.
func TestBrowserPrint(t *testing.T) {
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	// A reader who wrote a note on every case, the worksheet's answers and
	// a comment, as a class hands in.
	notes := map[string]map[string]string{}
	note := func(id, text string) { notes[id] = map[string]string{"id": id, "text": text, "author": "Ann"} }
	for _, c := range r.Function.Cases {
		note("case."+c.Key, "The "+c.Key+" case: what flows on its channel, who writes it, and what the handler does with a pod it has never seen. Two sentences of it, as a student writes them.")
		note("writer."+c.Key, "pkg/kubelet/config.(*PodConfig).Updates")
	}
	note("set.desired", "desired_state_of_world.go:53")
	note("set.actual", "actual_state_of_world.go:48")
	note("sentence", "Each case turns an event into a comparison of what should be with what is, so a missed event is caught by the next.")
	js, _ := json.Marshal(notes)
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
		t.Fatal(err)
	}
	eval[bool](t, ctx, `(localStorage.setItem('syncloop-notes-v1', `+jsString(string(js))+`), localStorage.setItem('syncloop-name', 'Ann'), true)`)
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady("#your-worksheet")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the notes back", `document.querySelector('[data-annotate="config"]')?.value.startsWith('The config case')`)
	if !eval[bool](t, ctx, `[...document.querySelectorAll('#your-worksheet button')].some(b => b.textContent === 'Print the worksheet')`) {
		t.Error("the worksheet has no \"Print the worksheet\" button")
	}

	// In print media at the paper's text width (A4, 1.2 cm margins: 186 mm).
	paper := func(t *testing.T, what string) {
		t.Helper()
		if err := chromedp.Do(ctx, media(emulation.SetEmulatedMediaParams{Media: "print"}), chromedp.EmulateViewport(703, 1000)); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, ctx, `(window.dispatchEvent(new Event('beforeprint')), true)`)
		if n := eval[[]string](t, ctx, narrowText); len(n) > 0 {
			t.Errorf("%s: text narrower than 40%% of the page on paper: %q", what, n)
		}
		eval[bool](t, ctx, `(window.dispatchEvent(new Event('afterprint')), true)`)
		if err := chromedp.Do(ctx, media(emulation.SetEmulatedMediaParams{}), chromedp.EmulateViewport(1440, 900)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, class string
		max         int
	}{
		{"print-reading", "", 30},
		{"print-mine", "annot-print", 20},
		{"print-worksheet", "annot-print-sheet", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.class != "" {
				eval[bool](t, ctx, `(document.body.classList.add('`+tc.class+`'), true)`)
			}
			paper(t, tc.name)
			if tc.class != "" {
				eval[bool](t, ctx, `(document.body.classList.add('`+tc.class+`'), true)`) // afterprint took it off
			}
			if n := printA4(t, ctx, tc.name); n > tc.max {
				t.Errorf("%s: %d A4 pages, want at most %d", tc.name, n, tc.max)
			}
			if tc.class != "" {
				eval[bool](t, ctx, `(document.body.classList.remove('`+tc.class+`'), true)`)
			}
		})
	}
	watch.check(t)
}
