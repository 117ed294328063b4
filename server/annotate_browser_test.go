package server

// Readers' own notes in Chromium (static/annotate.js, server/annotations):
// two browser contexts (two people's browsers) in one room write, see each
// other's notes within a second, reload, meet a conflict and merge it,
// follow the room to another tag where a line comment re-anchors, and
// download the hand-in; hostile notes stay text on the other's page. Alone,
// notes survive a reload in localStorage, quiz mode hides the site's notes
// until the reader has written theirs, and a comment written at v1.30.0
// shows as changed at v1.36.0.

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/browsertest"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// newAnnotateServer serves the real Readings of v1.30.0 (the default here)
// and v1.36.0, where the config case's logging calls changed.
func newAnnotateServer(t *testing.T, edit func(*Config), tune ...func(*Plan)) *httptest.Server {
	t.Helper()
	extractortest.NeedNetwork(t)
	extractortest.Prefetch("v1.30.0", "v1.36.0")
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{}}
	for _, tag := range []string{"v1.30.0", "v1.36.0"} {
		fl.Readings[tag] = extractortest.Reading(t, tag, content.Symbols())
	}
	cfg := Config{DefaultTag: "v1.30.0", CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }, DemoPeriod: -1}
	if edit != nil {
		edit(&cfg)
	}
	s, err := openTuned(cfg, tune...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, "v1.30.0")
	waitLoaded(t, s, "v1.36.0")
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

// The ADD log line of the config case, as the test in
// server/annotations/anchor read it: v1.30.0 kubelet.go:2423, and at
// v1.36.0 line 2709, where klog.V(2).InfoS became logger.V(2).Info.
const (
	addLine30 = 2423
	addLine36 = 2709
)

// overflowing lists the elements wider than the window (the first few).
const overflowing = `document.documentElement.scrollWidth <= innerWidth + 1 ? [] :
	[...document.querySelectorAll('body *')].filter(e => e.getBoundingClientRect().right > innerWidth + 1 && getComputedStyle(e).position !== 'fixed')
	.slice(-6).map(e => e.tagName + '.' + e.className + ' in ' + e.parentElement.tagName + '.' + e.parentElement.className + ' ' + (e.textContent || '').slice(0, 30) + ' ' + Math.round(e.getBoundingClientRect().right))`

// jsJSON is s as a JavaScript string literal, newlines and all.
func jsJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// media emulates a media type or feature.
func media(p emulation.SetEmulatedMediaParams) chromedp.Action[chromedp.Void] {
	return chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, p)
		return err
	})
}

// allowDownloads saves the browser's downloads in dir.
func allowDownloads(t *testing.T, ctx context.Context, dir string) {
	t.Helper()
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{Behavior: browser.SetDownloadBehaviorBehaviorAllow, DownloadPath: dir, BrowserContextID: browsertest.ContextID(ctx)}); err != nil {
		t.Fatal(err)
	}
}

// typeInto types text into the field as a reader would.
func typeInto(t *testing.T, ctx context.Context, sel, text string) {
	t.Helper()
	tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := chromedp.Do(tctx, chromedp.ScrollIntoView(sel), chromedp.Click(sel), chromedp.SendKeys(sel, text)); err != nil {
		screenshot(t, ctx, "annotate-failed-typing.png", false)
		t.Fatalf("type into %s: %v", sel, err)
	}
}

func setName(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	eval[bool](t, ctx, `(() => { localStorage.setItem('syncloop-name', `+jsString(name)+`); const i = document.querySelector('[data-room-name]'); if (i) { i.value = `+jsString(name)+`; i.dispatchEvent(new Event('change')) } return true })()`)
}

