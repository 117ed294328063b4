package annotations

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestWorksheetFired: pins are notes naming a line; the worksheet reads
// each again from the journal and hands it in under "Fired" as stored, in
// a fence no run of backticks in it can close, by case then time, with
// "line N of the journal, cursor C"; a line the journal no longer holds is
// said to be gone, and no copy of it (the note's text) is printed.
func TestWorksheetFired(t *testing.T) {
	for _, id := range []string{"pin.lab-12", "pin.room-abc_def-99"} {
		if !ValidID(id) {
			t.Errorf("%s is not a valid id", id)
		}
	}
	for _, id := range []string{"pin.", "pin.a/b", "pin." + strings.Repeat("x", 81)} {
		if ValidID(id) {
			t.Errorf("%s is a valid id", id)
		}
	}
	if feed, seq, ok := pinOf(PinID("room-abc_def", 99)); !ok || feed != "room-abc_def" || seq != 99 {
		t.Errorf("pinOf(PinID(room-abc_def, 99)) = %q %d %v", feed, seq, ok)
	}
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	evil := "I1201 03:00:01.000000 1 kubelet.go:2522] \"SyncLoop ADD\" ````\n# evil <script>alert(1)</script>"
	stored := map[uint64]feeds.StoredLine{
		12: {Feed: "lab", Seq: 12, Raw: evil, Case: "config", Time: at.Add(time.Second), Cursor: "s=ab;i=1f", Node: "lab", Pods: []string{"default/probe-me-lab"}, Kubelet: "v1.33.0", KubeletFrom: "log sites"},
		30: {Feed: "lab", Seq: 30, Raw: `I1201 03:00:05.000000 1 kubelet.go:2554] "SyncLoop (PLEG): event for pod"`, Case: "pleg", Time: at.Add(5 * time.Second)},
	}
	journal := func(feed string, seq uint64) (feeds.StoredLine, error) {
		if l, ok := stored[seq]; ok && feed == "lab" {
			return l, nil
		}
		return feeds.StoredLine{}, fmt.Errorf("line %d: %w", seq, feeds.ErrNoLine)
	}
	notes := []Note{
		{ID: "pin.lab-30", Text: "case: pleg\nline: what the page showed", Author: "Ann", At: at},
		{ID: "pin.lab-12", Text: "case: config", Author: "Dana", At: at},
		{ID: "pin.lab-7", Text: "case: config\nline: a copy of an evicted line", Author: "Bo", At: at},
	}
	md := string(Worksheet(fixture.Reading(t), Head{Title: "My notes", Journal: journal}, notes))
	i := strings.Index(md, "## Fired")
	if i < 0 {
		t.Fatalf("no Fired section:\n%s", md)
	}
	fired := md[i:]
	cfg, pleg, gone := strings.Index(fired, "### config at 2026-12-01T03:00:01Z (Dana"), strings.Index(fired, "### pleg at 2026-12-01T03:00:05Z (Ann"), strings.Index(fired, "### A pin of line 7 (Bo")
	if cfg < 0 || pleg < 0 || cfg > pleg || gone < pleg {
		t.Fatalf("pins not by case, with time and author, the gone one last:\n%s", fired)
	}
	for _, want := range []string{
		"Line 12 of the journal, cursor `s=ab;i=1f`; pod default/probe-me-lab; node lab; kubelet v1.33.0 (from its log sites).",
		"`````text\n" + evil + "\n`````\n",
		"Line 30 of the journal, cursor (none)",
		"Not printed: line 7 of the journal (feed lab) is no longer stored",
	} {
		if !strings.Contains(fired, want) {
			t.Errorf("Fired lacks %q:\n%s", want, fired)
		}
	}
	for _, copy := range []string{"what the page showed", "a copy of an evicted line"} {
		if strings.Contains(md, copy) {
			t.Errorf("the hand-in prints a note's text %q, not the journal's line:\n%s", copy, fired)
		}
	}
	if md2 := string(Worksheet(fixture.Reading(t), Head{Title: "My notes"}, notes[:0])); strings.Contains(md2, "## Fired") {
		t.Error("a Fired section without pins")
	}
}
