package server

// serve --quiz in Chromium: a reader of a course's server sees none of the
// site's note text on the reading page nor on the pod_workers page, no
// "Written by", no answer key in the Export menu, and the answer key's
// address says the course hides it. The same text is read first from a
// server without --quiz, so that the test looks for what is really there.

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

func TestBrowserQuizServer(t *testing.T) {
	ctx := newBrowser(t)
	r := realReading(t)
	var plainTS *httptest.Server
	serve := func(quiz bool) string {
		fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
		s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }, DemoPeriod: -1, Quiz: quiz})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Close)
		waitLoaded(t, s, r.Tag)
		ts := httptest.NewServer(s)
		t.Cleanup(ts.Close)
		if !quiz {
			plainTS = ts
		}
		return ts.URL
	}
	plain, quiz := serve(false), serve(true)
	page, pw := "/k8s/"+r.Tag+"/", "/k8s/"+r.Tag+"/pod-workers"

	// What the site says, as a reader of the plain server reads it.
	type said struct {
		Notes, Written []string
		Intro          string
		AnswerKey      bool
		Sets           string // the worksheet's set fields, as labelled
		Elements       int    // cases that show their element type
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(plain+page), chromedp.WaitReady(`#function`)); err != nil {
		t.Fatal(err)
	}
	saidJS := `({
		Notes: [...document.querySelectorAll('.prose.note')].map(n => n.innerText.trim().slice(0, 80)).filter(Boolean),
		Written: [...document.querySelectorAll('.written-by')].map(n => n.innerText.trim()),
		Intro: (document.querySelector('#intro .prose')?.innerText || '').trim().slice(0, 80),
		AnswerKey: !!document.querySelector('#export-menu a.answer-key'),
		Sets: document.querySelector('.annot-sets')?.innerText || '',
		Elements: [...document.querySelectorAll('dl.facts dt')].filter(dt => dt.textContent === 'element').length,
	})`
	waitFor(t, ctx, "the worksheet", `!!document.querySelector('.annot-sets')`)
	before := eval[said](t, ctx, saidJS)
	if len(before.Notes) < 3 || len(before.Written) < 3 || before.Intro == "" || !before.AnswerKey ||
		!strings.Contains(before.Sets, "DesiredStateOfWorld is declared at") || before.Elements != len(r.Function.Cases) {
		t.Fatalf("without --quiz the page shows %d notes, %d Written by, intro %q, answer key %v, sets %q, %d element types: the test would test nothing",
			len(before.Notes), len(before.Written), before.Intro, before.AnswerKey, before.Sets, before.Elements)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(plain+pw), chromedp.WaitReady(`main.pod-workers`)); err != nil {
		t.Fatal(err)
	}
	pwNote := eval[string](t, ctx, `(document.querySelector('.note-wide')?.innerText || '').trim().slice(0, 80)`)
	if pwNote == "" {
		t.Fatal("without --quiz the pod_workers page has no note: the test would test nothing")
	}

	// The course's server.
	if err := chromedp.Do(ctx, chromedp.Navigate(quiz+page), chromedp.WaitReady(`#function`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the worksheet", `!!document.querySelector('.annot-sets')`)
	after := eval[said](t, ctx, saidJS)
	if len(after.Notes) != 0 || len(after.Written) != 0 || after.Intro != "" || after.AnswerKey || after.Elements != 0 {
		t.Errorf("with --quiz the page shows %d notes, %d Written by, intro %q, answer key %v, %d element types", len(after.Notes), len(after.Written), after.Intro, after.AnswerKey, after.Elements)
	}
	if !strings.Contains(after.Sets, "One set: its type and file:line") {
		t.Errorf("with --quiz the set fields read %q; want neutral labels", after.Sets)
	}
	text := eval[string](t, ctx, `document.body.innerText`)
	// Nothing the reader reads but the source (whose signature declares
	// some channels' types) names a set, an element type or a writer.
	prose := eval[string](t, ctx, `(() => {
		const b = document.body.cloneNode(true);
		b.querySelectorAll('pre.chroma').forEach(p => p.remove());
		return b.innerText;
	})()`)
	for _, a := range answerStrings(r) {
		if strings.Contains(prose, a) {
			t.Errorf("with --quiz the reader reads %q", a)
		}
	}
	for _, n := range append(before.Notes, before.Intro) {
		if n != "" && strings.Contains(text, n) {
			t.Errorf("with --quiz the reader reads the site's note %q", n)
		}
	}
	if !strings.Contains(text, "hides the site's notes") {
		t.Error("with --quiz the page does not say why the notes are missing")
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(quiz+pw), chromedp.WaitReady(`main.pod-workers`)); err != nil {
		t.Fatal(err)
	}
	if text := eval[string](t, ctx, `document.body.innerText`); strings.Contains(text, pwNote) {
		t.Errorf("with --quiz the pod_workers page shows its note %q", pwNote)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(quiz+page+"answer-key.md"), chromedp.WaitReady(`body`)); err != nil {
		t.Fatal(err)
	}
	if h := eval[string](t, ctx, `document.querySelector('h1')?.textContent || ''`); h != "This course hides the answer key" {
		t.Errorf("the answer key's address on a course's server shows %q", h)
	}
	screenshot(t, ctx, "quiz-answer-key.png", false)

	// A room of a class that hides the notes, on the server without
	// --quiz: once its scripts have run, no link and no form on its pages
	// leads to a page of that server that shows the notes.
	class, _ := createClass(t, plainTS, url.Values{"name": {"Sealed"}, "hide_notes": {"1"}})
	room, _, code := startClassRoom(t, plainTS, class)
	if code != http.StatusSeeOther {
		t.Fatalf("start a room of the class: %d", code)
	}
	const outward = `[...document.querySelectorAll('a[href], form[action]')]
		.map(e => new URL(e.getAttribute('href') ?? e.getAttribute('action'), location.href))
		.filter(u => u.origin === location.origin && (u.pathname === '/' || u.pathname.startsWith('/k8s/')))
		.map(u => u.pathname)`
	open, _ := createRoom(t, plainTS) // of no class: it links to the site
	if err := chromedp.Do(ctx, chromedp.Navigate(plain+"/rooms/"+open), chromedp.WaitReady(`#room`)); err != nil {
		t.Fatal(err)
	}
	if links := eval[[]string](t, ctx, outward); len(links) < 3 {
		t.Fatalf("a room of no class links to %q of the site's pages: the test would test nothing", links)
	}
	for _, p := range []string{"/rooms/" + room, "/rooms/" + room + "/pod-workers"} {
		if err := chromedp.Do(ctx, chromedp.Navigate(plain+p), chromedp.WaitReady(`#room`)); err != nil {
			t.Fatal(err)
		}
		if p == "/rooms/"+room {
			waitFor(t, ctx, "the worksheet", `!!document.querySelector('.annot-sets')`)
		}
		if links := eval[[]string](t, ctx, outward); len(links) > 0 {
			t.Errorf("the hide-notes room's %s links to pages with the site's notes: %q", p, links)
		}
	}
}
