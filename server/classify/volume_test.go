package classify

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor/volume"
)

// goldenVolume is the volume Reading the extraction's golden file holds
// for tag.
func goldenVolume(t *testing.T, tag string) *volume.Reading {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "extractor", "volume", "testdata", "golden", tag+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r volume.Reading
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// goldenTags are the tags extractor/volume holds goldens for.
func goldenTags(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("..", "..", "extractor", "volume", "testdata", "golden", "v*.json"))
	if err != nil || len(names) < 8 {
		t.Fatalf("golden volume readings: %v, %v", names, err)
	}
	var tags []string
	for _, n := range names {
		tags = append(tags, strings.TrimSuffix(filepath.Base(n), ".json"))
	}
	return tags
}

// chainsOf labels and chains lines (klog text, one a string) with v.
func chainsOf(v *Volumes, lines []string) ([]Chain, []VolumeLabel) {
	var cs Chains
	var labels []VolumeLabel
	s := New(nil).Stream()
	for i, raw := range lines {
		l := s.ClassifyString(raw)
		lb, ok := v.Label(&l)
		if !ok {
			continue
		}
		labels = append(labels, lb)
		cs.Add(lb, ChainLine{Seq: uint64(i + 1), Time: l.Time, Text: l.Display()})
	}
	return cs.List(), labels
}

// partOf is the part each step of a chain was labelled to.
func partsOfChain(c Chain) map[string]string {
	out := map[string]string{}
	for _, s := range c.Steps {
		out[s.Step] = s.Part
	}
	return out
}

