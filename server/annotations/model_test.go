package annotations

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/annotations/anchor"
)

// TestRenderHostile: what one reader writes can never become an element or
// active content on another reader's page.
func TestRenderHostile(t *testing.T) {
	for _, tc := range []struct {
		in      string
		never   []string
		present []string
	}{
		{`<img src=x onerror="alert(1)">`, []string{"<img", "onerror=\"alert"}, nil},
		{"<script>alert(1)</script>", []string{"<script"}, nil},
		{"[click](javascript:alert(1))", []string{"javascript:"}, []string{"click"}},
		{"[x](JaVaScRiPt:alert(1)) [y](vbscript:x) [z](data:text/html,<b>)", []string{"avascri", "vbscript:", "data:text"}, nil},
		{"<a href=\"javascript:alert(1)\">a</a>", []string{"<a href=\"javascript"}, nil},
		{"![i](x \"t\" onerror=alert(1))", []string{"<img"}, nil},
		{"**bold** and `code`", nil, []string{"<strong>bold</strong>", "<code>code</code>"}},
		{"abc\u202eevil\u2067", []string{"\u202e", "\u2067"}, []string{"abcevil"}},
	} {
		got := Render(tc.in)
		for _, s := range tc.never {
			if strings.Contains(strings.ToLower(got), strings.ToLower(s)) {
				t.Errorf("Render(%q) = %q: has %q", tc.in, got, s)
			}
		}
		for _, s := range tc.present {
			if !strings.Contains(got, s) {
				t.Errorf("Render(%q) = %q: lacks %q", tc.in, got, s)
			}
		}
	}
}

func checksOf(t *testing.T, tag, id, text string) []Check {
	t.Helper()
	return CheckNote(extractortest.Reading(t, tag, content.Symbols()), id, text)
}

