package annotations

import (
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestWorksheetFired: pins are notes; the worksheet hands them in under
// "Fired", verbatim, by case then time, a fence inside a line defused.
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
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	pin := func(c, when, line string) string {
		return "case: " + c + "\ntime: " + when + "\npod: default/probe-me-lab\nnode: lab\nkubelet: v1.33.0 (from its log sites: v1.33.0)\ncursor: s=ab;i=1f\nfeed: lab, line 12\nline: " + line
	}
	notes := []Note{
		{ID: "pin.lab-30", Text: pin("pleg", "2026-12-01T03:00:05Z", `I1201 03:00:05.000000 1 kubelet.go:2554] "SyncLoop (PLEG): event for pod"`), Author: "Ann", At: at},
		{ID: "pin.lab-12", Text: pin("config", "2026-12-01T03:00:01Z", "I1201 03:00:01.000000 1 kubelet.go:2522] \"SyncLoop ADD\" ```\n# evil"), Author: "Dana", At: at},
	}
	md := string(Worksheet(fixture.Reading(t), Head{Title: "My notes"}, notes))
	i := strings.Index(md, "## Fired")
	if i < 0 {
		t.Fatalf("no Fired section:\n%s", md)
	}
	fired := md[i:]
	cfg, pleg := strings.Index(fired, "### config at 2026-12-01T03:00:01Z (Dana"), strings.Index(fired, "### pleg at 2026-12-01T03:00:05Z (Ann")
	if cfg < 0 || pleg < 0 || cfg > pleg {
		t.Fatalf("pins not by case, with time and author:\n%s", fired)
	}
	for _, want := range []string{"cursor: s=ab;i=1f", "node: lab", "kubelet: v1.33.0 (from its log sites: v1.33.0)", `"SyncLoop (PLEG): event for pod"`, "ʼʼʼ\n# evil\n```"} {
		if !strings.Contains(fired, want) {
			t.Errorf("Fired lacks %q:\n%s", want, fired)
		}
	}
	if md2 := string(Worksheet(fixture.Reading(t), Head{Title: "My notes"}, notes[:0])); strings.Contains(md2, "## Fired") {
		t.Error("a Fired section without pins")
	}
}