// TestVolumeChainsRecordedLab: the lab's real v1.31.0 journal (-v=4, the
// scratch pod's emptyDir mounted, deleted, restored with a new uid), its
// volume lines labelled to the parts of the v1.31.0 reading and joined
// per volume and pod: the first pod's volume from desired to detached, in
// order, the second's from desired to mounted.
func TestVolumeChainsRecordedLab(t *testing.T) {
	f, err := os.Open(filepath.Join("..", "lab", "testdata", "kubelet-v1.31.0-scratch-journal.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var raws []string
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		raws = append(raws, sc.Text()) // the journald entries whole, as a relay sends them
	}
	if err := sc.Err(); err != nil || len(raws) < 1000 {
		t.Fatalf("the recorded journal: %d entries, %v", len(raws), err)
	}
	v := NewVolumes(goldenVolume(t, "v1.31.0"))
	var cs Chains
	s := New(nil).Stream()
	for i, raw := range raws {
		l := s.ClassifyString(raw)
		if lb, ok := v.Label(&l); ok {
			cs.Add(lb, ChainLine{Seq: uint64(i + 1), Time: l.Time, Text: l.Display()})
		}
	}
	const uid1, uid2 = "5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d5c01", "5f0c3a52-1d7e-4c1b-9a44-7e2b7c9d5c02"
	want := map[string]string{
		uid1: "desired → verifying → mounting → mounted → removing → unmounting → torn down → detached",
		uid2: "desired → verifying → mounting → mounted",
	}
	wantParts := map[string]string{
		StepDesired: PartPopulator, StepVerifying: "mountOrAttachVolumes", StepMounting: "mountOrAttachVolumes",
		StepMounted: "mountOrAttachVolumes", StepRemoving: PartPopulator, StepUnmounting: "unmountVolumes",
		StepTornDown: "unmountVolumes", StepDetached: "unmountDetachDevices",
	}
	got := cs.List()
	if len(got) != 2 {
		for _, c := range got {
			t.Logf("chain %d: %s %s %s: %s", c.ID, c.Volume, c.Pod, c.UID, c.Path())
		}
		t.Fatalf("%d chains, want 2 (one per pod's emptyDir)", len(got))
	}
	for _, c := range got {
		if c.Path() != want[c.UID] {
			t.Errorf("chain of pod %s: %s, want %s", c.UID, c.Path(), want[c.UID])
		}
		if c.Volume != "kubernetes.io/empty-dir/"+c.UID+"-cache" || c.Spec != "cache" || c.Pod != "default/scratch-lab" {
			t.Errorf("chain %d names volume %q spec %q pod %q", c.ID, c.Volume, c.Spec, c.Pod)
		}
		for _, st := range c.Steps {
			if st.Part != wantParts[st.Step] {
				t.Errorf("pod %s, step %s: part %q, want %q", c.UID, st.Step, st.Part, wantParts[st.Step])
			}
			if !strings.Contains(st.First.Text, st.Literal[:8]) {
				t.Errorf("step %s's first line does not say its literal %q: %s", st.Step, st.Literal, st.First.Text)
			}
		}
		for i := 1; i < len(c.Steps); i++ {
			if a, b := c.Steps[i-1].First, c.Steps[i].First; b.Seq < a.Seq || b.Time.Before(a.Time) {
				t.Errorf("pod %s: step %s (line %d) before %s (line %d)", c.UID, c.Steps[i].Step, b.Seq, c.Steps[i-1].Step, a.Seq)
			}
		}
		// The populator asserts the desired state at every pass.
		if c.UID == uid1 && c.Steps[0].Count < 5 {
			t.Errorf("pod %s: desired %d times, want the populator's every pass (≥ 5 in 40 s)", c.UID, c.Steps[0].Count)
		}
	}
}

// literalLine is a klog text line as the kubelet at the site's tag writes
// the site's message about the volume "cache" of pod default/scratch
// (uid), built by the helper the site names, or by its format.
func literalLine(ls volume.LogSite, uid string, seq int) string {
	unique := "kubernetes.io/empty-dir/" + uid + "-cache"
	head := fmt.Sprintf("I1204 21:41:%02d.%06d    7475 %s:%d] ", seq%60, seq, filepath.Base(ls.File), ls.Line)
	switch {
	case ls.Helper == "GenerateMsgDetailed" || ls.Helper == "GenerateMsg":
		detail := fmt.Sprintf("(UniqueName: %q) pod %q (UID: %q)", unique, "scratch", uid)
		if ls.Literal == "Volume detached" { // an AttachedVolume's message
			detail = fmt.Sprintf("(UniqueName: %q) on node %q", unique, "lab")
		} else if strings.Contains(ls.Literal, "Unmount") {
			detail = fmt.Sprintf("(UniqueName: %q) pod %q (UID: %q)", unique, uid, uid) // a MountedVolume's: pod is its uid
		}
		msg := fmt.Sprintf("%v for volume %q %v %v", ls.Literal, "cache", detail, "")
		if ls.Style == "printf" { // klog.Infof(v.GenerateMsgDetailed(…)), before structured logging
			return head + msg
		}
		return head + strconv.Quote(msg) + ` pod="default/scratch"`
	case strings.HasPrefix(ls.Literal, "UnmountVolume.TearDown succeeded"):
		args := []any{unique, "cache", uid, uid, "cache", "kubernetes.io/empty-dir", ""}
		if !strings.Contains(ls.Literal, "OuterVolumeSpecName") {
			args = append(args[:1], args[2:]...)
		}
		return head + fmt.Sprintf(ls.Literal, args...)
	case strings.Contains(ls.Literal, "%"): // v1.20's populator
		return head + fmt.Sprintf(ls.Literal, "cache", "cache", uid)
	case ls.Literal == "Removing volume from desired state":
		return head + fmt.Sprintf("%q pod=%q podUID=%q volumeName=%q", ls.Literal, "default/scratch", uid, "cache")
	}
	return head + fmt.Sprintf("%q pod=%q volumeName=%q volumeSpecName=%q", ls.Literal, "default/scratch", "cache", "cache")
}

// TestVolumeChainsAtEveryGoldenTag: at each tag extractor/volume holds a
// golden reading for, a line written from each step's log site (found
// among the reading's sites by its literal, not by file:line) is labelled
// to its part and joined to its volume's chain, on add and on delete.
func TestVolumeChainsAtEveryGoldenTag(t *testing.T) {
	order := []string{StepDesired, StepVerifying, StepMounting, StepMounted, StepRemoving, StepUnmounting, StepTornDown, StepDetached}
	for _, tag := range goldenTags(t) {
		t.Run(tag, func(t *testing.T) {
			r := goldenVolume(t, tag)
			addMissing := ""
			for _, p := range r.Parts {
				if p.Direction == volume.AddMissing && addMissing == "" {
					addMissing = p.Key
				}
			}
			wantParts := map[string]string{
				StepDesired: PartPopulator, StepVerifying: addMissing, StepMounting: addMissing, StepMounted: addMissing,
				StepRemoving: PartPopulator, StepUnmounting: "unmountVolumes", StepTornDown: "unmountVolumes",
				StepDetached: "unmountDetachDevices",
			}
			const uid = "0b7e9e0c-59a3-4a47-9d1c-000000000001"
			var lines []string
			for _, step := range order {
				i := slices.IndexFunc(r.LogSites, func(ls volume.LogSite) bool {
					return stepOf(ls.Literal) == step && ls.Severity == "info" && ls.Helper != "GenerateErrorDetailed"
				})
				if i < 0 {
					t.Fatalf("no log site at %s says %q", tag, step)
				}
				lines = append(lines, literalLine(r.LogSites[i], uid, len(lines)+1))
			}
			chains, labels := chainsOf(NewVolumes(r), lines)
			if len(labels) != len(lines) {
				t.Fatalf("%d of %d lines labelled:\n%s", len(labels), len(lines), strings.Join(lines, "\n"))
			}
			if len(chains) != 1 {
				for _, c := range chains {
					t.Logf("chain: %+v", c)
				}
				t.Fatalf("%d chains, want the one volume's", len(chains))
			}
			c := chains[0]
			if got, want := c.Path(), strings.Join(order, " → "); got != want {
				t.Errorf("chain %s, want %s", got, want)
			}
			if c.Volume != "kubernetes.io/empty-dir/"+uid+"-cache" || c.UID != uid || c.Spec != "cache" {
				t.Errorf("chain names volume %q uid %q spec %q", c.Volume, c.UID, c.Spec)
			}
			for step, part := range partsOfChain(c) {
				if part != wantParts[step] {
					t.Errorf("step %s: part %q, want %q", step, part, wantParts[step])
				}
			}
		})
	}
}

// TestVolumeLabelVerbosity: a line that says its V (kubelet JSON) is told
// from another site's by the values the site's verbosity variable takes.
func TestVolumeLabelVerbosity(t *testing.T) {
	v := NewVolumes(goldenVolume(t, "v1.31.0"))
	msg := `MountVolume.SetUp succeeded for volume \"cache\" (UniqueName: \"u\") pod \"p\" (UID: \"x\") `
	for _, tt := range []struct {
		v    int
		want bool
	}{{1, true}, {4, true}, {2, false}} {
		raw := fmt.Sprintf(`{"ts":1733348463000.1,"caller":"operationexecutor/operation_generator.go:637","msg":"%s","v":%d}`, msg, tt.v)
		l := New(nil).ClassifyString(raw)
		lb, ok := v.Label(&l)
		if ok != tt.want {
			t.Errorf("v=%d: labelled %v, want %v", tt.v, ok, tt.want)
		}
		if ok && (lb.Step != StepMounted || !slices.Equal(lb.Verbosity, []int{1, 4}) || lb.Volume != "u" || lb.UID != "x") {
			t.Errorf("v=%d: %+v", tt.v, lb)
		}
	}
}

// TestVolumeChainHostile: names a line carries are read as %q printed
// them, control characters removed; the first reading's lines are not
// volume lines.
func TestVolumeChainHostile(t *testing.T) {
	v := NewVolumes(goldenVolume(t, "v1.31.0"))
	spec := "<img src=x onerror=alert(1)>\"\x1b[31m"
	raw := `I1204 21:41:03.178910    7475 reconciler_common.go:245] ` + strconv.Quote(fmt.Sprintf("operationExecutor.VerifyControllerAttachedVolume started for volume %q (UniqueName: %q) pod %q (UID: %q) ", spec, "u\"<b>", "p", "x"))
	l := New(nil).ClassifyString(raw)
	lb, ok := v.Label(&l)
	if !ok || lb.Spec != `<img src=x onerror=alert(1)>"` || lb.Volume != `u"<b>` || lb.UID != "x" {
		t.Errorf("hostile names: %v %+v", ok, lb)
	}
	for _, raw := range []string{
		`I1130 01:02:03.123456    1234 kubelet.go:2407] "SyncLoop ADD" source="api" pods=["default/probe-me"]`,
		`I1130 01:02:03.123456    1234 kubelet.go:2407] "Starting operationExecutor.MountVolume"`, // no " for volume "
	} {
		l := New(nil).ClassifyString(raw)
		if lb, ok := v.Label(&l); ok {
			t.Errorf("%s: labelled %+v", raw, lb)
		}
	}
}

// BenchmarkVolumeLabel is the cost a feed's record adds per line for the
// volume reading (Volumes.Label), over the lab's recorded v1.31.0 journal,
// classified: most lines are no volume line and leave at the first map
// lookup.
//
//	go test -run '^$' -bench VolumeLabel -count 6 ./server/classify/
func BenchmarkVolumeLabel(b *testing.B) {
	f, err := os.Open(filepath.Join("..", "lab", "testdata", "kubelet-v1.31.0-scratch-journal.json.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		b.Fatal(err)
	}
	s := New(nil).Stream()
	var lines []Line
	sc := bufio.NewScanner(z)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, s.ClassifyString(sc.Text()))
	}
	bv, err := os.ReadFile(filepath.Join("..", "..", "extractor", "volume", "testdata", "golden", "v1.31.0.json"))
	if err != nil {
		b.Fatal(err)
	}
	var r volume.Reading
	if err := json.Unmarshal(bv, &r); err != nil {
		b.Fatal(err)
	}
	v := NewVolumes(&r)
	b.ReportAllocs()
	b.ResetTimer()
	n := 0
	for range b.N {
		for i := range lines {
			if _, ok := v.Label(&lines[i]); ok {
				n++
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(lines)), "ns/line")
	if n == 0 {
		b.Fatal("no line labelled")
	}
}