// commentOn selects lines lo..hi by their numbers and comments on them.
func commentOn(t *testing.T, ctx context.Context, lo, hi int, text string) {
	t.Helper()
	sel := func(n int) string { return `#L` + itoa(n) + ` a.ln` }
	if err := chromedp.Do(ctx, chromedp.ScrollIntoView(sel(lo)), chromedp.Click(sel(lo))); err != nil {
		t.Fatal(err)
	}
	if hi != lo {
		if err := chromedp.Do(ctx, chromedp.Click(sel(hi), chromedp.NodeVisible), chromedp.KeyEvent("")); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, ctx, "the comment bar", `!document.querySelector('.annot-bar').hidden`)
	if err := chromedp.Do(ctx, chromedp.Click(`[data-annot-comment]`)); err != nil {
		t.Fatal(err)
	}
	typeInto(t, ctx, `[data-annot-new-comment]`, text)
	if err := chromedp.Do(ctx, chromedp.Click(`form.annot-new button[type=submit]`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the comment in the margin", `[...document.querySelectorAll('.annot-comment')].some(c => c.textContent.includes(`+jsString(text)+`))`)
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestBrowserAnnotateRoom(t *testing.T) {
	ts := newAnnotateServer(t, nil) // first: the browser's time starts with it
	driver := newBrowser(t)
	watchD := watchPage(t, driver, ts)
	if err := chromedp.Do(driver, enableNetwork, chromedp.Navigate(ts.URL+"/k8s/v1.30.0/"), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
		t.Fatal(err)
	}
	setName(t, driver, "Ann")
	if err := chromedp.Do(driver, chromedp.Click("form.pair-start button")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, driver, "the room", `location.pathname.startsWith('/rooms/') && document.body.classList.contains('annot-live')`)
	id := eval[string](t, driver, `document.getElementById('room').dataset.room`)
	key := eval[string](t, driver, `sessionStorage.getItem('syncloop-room-key-`+id+`')`)

	viewer, cancelV := chromedp.NewContext(driver, chromedp.WithNewBrowserContext())
	t.Cleanup(cancelV)
	watchV := watchPage(t, viewer, ts)
	if err := chromedp.Do(viewer, enableNetwork, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#room")); err != nil {
		t.Fatal(err)
	}
	// A name with a right-to-left override, which must not reorder what
	// the others read.
	setName(t, viewer, "Bob\u202e")
	waitFor(t, viewer, "the viewer's notes live", `document.body.classList.contains('annot-live')`)

	t.Run("what one writes, the other sees within a second", func(t *testing.T) {
		text := "Pod specs from the sources, merged by **podStorage**"
		seen := `document.querySelector('[data-annotate="config"]').value === ` + jsString(text)
		markEvent(t, driver, "syncloopTyped", `[data-annotate="config"]`, "input")
		markWhen(t, viewer, "syncloopSeen", seen)
		typing := time.Now()
		typeInto(t, driver, `[data-annotate="config"]`, text)
		start := time.Now()
		waitFor(t, viewer, "Ann's note", seen)
		outer := time.Since(start)
		// The clock starts when the last key is typed (the driver's page
		// notes each input): the page waits 350 ms for more typing, then
		// saves; the bucket's watcher sends it.
		took := between(t, driver, "syncloopTyped", viewer, "syncloopSeen", typing)
		if took > time.Second {
			t.Errorf("the viewer saw it %v after Ann's last key, want within a second", took)
		}
		t.Logf("the viewer saw Ann's note %v after her last key (%v as the test saw it, from typeInto's return)", took.Round(time.Millisecond), outer.Round(time.Millisecond))
		waitFor(t, viewer, "its author", `document.querySelector('[data-annot-field="case.config"] .annot-author')?.textContent === 'Ann'`)
		waitFor(t, viewer, "rendered", `document.querySelector('[data-annot-field="case.config"] .annot-view strong')?.textContent === 'podStorage'`)
	})

	t.Run("hostile notes stay text on the other's page", func(t *testing.T) {
		long := strings.Repeat("x", 3000)
		text := `<img src=x onerror="window.__pwned=1"> [click me](javascript:window.__pwned=1) <script>window.__pwned=1</script> ` + long
		eval[bool](t, viewer, `(() => { const i = document.querySelector('[data-annotate="pleg"]'); i.value = `+jsString(text)+`; i.dispatchEvent(new Event('input')); return true })()`)
		waitFor(t, driver, "Bob's note", `document.querySelector('[data-annotate="pleg"]').value.includes('onerror')`)
		waitFor(t, driver, "rendered", `!document.querySelector('[data-annot-field="case.pleg"] .annot-view').hidden`)
		eval[bool](t, driver, `(() => { document.querySelector('[data-annot-field="case.pleg"]').scrollIntoView(); scrollBy(0, -60); return true })()`)
		for _, js := range []string{
			`document.querySelectorAll('.annot-case img, .annot-case script, .annot-view img').length === 0`,
			`![...document.querySelectorAll('.annot-case a')].some(a => /^\s*javascript:/i.test(a.getAttribute('href') || ''))`,
			`window.__pwned === undefined`,
			`document.documentElement.scrollWidth <= window.innerWidth + 1`,
			`!document.querySelector('[data-annot-field="case.pleg"] .annot-author').textContent.includes('\u202e')`,
			`document.querySelector('[data-annot-field="case.pleg"] .annot-author').textContent === 'Bob'`,
		} {
			if !eval[bool](t, driver, js) {
				t.Errorf("on Ann's page: %s is false", js)
			}
		}
		screenshot(t, driver, "annotate-room-hostile.png", false)
	})

	t.Run("a comment on a line, in the margin beside it", func(t *testing.T) {
		commentOn(t, viewer, addLine30, addLine30, "the ADD log: V(2)")
		waitFor(t, driver, "Bob's comment beside L2423", `[...document.querySelectorAll('#case-config .annot-comment')].some(c => c.textContent.includes('the ADD log') && c.querySelector('.annot-lines').textContent === 'L`+itoa(addLine30)+`')`)
		if !eval[bool](t, driver, `document.getElementById('L`+itoa(addLine30)+`').classList.contains('commented')`) {
			t.Error("the commented line is not marked")
		}
	})

	t.Run("reload", func(t *testing.T) {
		if err := chromedp.Do(viewer, chromedp.Reload(), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "the notes again", `document.querySelector('[data-annotate="config"]').value.startsWith('Pod specs') && document.querySelectorAll('.annot-comment').length === 1`)
	})

	t.Run("a comment is answered and edited; an edit crossed by another's keeps both", func(t *testing.T) {
		card := `[...document.querySelectorAll('#case-config .annot-comment')].find(c => c.textContent.includes('the ADD log'))`
		eval[bool](t, driver, `(() => { const b = `+card+`.querySelector('[data-annot-reply]'); b.scrollIntoView({block: 'center'}); b.click(); return true })()`)
		typeInto(t, driver, `form.annot-reply-form textarea`, "and V(4) for RECONCILE")
		if err := chromedp.Do(driver, chromedp.Click(`form.annot-reply-form button[type=submit]`)); err != nil {
			t.Fatal(err)
		}
		reply := `[...document.querySelectorAll('#case-config .annot-comment')].find(c => c.textContent.includes('V(4) for RECONCILE'))`
		waitFor(t, viewer, "Ann's reply under Bob's comment", `(() => { const r = `+reply+`, c = `+card+`; return !!r && r.classList.contains('annot-reply') && c.nextElementSibling === r && r.querySelector('.annot-lines').textContent === 'L`+itoa(addLine30)+`' })()`)

		// Both open an edit of Bob's comment; Ann saves first.
		open := func(p context.Context) {
			eval[bool](t, p, `(() => { `+card+`.querySelector('[data-annot-edit]').click(); return true })()`)
			waitFor(t, p, "the edit box", `!!`+card+`?.querySelector('form.annot-edit textarea')`)
		}
		open(driver)
		open(viewer)
		edit := func(p context.Context, text string) {
			eval[bool](t, p, `(() => { const f = `+card+`.querySelector('form.annot-edit'); f.querySelector('textarea').value = `+jsJSON(text)+`; f.querySelector('button[type=submit]').click(); return true })()`)
		}
		edit(driver, "the ADD log: V(2), Ann says")
		waitFor(t, viewer, "Ann's edit above Bob's open box, his text kept", `(() => { const c = `+card+`; const f = c?.querySelector('form.annot-edit'); return !!f && c.querySelector('.annot-comment-body').textContent.includes('Ann says') && f.querySelector('textarea').value === 'the ADD log: V(2)' && f.querySelector('.annot-form-msg').textContent.includes('Changed by Ann meanwhile') })()`)
		edit(viewer, "the ADD log: V(2), at every ADD")
		diag := func() {
			for _, p := range []context.Context{driver, viewer} {
				t.Log(eval[string](t, p, `[...document.querySelectorAll('#case-config .annot-comment')].map(c => c.className + ' :: ' + c.textContent.slice(0, 300) + ' :: ' + (c.querySelector('form.annot-edit textarea')?.value || '-')).join(' ## ') + ' TOAST ' + document.getElementById('toast')?.textContent`))
			}
		}
		if !testwait.Until(10*time.Second, func() bool {
			return eval[bool](t, driver, `(() => { const c = `+card+`; return !!c && c.querySelector('.annot-comment-body').textContent.includes('at every ADD') && !c.querySelector('form.annot-edit') })()`)
		}) {
			diag()
			t.Fatal("Bob's edit not on Ann's page")
		}
		for _, p := range []context.Context{driver, viewer} {
			if !eval[bool](t, p, `(() => { const c = `+card+`, r = `+reply+`; return !c.classList.contains('annot-reply') && c.nextElementSibling === r && r.classList.contains('annot-reply') })()`) {
				t.Error("after the edit, the comment is no longer first in its thread")
			}
		}
		if err := chromedp.Do(viewer, chromedp.ScrollIntoView(`#L`+itoa(addLine30))); err != nil {
			t.Fatal(err)
		}
		screenshot(t, viewer, "annotate-room-thread.png", false)
	})

	t.Run("a conflict is merged, not lost", func(t *testing.T) {
		typeInto(t, driver, `[data-annot-field="sentence"] textarea`, "Each case re-reads the state.")
		waitFor(t, viewer, "Ann's sentence", `document.querySelector('[data-annot-field="sentence"] textarea').value === 'Each case re-reads the state.'`)
		// Bob types; before his save goes out, Dana's lands from elsewhere.
		eval[bool](t, viewer, `(() => { const i = document.querySelector('[data-annot-field="sentence"] textarea'); i.focus(); i.value += ' Bob adds this.'; i.dispatchEvent(new Event('input')); return true })()`)
		rev := eval[float64](t, driver, `fetch(location.pathname + '/notes').then(r => r.json()).then(b => b.views.find(v => v.id === 'sentence').rev)`)
		code, m := notesReq(t, "PUT", ts.URL+"/rooms/"+id+"/notes/sentence", map[string]any{"text": "Dana's own sentence.", "rev": rev, "author": "Dana", "color": 5})
		if code != 200 {
			t.Fatalf("Dana's PUT: %d %v", code, m)
		}
		waitFor(t, viewer, "the merge prompt", `(() => { const c = document.querySelector('[data-annot-field="sentence"] .annot-conflict'); return !c.hidden && c.textContent.includes('Changed by Dana meanwhile — merge') && c.textContent.includes("Dana's own sentence.") })()`)
		if v := eval[string](t, viewer, `document.querySelector('[data-annot-field="sentence"] textarea').value`); v != "Each case re-reads the state. Bob adds this." {
			t.Errorf("Bob's box holds %q, want his text kept", v)
		}
		screenshot(t, viewer, "annotate-room-conflict.png", false)
		eval[bool](t, viewer, `(() => { document.querySelector('[data-annot-field="sentence"] [data-merge="both"]').click(); return true })()`)
		want := "Dana's own sentence.\n\nEach case re-reads the state. Bob adds this."
		waitFor(t, viewer, "the merge saved", `document.querySelector('[data-annot-field="sentence"] .annot-conflict').hidden`)
		waitFor(t, driver, "both texts on Ann's page", `document.querySelector('[data-annot-field="sentence"] textarea').value === `+jsJSON(want))
	})

	t.Run("both edit one note before either save lands: both texts survive", func(t *testing.T) {
		const field = `[data-annot-field="case.sync"]`
		box := func(p context.Context) string {
			return eval[string](t, p, `document.querySelector('`+field+` textarea').value`)
		}
		set := func(p context.Context, text string) {
			eval[bool](t, p, `(() => { const i = document.querySelector('`+field+` textarea'); i.focus(); i.value = `+jsJSON(text)+`; i.dispatchEvent(new Event('input')); return true })()`)
		}
		prompt := `!document.querySelector('` + field + ` .annot-conflict').hidden`
		// Within the 350 ms each page waits for more typing: neither save
		// has gone out when the other types.
		set(driver, "Ann: the periodic sync re-queues every pod worker.")
		set(viewer, "Bob: a safety net for missed PLEG events.")
		var loser, winner context.Context
		var loserText, winnerText, winnerName string
		testwait.Until(10*time.Second, func() bool {
			switch {
			case eval[bool](t, driver, prompt):
				loser, winner, loserText, winnerText, winnerName = driver, viewer, "Ann: the periodic sync re-queues every pod worker.", "Bob: a safety net for missed PLEG events.", "Bob"
			case eval[bool](t, viewer, prompt):
				loser, winner, loserText, winnerText, winnerName = viewer, driver, "Bob: a safety net for missed PLEG events.", "Ann: the periodic sync re-queues every pod worker.", "Ann"
			}
			return loser != nil
		})
		if loser == nil {
			t.Fatalf("no merge prompt on either page; Ann's box %q, Bob's %q", box(driver), box(viewer))
		}
		if eval[bool](t, winner, prompt) {
			t.Error("both pages show the merge prompt: one of the two saves landed")
		}
		inPrompt := func(p context.Context, cls string) string {
			return eval[string](t, p, `document.querySelector('`+field+` .annot-conflict .`+cls+`')?.textContent || ''`)
		}
		if got := inPrompt(loser, "annot-theirs"); got != winnerText {
			t.Errorf("the prompt's other text: %q, want %q", got, winnerText)
		}
		if got := inPrompt(loser, "annot-mine"); got != loserText {
			t.Errorf("the prompt's own text: %q, want %q", got, loserText)
		}
		if head := inPrompt(loser, "annot-conflict-head"); !strings.Contains(head, "Changed by "+winnerName+" meanwhile — merge") {
			t.Errorf("the prompt says %q", head)
		}
		serverText := func() string {
			return eval[string](t, winner, `fetch(location.pathname + '/notes').then(r => r.json()).then(b => b.views.find(v => v.id === 'case.sync').text)`)
		}

		// The loser types on with the prompt open: the prompt follows, and
		// no auto-save overwrites the other's text (before: it did, from
		// the other's revision, and "Keep both" merged a stale copy).
		eval[bool](t, loser, `(() => { const i = document.querySelector('`+field+` textarea'); i.value += ' And more.'; i.dispatchEvent(new Event('input')); i.blur(); return true })()`)
		loserText += " And more."
		time.Sleep(1200 * time.Millisecond) // sleep: three saves' worth, in which an auto-save would have gone out
		if got := serverText(); got != winnerText {
			t.Errorf("with the prompt open, the server's text became %q, want the other's %q kept", got, winnerText)
		}
		if got := inPrompt(loser, "annot-mine"); got != loserText {
			t.Errorf("the prompt's own text after typing on: %q, want %q", got, loserText)
		}

		// The winner edits again: the loser's box keeps the unsaved text,
		// and the prompt shows the newest other text (before: the box was
		// replaced by it).
		set(winner, winnerText+" Edited.")
		winnerText += " Edited."
		testwait.Until(5*time.Second, func() bool { return serverText() == winnerText }) // the checks below say what came
		time.Sleep(500 * time.Millisecond)                                               // sleep: a window for its live event, which reaches the other page in milliseconds
		if got := box(loser); got != loserText {
			t.Errorf("a remote update replaced the unsaved box: %q, want %q", got, loserText)
		}
		waitFor(t, loser, "the newest other text in the prompt", `document.querySelector('`+field+` .annot-theirs')?.textContent === `+jsJSON(winnerText))
		screenshot(t, loser, "annotate-room-conflict-live.png", false)

		eval[bool](t, loser, `(() => { document.querySelector('`+field+` [data-merge="both"]').click(); return true })()`)
		want := winnerText + "\n\n" + loserText
		waitFor(t, loser, "the merge saved", `document.querySelector('`+field+` .annot-conflict').hidden && document.querySelector('`+field+` .annot-by')?.textContent.includes('last changed by')`)
		waitFor(t, winner, "the merged text on the other page", `document.querySelector('`+field+` textarea').value === `+jsJSON(want))
		if got := serverText(); got != want {
			t.Errorf("the server's text %q, want both: %q", got, want)
		}
	})

	t.Run("typed, then the page is left at once: the text is saved", func(t *testing.T) {
		const text = "Housekeeping: the whole desired set, every two seconds."
		// The page goes away in the same task as the keystroke: the
		// 350 ms wait for more typing never ends.
		eval[bool](t, viewer, `(() => { const i = document.querySelector('[data-annotate="housekeeping"]'); i.value = `+jsJSON(text)+`; i.dispatchEvent(new Event('input')); location.href = '/'; return true })()`)
		waitFor(t, viewer, "the page left", `!location.pathname.startsWith('/rooms/')`)
		waitFor(t, driver, "Bob's last words on Ann's page", `document.querySelector('[data-annotate="housekeeping"]').value === `+jsJSON(text))
		if err := chromedp.Do(viewer, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady(`[data-annotate="housekeeping"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, viewer, "the text back in the room", `document.body.classList.contains('annot-live') && document.querySelector('[data-annotate="housekeeping"]').value === `+jsJSON(text))
	})

	t.Run("text typed here whose save never landed is back after a reload", func(t *testing.T) {
		// As if the tab closed with a save in flight: the draft this
		// browser kept. From the revision the server still has, it is
		// saved; from an older one, the merge prompt offers both.
		rev := func(id string) float64 {
			return eval[float64](t, viewer, `fetch(location.pathname + '/notes').then(r => r.json()).then(b => b.views.find(v => v.id === '`+id+`').rev)`)
		}
		drafts := map[string]any{id: map[string]any{
			"writer.sync":    map[string]any{"text": "the pod workers' requeue", "base": rev("writer.sync"), "at": time.Now().UnixMilli()},
			"case.readiness": map[string]any{"text": "Bob's lost readiness note", "base": 1, "at": time.Now().UnixMilli()},
		}}
		code, m := notesReq(t, "PUT", ts.URL+"/rooms/"+id+"/notes/case.readiness", map[string]any{"text": "Dana's readiness note", "rev": rev("case.readiness"), "author": "Dana", "color": 5})
		if code != 200 {
			t.Fatalf("Dana's PUT: %d %v", code, m)
		}
		waitFor(t, viewer, "Dana's note on Bob's page", `document.querySelector('[data-annotate="readiness"]').value === "Dana's readiness note"`)
		b, _ := json.Marshal(drafts)
		eval[bool](t, viewer, `(() => { localStorage.setItem('syncloop-drafts-v1', `+jsJSON(string(b))+`); return true })()`)
		if err := chromedp.Do(viewer, chromedp.Reload(), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, driver, "the saved draft on Ann's page", `document.querySelector('[data-annot-field="writer.sync"] input').value === "the pod workers' requeue"`)
		waitFor(t, viewer, "the merge prompt for the other", `(() => { const f = document.querySelector('[data-annot-field="case.readiness"]'); return !f.querySelector('.annot-conflict').hidden && f.querySelector('textarea').value === "Bob's lost readiness note" && f.querySelector('.annot-theirs').textContent === "Dana's readiness note" })()`)
		eval[bool](t, viewer, `(() => { document.querySelector('[data-annot-field="case.readiness"] [data-merge="both"]').click(); return true })()`)
		waitFor(t, driver, "both readiness notes on Ann's page", `document.querySelector('[data-annotate="readiness"]').value === "Dana's readiness note\n\nBob's lost readiness note"`)
		waitFor(t, viewer, "no drafts left once saved", `['', '{}'].includes(localStorage.getItem('syncloop-drafts-v1') || '')`)
	})

	t.Run("the hand-in downloads with its authors", func(t *testing.T) {
		dir := t.TempDir()
		allowDownloads(t, driver, dir)
		if err := chromedp.Do(driver, chromedp.ScrollIntoView(`[data-annot-export]`)); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, driver, `(() => { document.querySelector('[data-annot-export]').click(); return true })()`)
		var md []byte
		testwait.Until(10*time.Second, func() bool { // the checks below say what is missing
			if files, _ := filepath.Glob(filepath.Join(dir, "*.md")); len(files) == 1 {
				md, _ = os.ReadFile(files[0])
			}
			return len(md) > 0
		})
		for _, want := range []string{"Written by: Ann, Bob, Dana", "```text\nPod specs from the sources", "(Ann, ", "the ADD log: V(2)", "kubelet.go:2423 (Bob", "Dana's own sentence."} {
			if !strings.Contains(string(md), want) {
				t.Errorf("the downloaded worksheet lacks %q:\n%.600s", want, md)
			}
		}
		screenshot(t, driver, "annotate-room-sheet.png", false)
	})

	t.Run("the room moves to v1.36.0: the comment re-anchors as changed", func(t *testing.T) {
		ctx := testCtx(t)
		d := dialRoom(t, ctx, ts, id, key, "Ann's other tab")
		d.send(t, ctx, map[string]any{"t": "take"})
		d.send(t, ctx, map[string]any{"t": "tag", "tag": "v1.36.0"})
		for _, p := range []context.Context{driver, viewer} {
			waitFor(t, p, "the page at v1.36.0", `document.getElementById('live')?.dataset.tag === 'v1.36.0' && document.body.classList.contains('annot-live')`)
			waitFor(t, p, "the comment at L2709, changed", `(() => { const c = document.querySelector('#case-config .annot-comment.changed'); return !!c && c.querySelector('.annot-lines').textContent === 'L`+itoa(addLine36)+`' && c.textContent.includes('changed since v1.30.0') })()`)
		}
		if err := chromedp.Do(viewer, chromedp.ScrollIntoView(`#L`+itoa(addLine36))); err != nil {
			t.Fatal(err)
		}
		screenshot(t, viewer, "annotate-room-v1.36.0.png", false)
	})
	watchD.check(t)
	watchV.check(t)
}

func TestBrowserAnnotateAlone(t *testing.T) {
	t.Parallel()
	ts := newAnnotateServer(t, nil)
	ctx := newBrowser(t)
	watch := watchPage(t, ctx, ts)
	if err := chromedp.Do(ctx, enableNetwork, chromedp.Navigate(ts.URL+"/k8s/v1.30.0/"), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
		t.Fatal(err)
	}

	t.Run("quiz mode hides the site's note until mine is written", func(t *testing.T) {
		// What the site wrote that answers the worksheet: each case's note,
		// the two sets (their names, files and lines), the introduction.
		secrets := eval[[]string](t, ctx, `[
			...[...document.querySelectorAll('.seg.case .prose.note, .seg.case h3.note-title, #two-sets > h2, #two-sets .sightings a, section.intro > .prose p')].map(e => e.textContent.trim().slice(0, 60)),
			'DesiredStateOfWorld', 'ActualStateOfWorld'].filter(s => s.length > 8)`)
		if len(secrets) < 12 {
			t.Fatalf("the site's answers on the page: %q", secrets)
		}
		visible := func() string { return eval[string](t, ctx, `document.body.innerText`) }
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`[data-annot-quiz]`), chromedp.Click(`[data-annot-quiz]`)); err != nil {
			t.Fatal(err)
		}
		page := visible()
		for _, s := range secrets {
			if strings.Contains(page, s) {
				t.Errorf("quiz mode shows the site's %q before the reader wrote theirs", s)
			}
		}
		sets := `[data-annot-reveal="two-sets"]`
		if !eval[bool](t, ctx, `document.querySelector('`+sets+`').disabled && document.querySelector('[data-annot-reveal="intro"]').disabled`) {
			t.Error("the two sets or the introduction can be revealed before the reader wrote")
		}
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#two-sets`)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "annotate-quiz-sets-hidden.png", false)
		typeInto(t, ctx, `[data-annot-field="set.desired"] input`, "Desired, somewhere in volumemanager")
		if !eval[bool](t, ctx, `document.querySelector('`+sets+`').disabled`) {
			t.Error("the two sets can be revealed with one written")
		}
		typeInto(t, ctx, `[data-annot-field="set.actual"] input`, "Actual, beside it")
		waitFor(t, ctx, "the sets' reveal enabled", `!document.querySelector('`+sets+`').disabled`)
		if err := chromedp.Do(ctx, chromedp.Click(sets)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the two sets shown", `document.body.innerText.includes('DesiredStateOfWorld') && document.body.innerText.includes('ActualStateOfWorld')`)
		if strings.Contains(visible(), secrets[0]) {
			t.Error("revealing the two sets showed a case's note")
		}
		// Before annotate.js has run on a page loaded in quiz mode (as it
		// is while the module loads), nothing shows either.
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
			t.Fatal(err)
		}
		if !eval[bool](t, ctx, `document.documentElement.classList.contains('annot-quiz-early')`) {
			t.Error("the page in quiz mode is not marked before it is drawn")
		}
		eval[bool](t, ctx, `(() => { document.body.classList.remove('annot-on', 'annot-quiz'); document.getElementById('your-worksheet').remove(); for (const e of document.querySelectorAll('.annot-revealed')) e.classList.remove('annot-revealed'); return true })()`)
		page = visible()
		for _, s := range secrets {
			if strings.Contains(page, s) {
				t.Errorf("before annotate.js ran, quiz mode shows the site's %q", s)
			}
		}
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the notes back", `document.querySelector('[data-annotate="set.desired"], [data-annot-field="set.desired"] input').value !== ''`)
		// Empty again, for the tests below.
		eval[bool](t, ctx, `(() => { for (const i of document.querySelectorAll('[data-annot-field^="set."] input')) { i.value = ''; i.dispatchEvent(new Event('input')); i.blur() } return true })()`)
		if !eval[bool](t, ctx, `getComputedStyle(document.querySelector('#case-config .prose.note')).display === 'none'`) {
			t.Error("quiz mode shows the site's note")
		}
		if !eval[bool](t, ctx, `document.querySelector('[data-annot-reveal="config"]').disabled`) {
			t.Error("the reveal button works before the reader wrote")
		}
		typeInto(t, ctx, `[data-annotate="config"]`, "Config updates: ADD, UPDATE, REMOVE…")
		waitFor(t, ctx, "reveal enabled", `!document.querySelector('[data-annot-reveal="config"]').disabled`)
		if err := chromedp.Do(ctx, chromedp.Click(`[data-annot-reveal="config"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "side by side", `(() => {
			const mine = document.querySelector('#case-config .annot-case').getBoundingClientRect();
			const site = document.querySelector('#case-config .prose.note').getBoundingClientRect();
			return site.width > 300 && mine.width > 300 && Math.abs(mine.top - site.top) < 100 && site.left > mine.right - 1 })()`)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#case-config`)); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "annotate-quiz-revealed.png", false)
		if eval[bool](t, ctx, `!!document.querySelector('[data-annot-field="case.config"] .annot-check.empty')`) {
			t.Error(`a written note says "still empty"`)
		}
		if !eval[bool](t, ctx, `getComputedStyle(document.querySelector('#case-pleg .prose.note')).display === 'none'`) {
			t.Error("revealing config showed pleg's note")
		}
	})

	t.Run("a comment at v1.30.0, kept in this browser, changed at v1.36.0", func(t *testing.T) {
		commentOn(t, ctx, addLine30, addLine30, "klog here")
		typeInto(t, ctx, `[data-annot-field="set.desired"] input`, "volumemanager/cache/desired_state_of_world.go:1")
		waitFor(t, ctx, "the check", `document.querySelector('[data-annot-field="set.desired"] .annot-check.warn')?.textContent.startsWith('At v1.30.0 that is line')`)
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "kept after a reload", `document.querySelector('[data-annotate="config"]').value.startsWith('Config updates') && document.querySelectorAll('.annot-comment').length === 1`)
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/v1.36.0/#L"+itoa(addLine36)), chromedp.WaitReady(`[data-annotate="config"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "changed at v1.36.0", `(() => { const c = document.querySelector('#case-config .annot-comment.changed'); return !!c && c.querySelector('.annot-lines').textContent === 'L`+itoa(addLine36)+`' })()`)
		screenshot(t, ctx, "annotate-alone-v1.36.0.png", false)
	})

	t.Run("typed, then the page is left at once: the text is kept", func(t *testing.T) {
		const text = "Startup probes: the startup manager's updates."
		// The page goes away in the same task as the keystroke: the
		// 350 ms wait for more typing never ends.
		eval[bool](t, ctx, `(() => { const i = document.querySelector('[data-annotate="startup"]'); i.value = `+jsJSON(text)+`; i.dispatchEvent(new Event('input')); location.href = '/k8s/v1.30.0/'; return true })()`)
		waitFor(t, ctx, "the other page", `location.pathname === '/k8s/v1.30.0/'`)
		if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/v1.36.0/"), chromedp.WaitReady(`[data-annotate="startup"]`)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the text kept", `document.querySelector('[data-annotate="startup"]').value === `+jsJSON(text))
	})

	t.Run("a render answered after the note was saved does not empty its box", func(t *testing.T) {
		// The server renders the notes kept here after each write. A
		// render asked before housekeeping's note was written, and
		// answered after it was saved, carries the empty note's view: it
		// must not put "" back in the box (a blur would then save it).
		const text = "Housekeeping: every two seconds, the pods' cleanup."
		box := `[data-annotate="housekeeping"]`
		eval[bool](t, ctx, `(() => {
			const real = window.fetch;
			window.heldRenders = [];
			window.fetch = (url, opt) => String(url).endsWith('/notes') && opt?.method === 'POST'
				? new Promise((ok) => window.heldRenders.push(() => real(url, opt).then(ok)))
				: real(url, opt);
			return true })()`)
		// A write (the startup note again) asks for a render, held.
		eval[bool](t, ctx, `(() => { const i = document.querySelector('[data-annotate="startup"]'); i.value += ' Again.'; i.dispatchEvent(new Event('input')); i.blur(); return true })()`)
		waitFor(t, ctx, "a render asked and held", `window.heldRenders.length === 1`)
		eval[bool](t, ctx, `(() => { const i = document.querySelector('`+box+`'); i.value = `+jsJSON(text)+`; i.dispatchEvent(new Event('input')); i.blur(); return true })()`)
		waitFor(t, ctx, "the note's own render asked", `window.heldRenders.length === 2`)
		release := func(i int) {
			eval[bool](t, ctx, `(window.heldRenders[`+itoa(i)+`](), new Promise((ok) => setTimeout(() => ok(true), 500)))`)
		}
		release(1)
		release(0) // the older render answers last
		if got := eval[string](t, ctx, `document.querySelector('`+box+`').value`); got != text {
			t.Errorf("after a late render the box holds %q, want %q", got, text)
		}
		if eval[bool](t, ctx, `!!document.querySelector('[data-annot-field="case.housekeeping"] .annot-check.empty')`) {
			t.Error(`a written note says "still empty" after a late render`)
		}
		if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitReady(box)); err != nil {
			t.Fatal(err)
		}
		waitFor(t, ctx, "the note kept", `document.querySelector('`+box+`').value === `+jsJSON(text))
	})

	t.Run("screens", func(t *testing.T) {
		for _, sc := range []struct {
			name          string
			width, height int64
			dark          bool
		}{
			{"annotate-1440-light.png", 1440, 900, false},
			{"annotate-1440-dark.png", 1440, 900, true},
			{"annotate-1024-light.png", 1024, 768, false},
			{"annotate-1024-dark.png", 1024, 768, true},
			{"annotate-390-light.png", 390, 844, false},
			{"annotate-390-dark.png", 390, 844, true},
		} {
			scheme := "light"
			if sc.dark {
				scheme = "dark"
			}
			if err := chromedp.Do(ctx,
				chromedp.EmulateViewport(sc.width, sc.height),
				media(emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}}),
			); err != nil {
				t.Fatal(err)
			}
			if wide := eval[[]string](t, ctx, overflowing); len(wide) > 0 {
				t.Errorf("%s: the page scrolls sideways: %v", sc.name, wide)
			}
			eval[bool](t, ctx, `(() => { document.querySelector('#case-config').scrollIntoView(); return true })()`)
			screenshot(t, ctx, sc.name, false)
			eval[bool](t, ctx, `(() => { document.getElementById('your-worksheet').scrollIntoView(); return true })()`)
			screenshot(t, ctx, strings.Replace(sc.name, "annotate-", "annotate-sheet-", 1), false)
		}
		if err := chromedp.Do(ctx, media(emulation.SetEmulatedMediaParams{Media: "print"}), chromedp.EmulateViewport(1100, 1400),
			chromedp.ScrollIntoView(`#case-config`)); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, ctx, `document.body.classList.add('annot-print') || true`)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#case-config`)); err != nil {
			t.Fatal(err)
		}
		if !eval[bool](t, ctx, `getComputedStyle(document.querySelector('#case-config .prose.note')).display === 'none' && (() => { const p = document.querySelector('[data-annot-field="case.config"] .annot-print-text'); return getComputedStyle(p).display === 'block' && p.textContent.startsWith('Config updates') })()`) {
			t.Error("printing my annotation: the site's note shows, or mine does not")
		}
		screenshot(t, ctx, "annotate-print.png", false)
		eval[bool](t, ctx, `document.body.classList.remove('annot-print') || true`)
		if err := chromedp.Do(ctx, media(emulation.SetEmulatedMediaParams{}), chromedp.EmulateViewport(1440, 900)); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("export", func(t *testing.T) {
		md := eval[string](t, ctx, `fetch('/k8s/v1.36.0/worksheet.md', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({notes: Object.values(JSON.parse(localStorage.getItem('syncloop-notes-v1')))})}).then(r => r.text())`)
		for _, want := range []string{"\n\nMy notes\n\nSource: [", "```text\nConfig updates: ADD, UPDATE, REMOVE…", "kubelet.go:2709 (changed since v1.30.0, where it was line 2423)", "check: `At v1.36.0 that is line"} {
			if !strings.Contains(md, want) {
				t.Errorf("my worksheet lacks %q:\n%s", want, md)
			}
		}
		dir := t.TempDir()
		allowDownloads(t, ctx, dir)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`[data-annot-export]`), chromedp.Click(`[data-annot-export]`)); err != nil {
			t.Fatal(err)
		}
		var got []byte
		testwait.Until(10*time.Second, func() bool { // the check below says what came
			got, _ = os.ReadFile(filepath.Join(dir, "syncloop-worksheet-v1.36.0-mine.md"))
			return len(got) > 0
		})
		if !strings.Contains(string(got), "Config updates") {
			t.Errorf("the downloaded worksheet: %q", got)
		}
	})
	t.Run("a comment sits level with its line", func(t *testing.T) {
		const line = addLine36 + 19 // near the end of the config case at v1.36.0
		commentOn(t, ctx, line, line, "the last ADD-path line")
		level := `(() => { const c = [...document.querySelectorAll('#case-config .annot-comment')].find(c => c.textContent.includes('the last ADD-path line')); return Math.round(c.getBoundingClientRect().top - document.getElementById('L` + itoa(line) + `').getBoundingClientRect().top) })()`
		waitFor(t, ctx, "the comment level with L"+itoa(line), `Math.abs(`+level+`) <= 2`)
		// The earlier comment, on L2709, stays where it was, above.
		if !eval[bool](t, ctx, `(() => { const cs = [...document.querySelectorAll('#case-config .annot-comment')]; return cs.length === 2 && cs[0].textContent.includes('klog here') })()`) {
			t.Error("the comments are not in line order")
		}
		// An edit of my own comment, kept in this browser.
		eval[bool](t, ctx, `(() => { [...document.querySelectorAll('#case-config .annot-comment')].find(c => c.textContent.includes('klog here')).querySelector('[data-annot-edit]').click(); return true })()`)
		eval[bool](t, ctx, `(() => { const f = document.querySelector('form.annot-edit'); f.querySelector('textarea').value = 'klog here, then logger'; f.querySelector('button[type=submit]').click(); return true })()`)
		waitFor(t, ctx, "the edit kept", `JSON.parse(localStorage.getItem('syncloop-notes-v1')) && Object.values(JSON.parse(localStorage.getItem('syncloop-notes-v1'))).some(n => n.text === 'klog here, then logger') && [...document.querySelectorAll('.annot-comment-body')].some(b => b.textContent.includes('then logger'))`)
		if err := chromedp.Do(ctx, chromedp.ScrollIntoView(`#L`+itoa(line))); err != nil {
			t.Fatal(err)
		}
		screenshot(t, ctx, "annotate-comment-level.png", false)
	})
	watch.check(t)
}

