package server

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestBrowserBidiPodName: a pod named "invoice-\u202efdp.exe" shows in the
// live pane as that escape, never as "invoice-exe.pdf".
func TestBrowserBidiPodName(t *testing.T) {
	t.Parallel()
	ctx := newBrowser(t)
	r := realReading(t)
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}
	entry, _ := json.Marshal(map[string]string{
		"__CURSOR": "s=x;i=1", "_HOSTNAME": "vm", "_PID": "4242", "SYSLOG_IDENTIFIER": "kubelet",
		"MESSAGE": "I1130 01:02:03.000000    4242 kubelet.go:2407] \"SyncLoop ADD\" source=\"api\" pods=[\"default/invoice-\u202efdp.exe\"]",
	})
	journal := filepath.Join(t.TempDir(), "journal.txt")
	if err := os.WriteFile(journal, append(entry, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load,
		Getenv: func(string) string { return "" }, JournalFile: journal, DemoPeriod: 25 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, r.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	if _, err := chromedp.Run(ctx, chromedp.Navigate(ts.URL+"/k8s/"+r.Tag+"/")); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, "the line in the pane", `[...document.querySelectorAll('#live li.ll')].some(li => li.textContent.includes('invoice-'))`)
	text := eval[string](t, ctx, `[...document.querySelectorAll('#live li.ll')].map(li => li.textContent).join('\n')`)
	if !strings.Contains(text, `invoice-\u202efdp.exe`) {
		t.Errorf("the pane does not show the escape:\n%s", text)
	}
	if strings.ContainsRune(text, '\u202e') {
		t.Errorf("the pane applies U+202E:\n%q", text)
	}
	// Readers' names go through dom.js's visible, as the room bar (room.js) shows them.
	name := eval[string](t, ctx, `(async () => {
		const room = document.querySelector('script[type=module][src]').src; // dom.js sits beside every module
		const dom = await import(new URL('dom.js', room).href);
		return dom.visible('invoice-\u202efdp.exe \u2066x\u2069');
	})()`)
	if name != `invoice-\u202efdp.exe \u2066x\u2069` {
		t.Errorf("visible(name) = %q", name)
	}
}