func TestChecksAgainstSource(t *testing.T) {
	extractortest.NeedNetwork(t)
	// At v1.37.2 the volume manager's DesiredStateOfWorld interface is at
	// pkg/kubelet/volumemanager/cache/desired_state_of_world.go:53 and its
	// ActualStateOfWorld at actual_state_of_world.go:48 (as read there).
	for _, tc := range []struct {
		id, text string
		level    string
		says     string
	}{
		{"set.desired", "volumemanager/cache/desired_state_of_world.go:60", "warn", "At v1.37.2 that is line 53"},
		{"set.actual", "pkg/kubelet/volumemanager/cache/actual_state_of_world.go:48", "ok", "declared at pkg/kubelet/volumemanager/cache/actual_state_of_world.go:48"},
		{"set.actual", "kubelet.go:10", "warn", "is not declared in kubelet.go"},
		{"set.desired", "the volume manager's", "warn", "Give it as file:line"},
		{"set.desired", "", "empty", "Which set, declared where?"},
		// Right without the type's name: the field's label names it.
		{"set.desired", "desired_state_of_world.go:53", "ok", "This set is declared at pkg/kubelet/volumemanager/cache/desired_state_of_world.go:53"},
		{"set.desired", "desired_state_of_world.go:54", "warn", "Name the type too"},
		// Named, the other set in this field: checked as the one named.
		{"set.desired", "ActualStateOfWorld, actual_state_of_world.go:48", "ok", "ActualStateOfWorld is declared at pkg/kubelet/volumemanager/cache/actual_state_of_world.go:48"},
		{"case.config", "", "empty", "still empty"},
		{"case.nosuch", "text", "warn", "no nosuch case at v1.37.2"},
		// Against the writers derived at the tag: Merge sends on the
		// loop's channel (config.go:156 at v1.37.2); Updates only returns
		// it; the mux's listen feeds Merge; a made-up name is nowhere.
		{"writer.config", "pkg/kubelet/config.(*PodConfig).Updates", "warn", "pkg/kubelet/config.(*PodConfig).Updates is not a writer of this channel at v1.37.2"},
		{"writer.config", "podStorage.Merge, one per source", "ok", "podStorage.Merge sends on this channel at v1.37.2 (pkg/kubelet/config/config.go:156)"},
		{"writer.config", "mux.listen", "warn", "mux.listen does not send on this channel at v1.37.2; it feeds what does (pkg/kubelet/config/mux.go:80)"},
		{"writer.config", "pkg/kubelet/config.(*podStorage).Mergeify", "warn", "is not found at v1.37.2"},
		{"writer.pleg", "GenericPLEG.reconcilePodRecord", "ok", "sends on this channel at v1.37.2 (pkg/kubelet/pleg/generic.go:389)"},
		{"writer.sync", "Kubelet.syncLoop", "warn", "this channel is a ticker's"},
		{"writer.pleg", "", "empty", "Who writes"},
	} {
		cs := checksOf(t, "v1.37.2", tc.id, tc.text)
		if !slices.ContainsFunc(cs, func(c Check) bool { return c.Level == tc.level && strings.Contains(c.Text, tc.says) }) {
			t.Errorf("%s %q: %+v, want %s %q", tc.id, tc.text, cs, tc.level, tc.says)
		}
	}
	// A check names no set the reader has not named (quiz mode hides them).
	for _, text := range []string{"", "kubelet.go:10", "desired_state_of_world.go:53", "the volume manager's"} {
		for _, c := range checksOf(t, "v1.37.2", "set.desired", text) {
			if strings.Contains(c.Text, "StateOfWorld") {
				t.Errorf("set.desired %q: the check %q names a set", text, c.Text)
			}
		}
	}
	// A right file:line, with or without the type's name, gets no warning
	// at all: a warning about a right answer misleads, and would go into
	// the hand-in.
	for _, tc := range []struct{ id, text string }{
		{"set.desired", "desired_state_of_world.go:53"},
		{"set.desired", "pkg/kubelet/volumemanager/cache/desired_state_of_world.go:53"},
		{"set.actual", "actual_state_of_world.go:48"},
		{"set.actual", "ActualStateOfWorld at actual_state_of_world.go:48"},
	} {
		cs := checksOf(t, "v1.37.2", tc.id, tc.text)
		if len(cs) == 0 || slices.ContainsFunc(cs, func(c Check) bool { return c.Level != "ok" }) {
			t.Errorf("%s %q (right): %+v, want only ok", tc.id, tc.text, cs)
		}
	}
	if cs := checksOf(t, "v1.37.2", "writer.config", "the config sources, through a mux"); len(cs) != 0 {
		t.Errorf("words without a symbol: %+v, want no check", cs)
	}

	// A writer named by a symbol that does not resolve at an older tag:
	// at v1.20.0 the PLEG's send is in (*GenericPLEG).relist
	// (generic.go:273); reconcilePodRecord came later.
	r := extractortest.Reading(t, "v1.20.0", content.Symbols())
	cs := CheckNote(r, "writer.pleg", "pkg/kubelet/pleg.(*GenericPLEG).reconcilePodRecord")
	if len(cs) != 1 || cs[0].Level != "warn" || !strings.Contains(cs[0].Text, "is not found at v1.20.0") {
		t.Errorf("reconcilePodRecord at v1.20.0: %+v", cs)
	}
	cs = CheckNote(r, "writer.pleg", "GenericPLEG.relist")
	if len(cs) != 1 || cs[0].Level != "ok" || !strings.Contains(cs[0].Text, "generic.go:273") {
		t.Errorf("relist at v1.20.0: %+v", cs)
	}
	// A symbol that exists at the tag but does not write this channel.
	cs = CheckNote(r, "writer.pleg", "pkg/kubelet/prober/results.(*manager).Set")
	if len(cs) != 1 || cs[0].Level != "warn" || !strings.Contains(cs[0].Text, "is not a writer of this channel at v1.20.0") {
		t.Errorf("(*manager).Set for pleg at v1.20.0: %+v", cs)
	}
}

