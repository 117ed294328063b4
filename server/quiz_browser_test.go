package server

// serve --quiz in Chromium: a reader of a course's server sees none of the
// site's note text on the reading page nor on the pod_workers page, no
// "Written by", no answer key in the Export menu, and the answer key's
// address says the course hides it. The same text is read first from a
// server without --quiz, so that the test looks for what is really there.

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

func TestBrowserQuizServer(t *testing.T) {
	ctx := newBrowser(t)
	r := realReading(t)
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
		return ts.URL
	}
	plain, quiz := serve(false), serve(true)
	page, pw := "/k8s/"+r.Tag+"/", "/k8s/"+r.Tag+"/pod-workers"

	// What the site says, as a reader of the plain server reads it.
	type said struct {
		Notes, Written []string
		Intro          string
		AnswerKey      bool
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(plain+page), chromedp.WaitReady(`#function`)); err != nil {
		t.Fatal(err)
	}
	saidJS := `({
		Notes: [...document.querySelectorAll('.prose.note')].map(n => n.innerText.trim().slice(0, 80)).filter(Boolean),
		Written: [...document.querySelectorAll('.written-by')].map(n => n.innerText.trim()),
		Intro: (document.querySelector('#intro .prose')?.innerText || '').trim().slice(0, 80),
		AnswerKey: !!document.querySelector('#export-menu a.answer-key'),
	})`
	before := eval[said](t, ctx, saidJS)
	if len(before.Notes) < 3 || len(before.Written) < 3 || before.Intro == "" || !before.AnswerKey {
		t.Fatalf("without --quiz the page shows %d notes, %d Written by, intro %q, answer key %v: the test would test nothing",
			len(before.Notes), len(before.Written), before.Intro, before.AnswerKey)
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
	after := eval[said](t, ctx, saidJS)
	if len(after.Notes) != 0 || len(after.Written) != 0 || after.Intro != "" || after.AnswerKey {
		t.Errorf("with --quiz the page shows %d notes, %d Written by, intro %q, answer key %v", len(after.Notes), len(after.Written), after.Intro, after.AnswerKey)
	}
	text := eval[string](t, ctx, `document.body.innerText`)
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
}
