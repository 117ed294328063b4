package server

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// pdfText is the text of artifacts/name.pdf, as poppler's pdftotext reads
// it (-layout: without it, a word broken at a hyphen is joined again),
// and its pages as PNG (artifacts/name-N.png), to look at.
func pdfText(t *testing.T, name string) string {
	t.Helper()
	pdf := filepath.Join(artifacts(t), name+".pdf")
	out, err := exec.Command("pdftotext", "-layout", "-enc", "UTF-8", pdf, "-").Output()
	if err != nil {
		t.Fatalf("pdftotext %s (Debian: poppler-utils; .ci/run installs it): %v", pdf, err)
	}
	if err := exec.Command("pdftoppm", "-png", "-r", "60", pdf, filepath.Join(artifacts(t), name)).Run(); err != nil {
		t.Fatalf("pdftoppm %s: %v", pdf, err)
	}
	return string(out)
}

// squeezed is s without whitespace: a PDF's text breaks lines where the
// paper does.
func squeezed(s string) string { return strings.Join(strings.Fields(s), "") }

// TestBrowserPrintSaysWhose: "Print the worksheet" and "Print with my
// annotation", printed to PDF by Chromium, begin as worksheet.md does
// (the heading with the tag, which room of which class, the readers) and
// print the Fired section: the pinned line as the journal stores it, with
// its place in the journal.
func TestBrowserPrintSaysWhose(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	_, ts := newRoomServer(t, t.TempDir(), nil)
	wctx := testCtx(t)
	class, _ := createClass(t, ts, url.Values{"name": {"Kubelet internals, group B"}, "tag": {fixture.Tag}})
	id, key, code := startClassRoom(t, ts, class)
	if code != http.StatusSeeOther {
		t.Fatalf("start a class room: %d", code)
	}
	d := dialRoom(t, wctx, ts, id, key, "Ann")
	dialRoomAs(t, wctx, ts, id, "", "", "Bob")
	rl, _, err := websocket.Dial(wctx, wstest.URL(ts, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		t.Fatalf("the room's relay: %v", err)
	}
	defer rl.CloseNow()
	add := siteOf(t, fixture.Reading(t), "config", "Tiny ADD")
	entry := journaldEntry("s=5eed;i=2a;b=boot", fmt.Sprintf(`I1201 03:00:01.000000    4242 %s:%d] "Tiny ADD" pods=["default/probe-me-lab"]`, path.Base(add.File), add.Line))
	wstest.Send(t, wctx, rl, relay.Line{ID: "s=5eed;i=2a;b=boot", Raw: entry})
	if code, v := notesReq(t, "POST", ts.URL+"/rooms/"+id+"/pins", map[string]any{"seq": 1, "author": "Ann"}); code != 200 {
		t.Fatalf("pin: %d %v", code, v)
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/rooms/"+id), chromedp.WaitReady("#your-worksheet")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the paper's head from the server", `!!document.querySelector('#paper-head h1') && !!document.querySelector('#paper-fired h3')`)
	// The browser's dialog is the test's PDF: print() only says it was asked.
	eval[bool](t, ctx, `(window.print = () => { window.__printed = (window.__printed || 0) + 1; }, true)`)
	for i, tc := range []struct{ name, button, class string }{
		{"print-says-whose-worksheet", "Print the worksheet", "annot-print-sheet"},
		{"print-says-whose-annotation", "Print with my annotation", "annot-print"},
	} {
		eval[bool](t, ctx, `(document.body.classList.remove('annot-print', 'annot-print-sheet'), [...document.querySelectorAll('#your-worksheet button')].find(b => b.textContent === `+jsString(tc.button)+`).click(), true)`)
		waitFor(t, ctx, tc.button+" asked to print", fmt.Sprintf(`window.__printed === %d && document.body.classList.contains(%q)`, i+1, tc.class))
		printA4(t, ctx, tc.name)
		text := pdfText(t, tc.name)
		head, _, _ := strings.Cut(text, "The function")
		for _, want := range []string{
			"syncloop worksheet: (*Kubelet).tinyLoopIteration at k8s.io/kubernetes " + fixture.Tag,
			"Room 1 of the class “Kubelet internals, group B”: pair session " + id[:6],
			"Readers: Ann, Bob",
		} {
			if !strings.Contains(squeezed(head), squeezed(want)) {
				t.Errorf("%s: the PDF does not begin with %q:\n%s", tc.name, want, text)
			}
		}
		for _, want := range []string{"Fired", "Line 1 of the journal, cursor s=5eed;i=2a;b=boot; pod default/probe-me-lab; node lab-worker", entry} {
			if !strings.Contains(squeezed(text), squeezed(want)) {
				t.Errorf("%s: the PDF lacks %q:\n%s", tc.name, want, text)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(artifacts(t), "print-says-whose-worksheet-1.png")); err != nil {
		t.Errorf("no PNG of the printed worksheet: %v", err)
	}
}
