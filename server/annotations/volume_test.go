package annotations

import (
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// vmReading is a small second reading: two phases, the two sets with a
// writer each.
func vmReading() *volume.Reading {
	return &volume.Reading{Tag: "v1.37.2",
		Entry: volume.Entry{Func: "reconcile", File: "pkg/kubelet/volumemanager/reconciler/reconciler.go", Line: 30, End: 60, Interval: "100ms"},
		Parts: []volume.Part{
			{Key: "unmountVolumes", Direction: volume.RemoveExtra, Starts: []volume.Start{{Call: "UnmountVolume"}}},
			{Key: "mountOrAttachVolumes", Direction: volume.AddMissing, Starts: []volume.Start{{Call: "MountVolume"}}},
			{Key: "cleanOrphanVolumes"},
		},
		Sets: []volume.Set{
			{Name: "DesiredStateOfWorld", Writers: []volume.Caller{{Func: "pkg/kubelet/volumemanager/populator.(*desiredStateOfWorldPopulator).processPodVolumes"}}},
			{Name: "ActualStateOfWorld", Writers: []volume.Caller{{Func: "pkg/volume/util/operationexecutor.(*operationGenerator).GenerateMountVolumeFunc"}}},
		},
	}
}

func TestCheckVolume(t *testing.T) {
	r := vmReading()
	for _, c := range []struct {
		id, text string
		quiz     bool
		want     []string // each check's level and the start of its text
	}{
		{"vmphase.unmountVolumes", "remove-extra; it starts UnmountVolume", false, []string{"ok The direction is right", "ok It names an operation"}},
		{"vmphase.unmountVolumes", "add-missing", false, []string{"warn The direction is not", "warn It names no operation"}},
		{"vmphase.mountOrAttachVolumes", "remove-extra and add-missing, MountVolume", false, []string{"warn It says both", "ok It names"}},
		{"vmphase.cleanOrphanVolumes", "add missing", false, []string{"warn This phase ranges over neither"}},
		{"vmphase.cleanOrphanVolumes", "bookkeeping", false, nil},
		{"vmphase.nosuch", "x", false, []string{"warn The reconcile pass has no phase nosuch"}},
		{"vmphase.unmountVolumes", "", false, []string{"empty "}},
		{"vm.desired", "the populator", false, []string{"ok It names 1 of the 1 functions"}},
		{"vm.desired", "the populator", true, []string{"ok It names a function that writes this set."}},
		{"vm.actual", "GenerateMountVolumeFunc", false, []string{"ok It names 1 of the 1"}},
		{"vm.actual", "the kubelet", true, []string{"warn It names none"}},
		{"vm.controllers", "the ReplicaSet controller", false, []string{"ok It names a controller"}},
		{"vm.controllers", "the scheduler", false, []string{"warn It names no controller"}},
		{"vm.sentence", "", false, []string{"empty "}},
		{"vm.sentence", "level-triggered: it reads both sets every pass", false, nil},
	} {
		var got []string
		for _, ch := range CheckVolume(r, c.id, c.text, c.quiz) {
			got = append(got, ch.Level+" "+ch.Text)
		}
		if len(got) != len(c.want) {
			t.Errorf("%s %q (quiz %v): %q, want %q", c.id, c.text, c.quiz, got, c.want)
			continue
		}
		for i := range got {
			if !strings.HasPrefix(got[i], c.want[i]) {
				t.Errorf("%s %q (quiz %v): %q, want %q", c.id, c.text, c.quiz, got, c.want)
			}
		}
	}
}

// The second reading's notes are notes a room keeps; its worksheet asks
// each phase and the four questions, and its hand-in holds the answers.
func TestVolumeWorksheet(t *testing.T) {
	r := vmReading()
	for _, id := range VolumeExpected(r) {
		if !ValidID(id) {
			t.Errorf("%s is not a note a room keeps", id)
		}
	}
	for _, id := range []string{"vm.other", "vmphase.", "vmphase.a/b", "vmphase.9x"} {
		if ValidID(id) {
			t.Errorf("%s is a note a room keeps", id)
		}
	}
	md := string(VolumeWorksheet(r, Head{Title: "Pair session abc…", Readers: []string{"Ann"}}, []Note{
		{ID: "vmphase.unmountVolumes", Text: "add-missing", Author: "Ann"},
		{ID: "vm.actual", Text: "the operation generator", Author: "Bo"},
	}))
	for _, want := range []string{"the volume manager's reconciler, (*reconciler).reconcile at k8s.io/kubernetes v1.37.2", "## The 3 phases",
		"### unmountVolumes", "```text\nadd-missing\n```", "- check: The direction is not", "### ActualStateOfWorld", "Written by: Ann, Bo", "> (left empty)"} {
		if !strings.Contains(md, want) {
			t.Errorf("the hand-in has no %q:\n%s", want, md)
		}
	}
}

// In quiz mode each different answer to the second reading's questions
// costs one verdict of the client's budget, as a symbol does.
func TestVolumeVerdicts(t *testing.T) {
	r := fixture.Reading(t)
	if v := verdicts(r, Note{ID: "vm.desired", Text: "  The  populator "}); len(v) != 1 || v[0] != verdicts(r, Note{ID: "vm.desired", Text: "the populator"})[0] {
		t.Errorf("verdicts of an answer: %q", v)
	}
	if v := verdicts(r, Note{ID: "vmphase.unmountVolumes", Text: ""}); len(v) != 0 {
		t.Errorf("an empty answer costs %q", v)
	}
}