// TestBrowserAnnotateRoomEnds: a page open on a room that ends with nothing
// written in it turns read-only and says so (before: no note was purged, so
// no event told it, and its writes went on failing unseen).
func TestBrowserAnnotateRoomEnds(t *testing.T) {
	t.Parallel()
	ts := newAnnotateServer(t, func(c *Config) { c.RoomTTL = 3 * time.Second },
		func(p *Plan) { p.Notes.RoomCheck = 200 * time.Millisecond })
	ctx := newBrowser(t)
	if err := chromedp.Do(ctx, enableNetwork, chromedp.Navigate(ts.URL+"/k8s/v1.30.0/"), chromedp.WaitReady(`form.pair-start button`), chromedp.Click("form.pair-start button")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the notes live", `document.body.classList.contains('annot-live')`)
	if n := eval[int](t, ctx, `fetch(location.pathname + '/notes').then(r => r.json()).then(b => b.views.filter(v => v.rev).length)`); n != 0 {
		t.Fatalf("%d notes written, want none", n)
	}
	start := time.Now()
	if !testwait.Until(15*time.Second, func() bool { return eval[bool](t, ctx, `!!document.querySelector('[data-annot-ended]')`) }) {
		t.Fatal("the page of an ended room still takes notes")
	}
	t.Logf("read-only %v after the room's TTL began", time.Since(start).Round(100*time.Millisecond))
	for _, js := range []string{
		`document.querySelector('[data-annot-ended]').textContent.startsWith('This room has ended; notes are read-only')`,
		`document.querySelector('[data-annot-ended]').getBoundingClientRect().height > 0`,
		`[...document.querySelectorAll('.annot-input')].every(i => i.readOnly)`,
		`document.querySelector('.annot-bar').hidden || getComputedStyle(document.querySelector('.annot-bar')).display === 'none'`,
	} {
		if !eval[bool](t, ctx, js) {
			t.Errorf("%s is false", js)
		}
	}
	// The room bar says so too, rather than go on saying who drives.
	waitFor(t, ctx, "the room bar to say the room expired", `document.querySelector('[data-room-role]').textContent === 'this room expired'`)
	// The room's worksheet went with it: the download is built from what
	// the page holds.
	dir := t.TempDir()
	allowDownloads(t, ctx, dir)
	eval[bool](t, ctx, `(() => { document.querySelector('[data-annot-export]').click(); return true })()`)
	var md []byte
	testwait.Until(10*time.Second, func() bool { // the check below says what came
		if files, _ := filepath.Glob(filepath.Join(dir, "*.md")); len(files) == 1 {
			md, _ = os.ReadFile(files[0])
		}
		return len(md) > 0
	})
	if !strings.Contains(string(md), "# syncloop worksheet") {
		t.Errorf("the ended room's download: %q", md)
	}
	eval[bool](t, ctx, `(() => { const m = document.querySelector('[data-room-more][aria-expanded="true"]'); if (m) m.click(); document.querySelector('#case-config').scrollIntoView(); scrollBy(0, -120); return true })()`)
	if !eval[bool](t, ctx, `(() => { const b = document.querySelector('[data-annot-ended]').getBoundingClientRect(); return b.top >= 0 && b.bottom < innerHeight })()`) {
		t.Error("scrolled down, the page no longer says the room has ended")
	}
	screenshot(t, ctx, "annotate-room-ended.png", false)
}
