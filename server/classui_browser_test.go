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
	"strings"
	"testing"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor/diff"
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
			settle(t, ctx)
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
	t.Parallel()
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
	t.Parallel()
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

// TestBrowserHandInIsTheStudents: Export ▾ offers the site's filled-in
// worksheet as what it is, an answer key, last and apart from the reader's
// own; the reader's worksheet asks the whole exercise (an exercise that
// fired each channel, the pod_workers question) and hands it in; quiz mode
// hides the pod_workers page's note, and the answer key, until the reader
// has answered.
func TestBrowserHandInIsTheStudents(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("#your-worksheet")); err != nil {
		t.Fatal(err)
	}
	type menu struct {
		Items        []string
		Key, KeyName string
		KeyText      string
	}
	m := eval[menu](t, ctx, `(async () => { const a = document.querySelector('#export-menu a.answer-key');
		return {Items: [...document.querySelectorAll('#export-menu a')].map(a => a.textContent.trim()),
			Key: a?.getAttribute('href') || '', KeyName: a?.getAttribute('download') || '',
			KeyText: a ? (await (await fetch(a.href)).text()).slice(0, 400) : ''} })()`)
	if len(m.Items) == 0 || m.Items[len(m.Items)-1] != "Answer key (answer-key.md)" || m.Key != "/k8s/"+r.Tag+"/answer-key.md" || m.KeyName != "syncloop-answer-key-"+r.Tag+".md" {
		t.Errorf("Export ▾: %+v; want the answer key last, named answer-key.md", m)
	}
	for _, it := range m.Items {
		if strings.Contains(strings.ToLower(it), "download worksheet") {
			t.Errorf("Export ▾ offers %q: the site's answers labelled like a hand-in", it)
		}
	}
	if !strings.HasPrefix(m.KeyText, "# syncloop answer key:") || strings.Contains(m.KeyText, "Name: ___") {
		t.Errorf("answer-key.md does not say what it is:\n%s", m.KeyText)
	}
	if err := chromedp.Do(ctx, chromedp.Click(".export-button")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "Export ▾ open", `document.getElementById('export-menu').matches(':popover-open')`)
	shotsAll(t, ctx, "handin-export", func(viewport) {
		chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.getElementById('export-menu').matches(':popover-open') || document.getElementById('export-menu').showPopover(), true)`))
	})
	eval[bool](t, ctx, `(document.getElementById('export-menu').hidePopover(), true)`)

	// The whole exercise in the worksheet, and in the hand-in.
	for _, c := range r.Function.Cases {
		if !eval[bool](t, ctx, `!!document.querySelector('#your-worksheet [data-annot-field="exercise.`+c.Key+`"] input')`) {
			t.Errorf("the worksheet asks no exercise for %s", c.Key)
		}
	}
	if got := eval[string](t, ctx, `document.querySelector('[data-annot-field="podworkers"] .annot-label-text')?.textContent || ''`); got != "What guarantees that two goroutines never sync the same pod at once?" {
		t.Errorf("the pod_workers question: %q", got)
	}
	typeInto(t, ctx, `[data-annot-field="exercise.liveness"] input`, "a pod whose liveness probe fails")
	typeInto(t, ctx, `[data-annot-field="podworkers"] textarea`, "One goroutine per pod, and one pending update it overwrites.")
	waitFor(t, ctx, "both kept", `(() => { const n = JSON.parse(localStorage.getItem('syncloop-notes-v1') || '{}'); return !!(n['exercise.liveness']?.text && n.podworkers?.text) })()`)
	shotsAll(t, ctx, "handin-worksheet", func(viewport) {
		chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('.annot-exercises').scrollIntoView(), true)`))
	})
	md := eval[string](t, ctx, `fetch('/k8s/`+r.Tag+`/worksheet.md', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({notes: Object.values(JSON.parse(localStorage.getItem('syncloop-notes-v1')))})}).then(r => r.text())`)
	for _, want := range []string{"- Fired by the exercise: a pod whose liveness probe fails", "## pod_workers\n\nWhat guarantees that two goroutines never sync the same pod at once?\n\n```text\nOne goroutine per pod"} {
		if !strings.Contains(md, want) {
			t.Errorf("the hand-in lacks %q:\n%s", want, md)
		}
	}

	// Quiz mode: the pod_workers page's note waits for the answer.
	eval[bool](t, ctx, `(localStorage.removeItem('syncloop-revealed'), document.querySelector('[data-annot-quiz]').click(), true)`)
	waitFor(t, ctx, "quiz mode", `document.body.classList.contains('annot-quiz')`)
	type pw struct {
		Note, Told, Key string
	}
	pwState := `({Note: getComputedStyle(document.querySelector('main.pod-workers .note-wide')).display,
		Told: getComputedStyle(document.querySelector('.pw-quiz-hidden')).display,
		Key: getComputedStyle(document.querySelector('#export-menu a.answer-key')).display})`
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"pod-workers"), chromedp.WaitReady("section.type")); err != nil {
		t.Fatal(err)
	}
	if p := eval[pw](t, ctx, pwState); p.Note != "none" || p.Told == "none" || p.Key != "none" {
		t.Errorf("quiz mode on pod_workers: %+v; want its note and the answer key hidden, and told why", p)
	}
	shotsAll(t, ctx, "handin-pod-workers-quiz", nil)
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL), chromedp.WaitReady("#annot-podworkers")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the answer back", `document.querySelector('[data-annot-field="podworkers"] textarea').value !== ''`)
	if err := chromedp.Do(ctx, chromedp.Click(`#annot-podworkers [data-annot-reveal="pod-workers"]`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(pageURL+"pod-workers"), chromedp.WaitReady("section.type")); err != nil {
		t.Fatal(err)
	}
	if p := eval[pw](t, ctx, pwState); p.Note == "none" || p.Told != "none" {
		t.Errorf("quiz mode on pod_workers, answered and revealed: %+v; want its note shown", p)
	}
	eval[bool](t, ctx, `(localStorage.removeItem('syncloop-quiz'), true)`)
	watch.check(t)
}

