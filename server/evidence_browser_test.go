package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// siteOf is the log site of case key with message msg in r.
func siteOf(t *testing.T, r *extractor.Reading, key, msg string) extractor.LogSite {
	t.Helper()
	for _, c := range r.Function.Cases {
		for _, l := range c.Logs {
			if c.Key == key && l.Message == msg {
				return l
			}
		}
	}
	t.Fatalf("no %q log site in %s at %s", msg, key, r.Tag)
	return extractor.LogSite{}
}

// TestBrowserCaseLinesAndPins: three config lines, then 20,000 lines of
// noise, long past what the pane holds: the config chip counts the
// session's three, a click on config brings them back from the journal
// from the first, previous walks to it; a line pinned survives a reload
// and is handed in under the worksheet's "Fired".
func TestBrowserCaseLinesAndPins(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := realReading(t)
	ts := serveReal(t, r, func(c *Config) { c.IngestToken, c.DemoPeriod = "tok", -1 })

	add := siteOf(t, r, "config", "SyncLoop ADD")
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in, _, err := websocket.Dial(wctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.CloseNow()
	n := 0
	line := func(body string) relay.Line {
		n++
		return relay.Line{ID: fmt.Sprintf("run-%d", n), Raw: fmt.Sprintf("I1201 03:%02d:%02d.000000    4242 %s", n/60%60, n%60, body)}
	}
	var batch []relay.Line
	for i := range 3 {
		batch = append(batch, line(fmt.Sprintf(`%s:%d] "SyncLoop ADD" source="file" pods=["default/probe-me-%d"]`, path.Base(add.File), add.Line, i)))
		for range 10 {
			batch = append(batch, line(`fs.go:100] "readlink /proc/1/fd/7: permission denied"`))
		}
	}
	batch0 := batch[0].Raw // line 1, which the reader pins
	wstest.Send(t, wctx, in, batch...)
	for range 20 {
		batch = batch[:0]
		for range 1000 {
			batch = append(batch, line(`fs.go:100] "readlink /proc/1/fd/7: permission denied"`))
		}
		wstest.Send(t, wctx, in, batch...)
	}

	if _, err := chromedp.Run(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the pane's lines", `document.querySelectorAll('#live li.ll').length >= 1000`)
	if n := eval[int](t, ctx, `document.querySelectorAll('#live li.ll[data-case="config"]').length`); n != 0 {
		t.Fatalf("%d config lines in the pane before the click: the test does not test", n)
	}
	waitFor(t, ctx, "config's counter saying the session's 3", `document.querySelector('[data-case-count="config"]').textContent === '3'`)

	eval[bool](t, ctx, `(document.querySelector('[data-case-select="config"]').click(), true)`)
	waitFor(t, ctx, "config's 3 lines brought back", `document.querySelectorAll('#live li.ll[data-case="config"]').length === 3`)
	type got struct {
		Seqs []int
		Info string
	}
	g := eval[got](t, ctx, `({Seqs: [...document.querySelectorAll('#live li.ll[data-case="config"]')].map(li => Number(li.dataset.seq)), Info: document.querySelector('#live .live-sel-info').textContent})`)
	if fmt.Sprint(g.Seqs) != "[1 12 23]" || g.Info != "config: line 3 of 3" {
		t.Fatalf("config lines %v, %q; want lines 1, 12, 23, at the last", g.Seqs, g.Info)
	}
	eval[bool](t, ctx, `(document.querySelector('#live .live-prev').click(), document.querySelector('#live .live-prev').click(), true)`)
	if info := eval[string](t, ctx, `document.querySelector('#live .live-sel-info').textContent`); info != "config: line 1 of 3" {
		t.Fatalf("after two steps back: %q", info)
	}

	// Pin the first: alone, it is the reader's own note.
	eval[bool](t, ctx, `(document.querySelector('#live li.ll[data-seq="1"] [data-pin]').click(), true)`)
	waitFor(t, ctx, "the pin kept", `!!JSON.parse(localStorage.getItem('syncloop-notes-v1') || '{}')['pin.default-1']`)
	if _, err := chromedp.Run(ctx, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the pane after the reload", `document.querySelectorAll('#live li.ll').length >= 1000`)
	eval[bool](t, ctx, `(document.querySelector('[data-case-select="config"]').click(), true)`)
	waitFor(t, ctx, "the pinned line marked after the reload", `document.querySelector('#live li.ll[data-seq="1"] [data-pin]')?.textContent === 'pinned'`)
	md := eval[string](t, ctx, `(async () => {
		const notes = Object.values(JSON.parse(localStorage.getItem('syncloop-notes-v1')));
		const r = await fetch(location.pathname + 'worksheet.md', {method: 'POST', headers: {'Content-Type': 'application/json'}, body: JSON.stringify({notes})});
		return r.text();
	})()`)
	fired, _, _ := strings.Cut(md[strings.Index(md, "## Fired")+1:], "\n## ")
	for _, want := range []string{"### config at 2026-12-01T03:00:01", "Line 1 of the journal", "pod default/probe-me-0", "```text\n" + batch0 + "\n```"} {
		if !strings.Contains(md, "## Fired") || !strings.Contains(fired, want) {
			t.Fatalf("the worksheet's Fired section lacks %q:\n%s", want, md)
		}
	}
}

// labJournalLines are the recorded v1.33.0 journal's entries from its
// first SyncLoop line on (its start-up lines cut, as a relay started late
// sends it), each with its cursor as id.
func labJournalLines(t *testing.T) []relay.Line {
	t.Helper()
	var out []relay.Line
	for line := range strings.Lines(string(labJournal(t))) {
		line = strings.TrimSuffix(line, "\n")
		var e struct {
			Cursor  string `json:"__CURSOR"`
			Message any    `json:"MESSAGE"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		if msg, _ := e.Message.(string); len(out) == 0 && !strings.Contains(msg, `"SyncLoop `) {
			continue
		}
		out = append(out, relay.Line{ID: e.Cursor, Raw: line})
	}
	return out
}

// labJournal is the lab's recorded v1.33.0 journal (journalctl -o json,
// one entry a line), unzipped.
func labJournal(t *testing.T) []byte {
	t.Helper()
	gz, err := os.ReadFile("lab/testdata/kubelet-v1.33.0-journal.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	return gunzip(t, gz)
}

// TestBrowserRealJournal: the recorded v1.33.0 journal without its
// start-up lines, then 20,000 lines of noise, to a server reading
// v1.37.2: the page at v1.37.2 says the kubelet runs v1.33.0, from its log
// sites, and offers that page; there a click on config shows its lines
// from the first.
func TestBrowserRealJournal(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := realReading(t)
	r33 := extractortest.Reading(t, "v1.33.0", content.Symbols())
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r, r33.Tag: r33}}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, IngestToken: "tok",
		Getenv: func(string) string { return "" }, DemoPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	s.site.Load(r33.Tag)
	waitLoaded(t, s, r33.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)

	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in, _, err := websocket.Dial(wctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.CloseNow()
	journal := labJournalLines(t)
	firstConfig := 0
	for i, l := range journal {
		if firstConfig == 0 && strings.Contains(l.Raw, `SyncLoop ADD`) {
			firstConfig = i + 1
		}
	}
	for i := 0; i < len(journal); i += 500 {
		wstest.Send(t, wctx, in, journal[i:min(i+500, len(journal))]...)
	}
	for k := range 20 {
		var batch []relay.Line
		for j := range 1000 {
			batch = append(batch, relay.Line{ID: fmt.Sprintf("noise-%d", k*1000+j+1), Raw: `I1202 08:58:00.000000    4242 fs.go:100] "readlink /proc/1/fd/7: permission denied"`})
		}
		wstest.Send(t, wctx, in, batch...)
	}

	if _, err := chromedp.Run(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the page at v1.37.2 offering v1.33.0, from the kubelet's log sites",
		`(() => { const n = document.querySelector('#live .live-version'); return !n.hidden && n.textContent.includes('from its log sites: v1.33.0') && !!n.querySelector('a[href="/k8s/v1.33.0/"]'); })()`)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(ts.URL+"/k8s/v1.33.0/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the pane's lines", `document.querySelectorAll('#live li.ll').length >= 1000`)
	if n := eval[int](t, ctx, `document.querySelectorAll('#live li.ll[data-case="config"]').length`); n != 0 {
		t.Fatalf("%d config lines in the pane before the click: the test does not test", n)
	}
	eval[bool](t, ctx, `(document.querySelector('[data-case-select="config"]').click(), true)`)
	waitFor(t, ctx, "config's 4 lines brought back", `document.querySelectorAll('#live li.ll[data-case="config"]').length === 4`)
	first := eval[int](t, ctx, `Number(document.querySelector('#live li.ll[data-case="config"]').dataset.seq)`)
	if first != firstConfig {
		t.Fatalf("config's first line in the pane is line %d; the journal's first SyncLoop ADD is line %d", first, firstConfig)
	}
	// Read at the kubelet's own tag, the lines link to its source lines.
	if n := eval[int](t, ctx, `document.querySelectorAll('#live li.ll[data-case="config"][data-line]').length`); n != 4 {
		t.Errorf("%d of config's 4 lines link to v1.33.0's source lines", n)
	}
}
