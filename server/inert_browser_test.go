package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestBrowserHandInInert: the hand-ins of every payload, rendered as a
// permissive Markdown viewer would (GFM, raw HTML let through) and opened
// in Chromium with no Content-Security-Policy, run no script of the
// payloads (window.__pwned is never set, by the time the page's load
// event has waited for every image), hold no element of theirs, and show
// each payload's text as typed.
func TestBrowserHandInInert(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := fixture.Reading(t)
	var page bytes.Buffer
	page.WriteString("<!doctype html><meta charset=utf-8><title>hand-ins</title><body>\n")
	for _, p := range markupPayloads {
		if err := viewers["gfm+unsafe"].Convert(payloadWorksheet(t, r, p), &page); err != nil {
			t.Fatal(err)
		}
		page.WriteString("\n<hr>\n")
	}
	page.WriteString(`<script src="/loaded.js"></script>`)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write(page.Bytes())
		case "/loaded.js": // the test's own: says when every image has loaded or failed
			w.Header().Set("Content-Type", "text/javascript")
			w.Write([]byte(`window.addEventListener('load', () => { window.__loaded = true; });`))
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(ts.Close)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(ts.URL+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page loaded, images and all", `window.__loaded === true`)
	type got struct {
		Pwned    bool
		Elements int
		Links    []string
		Text     string
	}
	g := eval[got](t, ctx, `({
		Pwned: window.__pwned !== undefined,
		Elements: document.querySelectorAll('img, iframe, svg, object, embed, b, div, table, blockquote, em, del, h4, sup').length + document.querySelectorAll('script').length - 1,
		Links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')).filter(h => !h.startsWith('https://github.com/kubernetes/kubernetes/')),
		Text: document.body.innerText.split(/\s+/).join(' '),
	})`)
	if g.Pwned {
		t.Error("a payload's script ran")
	}
	if g.Elements != 0 || len(g.Links) != 0 {
		t.Errorf("%d elements and %d links from the payloads (%q…)", g.Elements, len(g.Links), g.Links[:min(5, len(g.Links))])
	}
	for _, p := range markupPayloads {
		if typed := strings.Join(strings.Fields(p), " "); !strings.Contains(g.Text, typed) {
			b, _ := json.Marshal(typed)
			t.Errorf("the page does not show %s as typed", b)
		}
	}
}
