package server

import (
	"bufio"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestBrowserPaneTakesBack: two relays feed one feed through two replicas
// at once, as a relay that failed over while its first connection
// lingered does. Each replica shows a relay's lines as they arrive, before
// JetStream stores them, and takes back those the store refused
// ({"rewind":N}). A reader's pane on one replica, which drops what it is
// told was taken back, ends with the stream's lines: each once, under its
// stored number, in order. The race is run until the page has been told
// of a rewind (most runs are; a run is a second or two).
func TestBrowserPaneTakesBack(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	_, ts1, _, ts2 := twoReplicaServers(t, nil)
	// The page counts the rewinds its socket is told of.
	if _, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: `
		window.rewinds = 0;
		const Real = WebSocket;
		window.WebSocket = class extends Real {
			constructor(...a) {
				super(...a);
				this.addEventListener('message', (ev) => { window.rewinds += (String(ev.data).match(/"rewind":/g) || []).length; });
			}
		};`}); err != nil {
		t.Fatal(err)
	}
	watch := watchPage(t, ctx, ts1)
	if err := chromedp.Do(ctx, chromedp.Navigate(ts1.URL+"/k8s/"+fixture.Tag+"/"), chromedp.WaitReady("#live")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the pane connected", `document.querySelector('#live .live-conn[data-state="up"]') !== null`)

	const per, batches = 2, 120
	total := 0
	for round := 1; ; round++ {
		var wg sync.WaitGroup
		for i, ts := range []*httptest.Server{ts1, ts2} {
			prefix := fmt.Sprintf("r%d.%d-", round, i+1)
			wg.Go(func() { relayRace(t, ts, prefix, batches, per) })
		}
		wg.Wait()
		total += 2 * batches * per
		if t.Failed() {
			return
		}
		want := exported(t, ts1, total)
		// A pane that paused holds what comes until the reader resumes: as
		// a reader would, the test resumes it. (A burst can pause it by
		// itself: see the closing note of issue 24.)
		count := `(() => { const b = document.querySelector('#live .live-pause'); if (b && b.textContent === 'Resume') b.click(); return document.querySelectorAll('#live li.ll[data-seq]').length; })()`
		if !testwait.Until(15*time.Second, func() bool { return eval[int](t, ctx, count) >= total }) {
			t.Fatalf("the pane holds %d lines of %d, its last: %v", eval[int](t, ctx, `document.querySelectorAll('#live li.ll[data-seq]').length`), total,
				eval[[][2]string](t, ctx, `[...document.querySelectorAll('#live li.ll[data-seq]')].map((li) => [li.dataset.seq, li.textContent.slice(0, 60)]).slice(-6)`))
		}
		rows := eval[[][2]string](t, ctx, `[...document.querySelectorAll('#live li.ll[data-seq]')].map((li) => [li.dataset.seq, li.textContent])`)
		marker := regexp.MustCompile(`r\d+\.\d-\d+`)
		if len(rows) != total {
			t.Fatalf("the pane holds %d lines, the stream %d", len(rows), total)
		}
		for k, row := range rows {
			if row[0] != fmt.Sprint(k+1) || marker.FindString(row[1]) != want[k] {
				t.Fatalf("the pane's line %d is #%s %q; the stream's is #%d %q", k+1, row[0], marker.FindString(row[1]), k+1, want[k])
			}
		}
		rewinds := eval[int](t, ctx, `window.rewinds`)
		t.Logf("round %d: %d lines, the page told of %d rewinds so far", round, total, rewinds)
		if rewinds > 0 {
			break
		}
		if round == 4 {
			t.Fatal("four races and no rewind: the replicas never showed a line the store then refused")
		}
	}
	watch.check(t)
}

// relayRace sends batches of per lines to the default feed through ts as
// fast as it can, without waiting for acks, then waits for the last one.
func relayRace(t *testing.T, ts *httptest.Server, prefix string, batches, per int) {
	ctx := testCtx(t)
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}},
	})
	if err != nil {
		t.Errorf("relay %s: %v", prefix, err)
		return
	}
	defer c.CloseNow()
	n := 0
	for range batches {
		lines := make([]relay.Line, per)
		for i := range lines {
			n++
			lines[i] = relay.Line{ID: fmt.Sprint(prefix, n), Raw: fmt.Sprintf(`I1202 10:00:00.%06d       1 race.go:1] "line %s%d"`, n, prefix, n)}
		}
		if err := c.Write(ctx, websocket.MessageText, relay.AppendBatch(nil, lines)); err != nil {
			t.Errorf("relay %s: %v", prefix, err)
			return
		}
	}
	last := fmt.Sprintf(`{"ack":"%s%d"}`, prefix, n)
	for {
		_, ack, err := c.Read(ctx)
		if err != nil {
			t.Errorf("relay %s: no ack of its last line: %v", prefix, err)
			return
		}
		if string(ack) == last {
			return
		}
	}
}

// exported is the markers of the feed's stored lines, in order; it
// expects n of them.
func exported(t *testing.T, ts *httptest.Server, n int) []string {
	t.Helper()
	resp, err := http.Get(ts.URL + "/feeds/default/export")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	marker := regexp.MustCompile(`r\d+\.\d-\d+`)
	var out []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() { // the lines as the relays sent them, one a line
		out = append(out, marker.FindString(sc.Text()))
	}
	if len(out) != n {
		t.Fatalf("export holds %d lines, want %d", len(out), n)
	}
	return out
}
