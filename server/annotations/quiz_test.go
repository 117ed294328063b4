package annotations

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// TestQuizChecks: in quiz mode the checker says yes or no. A wrong line,
// a near-miss writer (one that feeds the sender, or starts its goroutine),
// a ticker's channel: none is told where the answer is, nor why it is
// wrong beyond "does not send" or "is not declared there". The same
// inputs outside quiz mode do say more (so that the test tests).
func TestQuizChecks(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, "v1.37.2", content.Symbols())
	for _, tc := range []struct {
		id, text     string
		level, says  string
		plainSaysToo string // what the helpful check says, and quiz mode must not
	}{
		{"set.desired", "DesiredStateOfWorld volumemanager/cache/desired_state_of_world.go:60", "warn", "DesiredStateOfWorld is not declared at volumemanager/cache/desired_state_of_world.go:60 at v1.37.2.", "that is line 53"},
		{"set.desired", "DesiredStateOfWorld desired_state_of_world.go:53", "ok", "DesiredStateOfWorld is declared at desired_state_of_world.go:53 at v1.37.2.", "pkg/kubelet/volumemanager/cache/"},
		{"set.actual", "ActualStateOfWorld kubelet.go:10", "warn", "ActualStateOfWorld is not declared at kubelet.go:10 at v1.37.2.", "declared in 3 files"},
		{"set.desired", "desired_state_of_world.go:54", "warn", "Name the set's type too", "that is line"},
		{"writer.config", "mux.listen", "warn", "mux.listen does not send on this channel at v1.37.2.", "it feeds what does (pkg/kubelet/config/mux.go"},
		{"writer.config", "podStorage.Merge", "ok", "podStorage.Merge sends on this channel at v1.37.2.", "config.go:156"},
		{"writer.config", "pkg/kubelet/config.(*podStorage).Mergeify", "warn", "is not found at v1.37.2.", ""},
		{"writer.sync", "Kubelet.syncLoop", "warn", "Kubelet.syncLoop does not send on this channel at v1.37.2.", "ticker"},
	} {
		quiz := checkQuiz(r, tc.id, tc.text)
		if !slices.ContainsFunc(quiz, func(c Check) bool { return c.Level == tc.level && strings.Contains(c.Text, tc.says) }) {
			t.Errorf("quiz %s %q: %+v, want %s %q", tc.id, tc.text, quiz, tc.level, tc.says)
		}
		if tc.plainSaysToo == "" {
			continue
		}
		if !slices.ContainsFunc(CheckNote(r, tc.id, tc.text), func(c Check) bool { return strings.Contains(c.Text, tc.plainSaysToo) }) {
			t.Errorf("outside quiz mode %s %q does not say %q: the case tests nothing", tc.id, tc.text, tc.plainSaysToo)
		}
		for _, c := range quiz {
			if strings.Contains(c.Text, tc.plainSaysToo) {
				t.Errorf("quiz %s %q says %q", tc.id, tc.text, c.Text)
			}
		}
	}
}

// TestCheckBudget: ChecksPerMinute new verdicts a client, then none until
// the bucket refills; a verdict given before costs nothing; one client's
// spending leaves another's alone.
func TestCheckBudget(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, "v1.37.2", content.Symbols())
	b := newCheckBudget(ChecksPerMinute)
	now := time.Now()
	note := func(i int) Note {
		return Note{ID: "writer.config", Text: "pkg/kubelet/config.F" + strings.Repeat("x", i) + ".G"}
	}
	for i := range ChecksPerMinute {
		if n, ok := b.spend("a", r, []Note{note(i)}, now); !ok || n != 1 {
			t.Fatalf("check %d: %d, %v", i, n, ok)
		}
	}
	if _, ok := b.spend("a", r, []Note{note(0), note(3)}, now); !ok {
		t.Error("answers checked before were charged again")
	}
	if _, ok := b.spend("a", r, []Note{note(ChecksPerMinute)}, now); ok {
		t.Errorf("check %d of a minute allowed", ChecksPerMinute+1)
	}
	if _, ok := b.spend("b", r, []Note{note(ChecksPerMinute)}, now); !ok {
		t.Error("another client was refused")
	}
	if _, ok := b.spend("a", r, []Note{note(ChecksPerMinute)}, now.Add(time.Minute/ChecksPerMinute)); !ok {
		t.Error("no check allowed once a token refilled")
	}
	// Notes the worksheet does not ask for, and words, cost nothing.
	if n, ok := b.spend("c", r, []Note{{ID: "case.config", Text: "podStorage.Merge"}, {ID: "writer.nosuch", Text: "a.B"}, {ID: "writer.pleg", Text: "the PLEG"}}, now); n != 0 || !ok {
		t.Errorf("unchecked notes cost %d, %v", n, ok)
	}
}
