package annotations

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestWorksheetChains: a chain pin's id names its feed and first line,
// told from a line pin's; the worksheet reads the chain again and hands it
// in under "Volume chains", its names (log text) inert and its lines in a
// fence nothing in them can close; a chain no longer stored is said to be
// gone, its note's copy not printed; chain pins are not listed as lines.
func TestWorksheetChains(t *testing.T) {
	for _, tt := range []struct {
		id, feed string
		first    uint64
		ok       bool
	}{
		{ChainPinID("room-abc", 12), "room-abc", 12, true},
		{ChainPinID("room-x-chain", 3), "room-x-chain", 3, true},
		{"pin.room-x-chain-12", "", 0, false}, // a line pin of the feed room-x-chain
		{"pin.room-abc-chain", "", 0, false},
		{"pin.room-abc-chain0", "", 0, false},
	} {
		feed, first, ok := chainPinOf(tt.id)
		if ok != tt.ok || ok && (feed != tt.feed || first != tt.first) || !ValidID(tt.id) {
			t.Errorf("chainPinOf(%q) = %q %d %v", tt.id, feed, first, ok)
		}
	}
	if _, _, ok := pinOf(ChainPinID("room-abc", 12)); ok {
		t.Error("a chain pin's id reads as a line pin's")
	}
	at := time.Date(2026, 12, 4, 21, 41, 3, 0, time.UTC)
	evil := "`<img src=x onerror=alert(1)>` *x* [l](javascript:alert(1))"
	line := "I1204 21:41:03.178910 7475 reconciler_common.go:245] \"operationExecutor.VerifyControllerAttachedVolume started\" ````\n# evil <script>alert(1)</script>"
	c := feeds.StoredChain{Feed: "lab", Chain: classify.Chain{ID: 12, Volume: "u/" + evil, Spec: evil, Pod: "default/" + evil, UID: "x",
		Steps: []classify.ChainStep{{Step: classify.StepVerifying, Part: "mountOrAttachVolumes", Count: 1,
			First: classify.ChainLine{Seq: 12, Time: at}, Last: classify.ChainLine{Seq: 12, Time: at}}}},
		Lines: []feeds.StoredLine{{Feed: "lab", Seq: 12, Raw: line}}}
	chains := func(feed string, id uint64) (feeds.StoredChain, error) {
		if id == 12 && feed == "lab" {
			return c, nil
		}
		return feeds.StoredChain{}, fmt.Errorf("line %d: %w", id, feeds.ErrNoLine)
	}
	notes := []Note{
		{ID: ChainPinID("lab", 12), Text: chainPinText(c), Author: "Ann", At: at},
		{ID: ChainPinID("lab", 7), Text: "chain: a copy of an evicted chain", Author: "Bo", At: at},
	}
	md := string(Worksheet(fixture.Reading(t), Head{Title: "My notes", Chains: chains}, notes))
	i := strings.Index(md, "## Volume chains")
	if i < 0 || strings.Contains(md, "## Fired") {
		t.Fatalf("no Volume chains section, or chain pins among the lines:\n%s", md)
	}
	sec := md[i:]
	for _, want := range []string{
		"### verifying (Ann",
		"Volume ``u/`<img src=x onerror=alert(1)>` *x* [l](javascript:alert(1))`` (`` " + evil + " ``) of pod ``default/" + evil + "``",
		"- verifying at 2026-12-04T21:41:03Z, in mountOrAttachVolumes (1 line(s))",
		"`````text\n" + line + "\n`````\n",
		"### A pin of the chain from line 7 (Bo",
		"is no longer stored",
	} {
		if !strings.Contains(sec, want) {
			t.Errorf("Volume chains lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(md, "a copy of an evicted chain") {
		t.Errorf("the hand-in prints a chain pin's note text:\n%s", sec)
	}
}