// pillsClear lists what covers the live pane's lines: the "Lines … ·
// Comment" bar or the "N new ↓ resume" button over the part of the list on
// view.
const pillsClear = `(() => {
	const l = document.querySelector('#live .live-lines'), out = [];
	if (!l || l.offsetParent === null || !l.clientHeight) return ['the pane\'s lines are not on view'];
	const lr = l.getBoundingClientRect();
	const box = {left: lr.left, right: lr.right, top: Math.max(lr.top, 0), bottom: Math.min(lr.top + l.clientHeight, innerHeight)};
	for (const sel of ['.annot-bar', '#live .live-more']) {
		const e = document.querySelector(sel);
		const r = e?.getBoundingClientRect();
		if (!e || e.hidden || !r.width || getComputedStyle(e).display === 'none') { out.push(sel + ' is not shown'); continue; }
		if (r.left < box.right - 1 && box.left < r.right - 1 && r.top < box.bottom - 1 && box.top < r.bottom - 1)
			out.push(sel + ' [' + [r.left, r.top, r.right, r.bottom].map(Math.round) + '] covers the lines [' + [box.left, box.top, box.right, box.bottom].map(Math.round) + ']');
	}
	return out })()`

// TestBrowserPageDetails: the floating pills cover none of the pane's
// lines at any width; a probe log line that lands in handleProbeSync offers
// the way on to its case; j and k leave a history entry each, so Back stays
// on the site.
func TestBrowserPageDetails(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	ts, r := demoSite(t)
	watch := watchPage(t, ctx, ts)
	pageURL := ts.URL + "/k8s/" + r.Tag + "/"
	var c1 = r.Function.Cases[1]

	t.Run("pills", func(t *testing.T) {
		for _, v := range viewports {
			for _, dark := range []bool{false, true} {
				openDemo(t, ctx, pageURL, v, dark, "housekeeping", 3)
				eval[bool](t, ctx, fmt.Sprintf(`(document.querySelector('#L%d a.ln').click(), true)`, c1.Start+1))
				waitFor(t, ctx, "the comment bar", `!document.querySelector('.annot-bar').hidden`)
				eval[bool](t, ctx, `(() => { const b = document.querySelector('#live .live-toggle'); if (b && b.getAttribute('aria-expanded') === 'false') b.click(); return true })()`)
				eval[bool](t, ctx, `(document.getElementById('live').livePane.pause(false), true)`)
				waitFor(t, ctx, "N new ↓ resume", `(() => { const m = document.querySelector('#live .live-more'); return !m.hidden && /^\d+ new/.test(m.textContent) })()`)
				name := fmt.Sprintf("pills-%s-%s", v.name, themeName(dark))
				if o := eval[[]string](t, ctx, pillsClear); len(o) > 0 {
					t.Errorf("%s: %q", name, o)
				}
				screenshot(t, ctx, name+".png", false)
				eval[bool](t, ctx, `(document.getElementById('live').livePane.resume(), true)`)
			}
		}
		setView(t, ctx, viewports[0], false)
	})

	t.Run("a probe line in handleProbeSync leads on to its case", func(t *testing.T) {
		openDemo(t, ctx, pageURL, viewports[0], false, "readiness", 1)
		// A readiness line logged in the helper, not in the case's own lines.
		seq := eval[int](t, ctx, `(() => { const sec = document.getElementById('case-readiness');
			const li = [...document.querySelectorAll('#live li.ll[data-case="readiness"]')].find(li => { const l = document.getElementById('L' + li.dataset.line); return l && !sec.contains(l) && l.closest('details.helper') });
			return li ? Number(li.dataset.seq) : 0 })()`)
		if seq == 0 {
			t.Fatal("no readiness line of the demo is logged in a helper")
		}
		if err := chromedp.Do(ctx, chromedp.Click(fmt.Sprintf(`#live li.ll[data-seq="%d"]`, seq))); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the way on to readiness, in view", `(() => { const a = document.querySelector('details.helper [data-helper-case="readiness"] a[href="#case-readiness"]');
			if (!a) return false; const r = a.getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight && r.width > 0 })()`)
		shotsAll(t, ctx, "helper-to-case", func(viewport) {
			chromedp.Run(ctx, chromedp.Evaluate[bool](`(document.querySelector('[data-helper-case]').scrollIntoView({block: 'start'}), true)`))
		})
		if err := chromedp.Do(ctx, chromedp.Click(`[data-helper-case="readiness"] a`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "readiness selected and at the top", `(() => { const c = document.getElementById('case-readiness'); const y = c.getBoundingClientRect().top;
			return c.classList.contains('selected') && y >= -2 && y < 120 && !document.querySelector('[data-helper-case]') })()`)
	})

	t.Run("j and k, then Back, stay on the site", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate("about:blank"), chromedp.Navigate(pageURL), chromedp.WaitReady("section.case")); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, ctx, `(document.activeElement?.blur(), true)`)
		for _, k := range []string{"j", "j", "j", "k"} {
			if err := chromedp.Do(ctx, chromedp.KeyEvent(k)); err != nil {
				t.Fatal(err)
			}
		}
		k0, k1, k2 := r.Function.Cases[0].Key, r.Function.Cases[1].Key, r.Function.Cases[2].Key
		waitFor(t, ctx, "at "+k1, `location.hash === '#case-`+k1+`'`)
		for _, want := range []string{k2, k1, k0} {
			eval[bool](t, ctx, `(history.back(), true)`)
			waitFor(t, ctx, "Back to "+want, `location.pathname === '/k8s/`+r.Tag+`/' && location.hash === '#case-`+want+`' && document.getElementById('case-`+want+`').classList.contains('selected')`)
		}
	})

	watch.check(t)
}

// TestBrowserSkipLinks: the compare and history pages' skip links have a
// target (and pod_workers' still does).
func TestBrowserSkipLinks(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := realReading(t)
	// The history page reads every minor release up to the default.
	hs := httptest.NewServer(newRealServerTags(t, diff.MinorTags(r.Tag)...))
	t.Cleanup(hs.Close)
	watch := watchPage(t, ctx, hs)
	for _, p := range []string{"/k8s/compare/v1.36.0..." + r.Tag, "/k8s/history/pleg", "/k8s/" + r.Tag + "/pod-workers"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(hs.URL+p), chromedp.WaitReady("body")); err != nil {
			t.Fatal(err)
		}
		if missing := eval[[]string](t, ctx, `[...document.querySelectorAll('a.skip')].filter(a => !document.getElementById(a.getAttribute('href').slice(1))).map(a => a.getAttribute('href'))`); len(missing) > 0 || eval[int](t, ctx, `document.querySelectorAll('a.skip').length`) == 0 {
			t.Errorf("%s: skip links without a target: %q", p, missing)
		}
	}
	watch.check(t)
}
