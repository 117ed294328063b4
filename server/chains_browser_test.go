package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// scratchJournalLines is the lab's recorded v1.31.0 journal with the
// scratch pod's emptyDir (journalctl -o json entries, as a relay sends
// them).
func scratchJournalLines(t *testing.T) []relay.Line {
	t.Helper()
	gz, err := os.ReadFile("lab/testdata/kubelet-v1.31.0-scratch-journal.json.gz")
	if err != nil {
		t.Fatal(err)
	}
	var out []relay.Line
	for line := range strings.Lines(string(gunzip(t, gz))) {
		line = strings.TrimSuffix(line, "\n")
		var e struct {
			Cursor string `json:"__CURSOR"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatal(err)
		}
		out = append(out, relay.Line{ID: e.Cursor, Raw: line})
	}
	return out
}

// TestBrowserVolumeChains: the volume page beside the lab's real journal
// (the scratch pod's emptyDir mounted, torn down, mounted anew) shows each
// volume's chain, in order, with its steps' times and journal lines, and
// under each phase its count of lines; a volume named by hostile text is
// shown as text. At 1440 light and 390 dark, axe's WCAG 2.2 AA rules hold
// over the panel.
func TestBrowserVolumeChains(t *testing.T) {
	t.Parallel()
	axe := axeSource(t)
	r := realReading(t)
	golden := func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
		b, err := os.ReadFile(filepath.Join("..", "extractor", "volume", "testdata", "golden", o.Tag+".json"))
		if err != nil {
			return nil, err
		}
		var v volume.Reading
		return &v, json.Unmarshal(b, &v)
	}
	ts := serveReal(t, r, func(c *Config) {
		c.IngestToken, c.DemoPeriod, c.LoadVolume = "tok", -1, golden
	})
	// The feed reads the journal at its kubelet's tag, v1.31.0: the volume
	// reading there, loaded as a reader's first visit does.
	const tag = "v1.31.0"
	if !testwait.Until(30*time.Second, func() bool {
		res, err := http.Get(ts.URL + "/k8s/" + tag + "/volume-manager.json")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == 200
	}) {
		t.Fatal("the volume reading did not load")
	}
	wctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	in, _, err := websocket.Dial(wctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{HTTPHeader: map[string][]string{"Authorization": {"Bearer tok"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.CloseNow()
	journal := scratchJournalLines(t)
	hostile := `<img src=x onerror="window.pwned=1">`
	journal = append(journal, relay.Line{ID: "hostile-1", Raw: `I1204 21:43:00.000000    7475 reconciler_common.go:245] ` +
		strconv.Quote(fmt.Sprintf("operationExecutor.VerifyControllerAttachedVolume started for volume %q (UniqueName: %q) pod %q (UID: %q) ", hostile, "u/"+hostile, "evil", "e-1"))})
	for i := 0; i < len(journal); i += 500 {
		wstest.Send(t, wctx, in, journal[i:min(i+500, len(journal))]...)
	}

	for _, v := range []viewport{viewports[0], viewports[2]} {
		dark := v.name == "390"
		t.Run(v.name+"-"+themeName(dark), func(t *testing.T) {
			ctx := newBrowser(t)
			setView(t, ctx, v, dark)
			if err := chromedp.Do(ctx, chromedp.Navigate(ts.URL+"/k8s/"+tag+"/volume-manager")); err != nil {
				t.Fatal(err)
			}
			if !testwait.Until(20*time.Second, func() bool { return eval[int](t, ctx, `document.querySelectorAll('#chains li.chain').length`) == 3 }) {
				res, err := http.Get(ts.URL + "/feeds/default/chains")
				if err == nil {
					b, _ := io.ReadAll(res.Body)
					res.Body.Close()
					t.Logf("GET /feeds/default/chains: %s %.2000s", res.Status, b)
				}
				t.Fatalf("the panel shows %q", eval[string](t, ctx, `document.querySelector('#chains').outerHTML.slice(0, 2000)`))
			}
			// The live pane beside the phases labels the reconciler's lines
			// by their part, as the feed labels them (not by the loop's
			// cases, which the second reading has none of).
			partLine := `[...document.querySelectorAll('#live li.ll')].find(li => li.dataset.case === 'mountOrAttachVolumes' && !li.classList.contains('ll-elsewhere') && li.querySelector('.ll-chip').textContent === 'mountOrAttachVolumes' && !li.querySelector('.ll-pin'))`
			if !testwait.Until(20*time.Second, func() bool { return eval[bool](t, ctx, `!!`+partLine) }) {
				t.Errorf("no line of mountOrAttachVolumes labelled by its part in the pane: %q",
					eval[[]string](t, ctx, `[...document.querySelectorAll('#live li.ll')].slice(-5).map(li => li.dataset.case + ' ' + li.className + ' ' + li.textContent.slice(0, 120))`))
			}
			paths := eval[[]string](t, ctx, `[...document.querySelectorAll('#chains li.chain .chain-path')].map(e => e.textContent)`)
			want := []string{
				"desired → verifying → mounting → mounted → removing → unmounting → torn down → detached",
				"desired → verifying → mounting → mounted", "verifying",
			}
			if strings.Join(paths, "|") != strings.Join(want, "|") {
				t.Errorf("chains %q, want %q", paths, want)
			}
			// Each step with its time, its part (a link to the phase when
			// the page has it) and the journal's line.
			first := eval[[]string](t, ctx, `[...document.querySelectorAll('#chains li.chain')[0].querySelectorAll('li.chain-step')].map(s => s.dataset.step + ' ' + s.querySelector('.chain-time').textContent + ' ' + (s.querySelector('a.chain-part')?.getAttribute('href') || s.querySelector('.chain-part').textContent) + ' ' + s.querySelector('pre.chain-line').textContent.slice(0, 200))`)
			if len(first) != 8 || !strings.Contains(first[0], "populator") || !strings.Contains(first[0], "Added volume to desired state") ||
				!strings.Contains(first[3], "#part-mountOrAttachVolumes") || !strings.Contains(first[3], "MountVolume.SetUp succeeded") ||
				!strings.Contains(first[7], "#part-unmountDetachDevices") || !regexp.MustCompile(`^verifying \d\d:\d\d:\d\d\.\d{3} `).MatchString(first[1]) {
				t.Errorf("the first chain's steps: %q", first)
			}
			// Two mounts of four lines each (verify, two of the mount's start, SetUp), and the hostile line.
			if n := eval[string](t, ctx, `document.querySelector('#part-mountOrAttachVolumes [data-part-evidence]').textContent`); !strings.HasPrefix(n, "The journal shows 9 lines of this phase") {
				t.Errorf("mountOrAttachVolumes's evidence: %q", n)
			}
			// Hostile names are text.
			if bad := eval[bool](t, ctx, `!!document.querySelector('#chains img') || window.pwned === 1`); bad {
				t.Error("a volume's name was rendered as HTML")
			}
			if !eval[bool](t, ctx, `[...document.querySelectorAll('#chains li.chain .chain-head code')].some(c => c.textContent === `+strconv.Quote(hostile)+`)`) {
				t.Error("the hostile volume's name is not shown as text")
			}
			if w := eval[int](t, ctx, `document.documentElement.scrollWidth - window.innerWidth`); w > 0 {
				t.Errorf("the page scrolls sideways by %d px", w)
			}
			eval[bool](t, ctx, `(document.querySelectorAll('#chains details').forEach(d => d.open = true), true)`)
			if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](axe+";true")); err != nil {
				t.Fatal(err)
			}
			found := eval[[]string](t, ctx, `axe.run('#chains', {runOnly: {type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']}})
				.then(res => res.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
				.map(v => v.id + ' (' + v.nodes.length + '): ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | ')))`)
			for _, f := range found {
				t.Errorf("axe: %s", f)
			}
			eval[bool](t, ctx, `(document.querySelector('#chains').scrollIntoView(), true)`)
			screenshot(t, ctx, "volume-chains-"+v.name+"-"+themeName(dark)+".png", false)
		})
	}
}
