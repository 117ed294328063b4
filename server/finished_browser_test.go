package server

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestBrowserRelayFinished: a saved journal relayed to its end (the relay
// closes normally, as syncloop relay --file does) reads "relay finished:
// 1,500 lines" in the pane, not "disconnected"; paused with nothing new,
// the pane offers no "0 new ↓ resume", on a wide window or a phone.
func TestBrowserRelayFinished(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := realReading(t)
	ts := serveReal(t, r, func(c *Config) { c.IngestToken, c.DemoPeriod = "tok", -1 })

	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in, _, err := websocket.Dial(wctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.CloseNow()
	var batch []relay.Line
	for n := 1; n <= 1500; n++ {
		batch = append(batch, relay.Line{ID: fmt.Sprintf("run-%d", n), Raw: fmt.Sprintf(`I1201 03:%02d:%02d.000000    4242 fs.go:100] "readlink: permission denied"`, n/60%60, n%60)})
	}
	wstest.Send(t, wctx, in, batch...)
	in.Close(websocket.StatusNormalClosure, "journal ended")

	sawHidden := false
	for _, v := range []viewport{viewports[0], viewports[2]} {
		t.Run(v.name, func(t *testing.T) {
			setView(t, ctx, v, false)
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/"), chromedp.WaitReady("#live")); err != nil {
				t.Fatal(err)
			}
			waitFor(t, ctx, "the pane's lines", `document.querySelectorAll('#live li.ll').length >= 1000`)
			waitFor(t, ctx, `the note "relay finished: 1,500 lines"`, `document.querySelector('#live .live-note').textContent === 'relay finished: 1,500 lines' && !document.querySelector('#live .live-note').hidden`)
			eval[bool](t, ctx, `(document.getElementById('live').livePane.pause(false), true)`)
			type st struct {
				Paused, MoreHidden bool
				More               string
			}
			got := eval[st](t, ctx, `({Paused: document.getElementById('live').livePane.paused, MoreHidden: document.querySelector('#live .live-more').hidden, More: document.querySelector('#live .live-more').textContent})`)
			// The resume button shows only for new lines held: hidden with
			// none, "N new ↓ resume" with N > 0 (lines of the journal still
			// arriving when the pane paused).
			n, _ := strconv.Atoi(strings.Fields(got.More + " 0")[0])
			switch {
			case !got.Paused:
				t.Fatalf("the pane did not pause: %+v", got)
			case got.MoreHidden:
				sawHidden = true
			case n <= 0:
				t.Fatalf("paused with nothing new: %+v; want no resume button", got)
			}
		})
	}
	if !sawHidden {
		t.Error("at no window size did the pane pause with nothing new, so the hidden resume button went untested")
	}
}
