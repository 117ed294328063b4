package server

import (
	"context"
	"fmt"
	"net/http"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestBrowserLineTiming (issue 40): a reader who asks sees where a line's
// time went, stage by stage, in the pane ("Where the time goes": medians
// of the lines a journal sent, from their stamps and the page's own
// clock); the page says its own stage to the server, which histograms it
// on /metrics with the others. Looked at closed and open at 1440 and 390,
// light and dark.
func TestBrowserLineTiming(t *testing.T) {
	ctx := newBrowser(t)
	r := realReading(t)
	ts := serveReal(t, r, func(c *Config) { c.IngestToken, c.DemoPeriod = "tok", -1 })
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1440, 900), chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the pane's socket", `document.querySelector('#live .live-conn')?.textContent === 'connected'`)
	// A relay's lines, as it reads them from journald: each says when it
	// was read and how long journald held it.
	wctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	rl, _, err := websocket.Dial(wctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer rl.CloseNow()
	c, _ := r.Function.CaseByKey("pleg")
	site := c.Logs[0]
	for i := range 12 {
		wstest.Send(t, wctx, rl, relay.Line{ID: "l" + itoa(i), Read: time.Now().UnixMicro(), Age: int64(100+i) * 1000,
			Raw: fmt.Sprintf("I1130 01:02:%02d.000000    1234 %s:%d] %q pod=\"default/probe-me\"", i, path.Base(site.File), site.Line, site.Message)})
	}
	waitFor(t, ctx, "journal lines in the pane", `document.querySelectorAll('#live li.ll').length >= 12`)
	if eval[bool](t, ctx, `document.querySelector('#live .live-timing').open`) {
		t.Fatal("the timing is open before the reader asked")
	}
	screenshot(t, ctx, "timing-closed-1440.png", false)
	eval[bool](t, ctx, `(document.querySelector('#live .live-timing > summary').click(), true)`)
	waitFor(t, ctx, "the stages' medians", `(() => {
		const dd = [...document.querySelectorAll('#live .live-timing-stages dd')].map((d) => d.textContent);
		return dd.length === 4 && dd.every((d) => / ms$/.test(d));
	})()`)
	text := eval[string](t, ctx, `document.querySelector('#live .live-timing').innerText`)
	for _, want := range []string{"journald", "relay → server", "server → socket", "socket → page", "Medians of the last"} {
		if !strings.Contains(text, want) {
			t.Errorf("the timing lacks %q:\n%s", want, text)
		}
	}
	for _, vp := range []struct {
		w, h   int
		scheme string
	}{{1440, 900, "light"}, {1440, 900, "dark"}, {390, 844, "light"}, {390, 844, "dark"}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(int64(vp.w), int64(vp.h)),
			media(emulation.SetEmulatedMediaParams{Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: vp.scheme}}})); err != nil {
			t.Fatal(err)
		}
		eval[bool](t, ctx, `(() => { const d = document.querySelector('#live .live-timing'); if (window.innerWidth < 1200 && !document.querySelector('#live').classList.contains('open')) document.querySelector('#live .live-toggle').click(); d.open = true; d.scrollIntoView({block: 'end'}); return true })()`)
		screenshot(t, ctx, "timing-open-"+itoa(vp.w)+"-"+vp.scheme+".png", false)
	}

	// The page says its own stage: /metrics has it.
	said := eval[string](t, ctx, `(async () => { const tm = document.querySelector('#live').livePane.timing; const n = tm.unsaid.length; const r = await fetch(tm.url(), {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({page: tm.unsaid.splice(0)})}); return n + ' ' + r.status + ' ' + (await r.text()); })()`)
	t.Logf("the page said its stage: %s", said)
	var body string
	testwait.For(t, 10*time.Second, "the page's stage on /metrics", func() bool {
		_, body = httpGet(t, ts.URL+"/metrics")
		return strings.Contains(body, `syncloop_line_stage_seconds_count{stage="page"}`) && !strings.Contains(body, `syncloop_line_stage_seconds_count{stage="page"} 0`)
	})
	for _, stage := range []string{"journald", "relay", "server"} {
		if !strings.Contains(body, `syncloop_line_stage_seconds_count{stage="`+stage+`"}`) || strings.Contains(body, `syncloop_line_stage_seconds_count{stage="`+stage+`"} 0`) {
			t.Errorf("/metrics has no %s stage observed", stage)
		}
	}
}
