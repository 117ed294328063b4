package diff

import (
	"fmt"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/extractor/volume"
)

func volumeAt(t *testing.T, tag string) *volume.Reading {
	t.Helper()
	extractortest.NeedNetwork(t)
	r, err := volume.Derive(extractortest.FS(t, tag), tag)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// older is what the volume notes' aliases say.
var older = map[string]string{"mountAttachVolumes": "mountOrAttachVolumes", "updateReconstructedDevicePaths": "updateReconstructedFromNodeStatus"}

func describe(u *UnitDiff) string {
	from, to := "-", "-"
	if u.From != nil {
		from = u.From.Name + "@" + u.From.File[strings.LastIndex(u.From.File, "/")+1:]
	}
	if u.To != nil {
		to = u.To.Name + "@" + u.To.File[strings.LastIndex(u.To.File, "/")+1:]
	}
	return fmt.Sprintf("%s %s %s->%s %s", u.Key, u.Status, from, to, u.MatchedBy)
}

// TestCompareVolumeFollowsMovesAndRenames: the entry and the phases are
// matched across upstream's moves (reconciler.go → reconciler_common.go
// and reconciler_new.go → reconciler.go) and renames (mountAttachVolumes,
// reconcileNew, updateReconstructedDevicePaths).
func TestCompareVolumeFollowsMovesAndRenames(t *testing.T) {
	extractortest.Prefetch("v1.23.0", "v1.24.0", "v1.25.0", "v1.26.0", "v1.27.0", "v1.28.0", "v1.29.0", "v1.30.0", "v1.31.0")
	for _, tc := range []struct {
		from, to, key, want string
		aliases             map[string]string
	}{
		{"v1.23.0", "v1.24.0", "mountOrAttachVolumes", "mountOrAttachVolumes changed mountAttachVolumes@reconciler.go->mountOrAttachVolumes@reconciler.go alias", older},
		{"v1.25.0", "v1.26.0", "unmountVolumes", "unmountVolumes changed unmountVolumes@reconciler.go->unmountVolumes@reconciler_common.go ", older},
		{"v1.26.0", "v1.27.0", "entry", "entry changed reconcile@reconciler.go->reconcileNew@reconciler_new.go position", older},
		{"v1.26.0", "v1.27.0", "processReconstructedVolumes", "processReconstructedVolumes removed processReconstructedVolumes@reconciler.go->- ", older},
		{"v1.27.0", "v1.28.0", "updateReconstructedFromNodeStatus", "updateReconstructedFromNodeStatus changed updateReconstructedDevicePaths@reconstruct_new.go->updateReconstructedFromNodeStatus@reconstruct_new.go body", nil},
		{"v1.29.0", "v1.30.0", "entry", "entry changed reconcileNew@reconciler_new.go->reconcileNew@reconciler.go ", older},
		{"v1.30.0", "v1.31.0", "entry", "entry changed reconcileNew@reconciler.go->reconcile@reconciler.go position", older},
	} {
		d := CompareVolume(volumeAt(t, tc.from), volumeAt(t, tc.to), tc.aliases)
		u, ok := d.Unit(tc.key)
		if !ok {
			t.Errorf("%s...%s: no unit %s among %d", tc.from, tc.to, tc.key, len(d.Units))
			continue
		}
		if got := describe(u); got != tc.want {
			t.Errorf("%s...%s: %s\nwant %s", tc.from, tc.to, got, tc.want)
		}
	}
}

// TestVolumeHistoryAcrossTheRename: mountOrAttachVolumes is there at every
// minor, under its old name before v1.24, and the step at v1.24 is the
// rename; the entry's steps name the function that runs at each.
func TestVolumeHistoryAcrossTheRename(t *testing.T) {
	tags := []string{"v1.23.0", "v1.24.0", "v1.26.0", "v1.27.0", "v1.30.0", "v1.31.0"}
	extractortest.Prefetch(tags...)
	var rs []*volume.Reading
	for _, tag := range tags {
		rs = append(rs, volumeAt(t, tag))
	}
	h := NewVolumeHistory("mountOrAttachVolumes", rs, older)
	var got []string
	for _, st := range h.Tags {
		s := st.Tag + ":-"
		if st.Unit != nil {
			s = st.Tag + ":" + st.Unit.Name
		}
		if st.Diff != nil && st.Diff.Renamed {
			s += "(renamed)"
		}
		got = append(got, s)
	}
	want := "v1.23.0:mountAttachVolumes v1.24.0:mountOrAttachVolumes(renamed) v1.26.0:mountOrAttachVolumes v1.27.0:mountOrAttachVolumes v1.30.0:mountOrAttachVolumes v1.31.0:mountOrAttachVolumes"
	if strings.Join(got, " ") != want {
		t.Errorf("history %s\nwant    %s", strings.Join(got, " "), want)
	}
	e := NewVolumeHistory(VolumeEntry, rs, older)
	var funcs []string
	for _, st := range e.Tags {
		funcs = append(funcs, st.Unit.Name)
	}
	if got := strings.Join(funcs, " "); got != "reconcile reconcile reconcile reconcileNew reconcileNew reconcile" {
		t.Errorf("the entry's history names %s", got)
	}
}