// TestWorksheet: the hand-in has every case, the answers with their
// authors and checks, and comments where their lines are at the tag.
func TestWorksheet(t *testing.T) {
	extractortest.NeedNetwork(t)
	r30 := extractortest.Reading(t, "v1.30.0", nil)
	r36 := extractortest.Reading(t, "v1.36.0", content.Symbols())
	q, err := anchor.New(r30, 2423, 2423)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	notes := []Note{
		{ID: "case.config", Text: "# Not a heading\nPod specs from the sources.", Author: "Ann", At: at},
		{ID: "writer.config", Text: "podStorage.Merge", Author: "Dana", At: at},
		{ID: "set.desired", Text: "volumemanager/cache/desired_state_of_world.go:1", Author: "Dana", At: at},
		{ID: "sentence", Text: "Each case re-reads the state.", Author: "Ann", At: at},
		{ID: "exercise.config", Text: "kubectl run probe-me", Author: "Ann", At: at},
		{ID: "podworkers", Text: "One goroutine per pod, one pending update.", Author: "Dana", At: at},
		{ID: "comment.abcdef", Text: "the ADD log", Author: "Ann", At: at, Quote: &q},
	}
	md := string(Worksheet(r36, Head{Title: "Room 0123ab", Readers: []string{"Dana", "Ann", "Bo"}}, notes))
	for _, want := range []string{
		"at k8s.io/kubernetes v1.36.0",
		"\n\nRoom 0123ab\n\nSource: [pkg/kubelet/kubelet.go:",
		"\n\nReaders: Dana, Ann, Bo\n\nWritten by: Ann, Dana\n\n",
		"Written by: Ann, Dana",
		"### config\n",
		"```text\n# Not a heading\nPod specs from the sources.\n```",
		"- Written by: podStorage.Merge (Dana, 2026-12-01 03:00 UTC)",
		"### pleg\n", "- Note: (left empty)",
		"- **DesiredStateOfWorld**: `volumemanager/cache/desired_state_of_world.go:1` (Dana",
		"check: `At v1.36.0 that is line",
		"- **ActualStateOfWorld**: (left empty)",
		"```text\nEach case re-reads the state.\n```",
		"- Fired by the exercise: kubectl run probe-me (Ann, 2026-12-01 03:00 UTC)",
		"### pleg\n\n[pkg/kubelet/kubelet.go",
		"- Fired by the exercise: (left empty)",
		"## pod_workers\n\n" + PodWorkersQuestion + "\n\n```text\nOne goroutine per pod, one pending update.\n```\n\n— (Dana, 2026-12-01 03:00 UTC)",
		"pkg/kubelet/kubelet.go:2709 (changed since v1.30.0, where it was line 2423) (Ann",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("worksheet lacks %q:\n%s", want, md)
		}
	}
}

// TestWorksheetRightSetNoWarning: a set answered right, by file:line alone,
// goes into the hand-in with no check under it; a wrong one keeps its.
func TestWorksheetRightSetNoWarning(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, "v1.37.2", content.Symbols())
	md := string(Worksheet(r, Head{Title: "My notes"}, []Note{
		{ID: "set.desired", Text: "desired_state_of_world.go:53", Author: "Ann"},
		{ID: "set.actual", Text: "volumemanager/cache/actual_state_of_world.go:49", Author: "Ann"},
	}))
	_, sets, _ := strings.Cut(md, "## The two sets")
	sets, _, _ = strings.Cut(sets, "## The pattern")
	desired, actual, _ := strings.Cut(sets, "- **ActualStateOfWorld**")
	if strings.Contains(desired, "check:") {
		t.Errorf("a right DesiredStateOfWorld answer is handed in with a warning:\n%s", desired)
	}
	if !strings.Contains(actual, "check: `At v1.37.2 that is line 48") {
		t.Errorf("a wrong ActualStateOfWorld line is handed in without its check:\n%s", actual)
	}
}

// TestWorksheetAsksTheWholeExercise: the hand-in asks, per case, for an
// exercise that fired it, and asks the pod_workers question; both are
// notes a room keeps.
func TestWorksheetAsksTheWholeExercise(t *testing.T) {
	for _, id := range []string{"exercise.config", "exercise.container", "podworkers"} {
		if !ValidID(id) {
			t.Errorf("%s is not a note a room keeps", id)
		}
	}
	for _, id := range []string{"exercise.", "exercise.Config", "podworkers.x"} {
		if ValidID(id) {
			t.Errorf("%s is taken for a note", id)
		}
	}
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, "v1.37.2", content.Symbols())
	exp := Expected(r)
	for _, c := range r.Function.Cases {
		if !slices.Contains(exp, "exercise."+c.Key) {
			t.Errorf("the worksheet does not ask which exercise fired %s", c.Key)
		}
	}
	if !slices.Contains(exp, "podworkers") {
		t.Error("the worksheet does not ask the pod_workers question")
	}
	if cs := CheckNote(r, "exercise.pleg", ""); len(cs) != 1 || cs[0].Level != "empty" {
		t.Errorf("an empty exercise: %+v", cs)
	}
	md := string(Worksheet(r, Head{Title: "My notes"}, nil))
	if strings.Contains(md, "Readers:") {
		t.Errorf("one reader's own notes name readers:\n%s", md)
	}
	if n := strings.Count(md, "- Fired by the exercise: (left empty)"); n != len(r.Function.Cases) {
		t.Errorf("%d cases ask for the exercise that fired them, want %d:\n%s", n, len(r.Function.Cases), md)
	}
	if !strings.Contains(md, "## pod_workers\n\n"+PodWorkersQuestion+"\n\n> (left empty)") {
		t.Errorf("no pod_workers question in the hand-in:\n%s", md)
	}
}
