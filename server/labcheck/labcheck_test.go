package labcheck

// The checks on recorded real journals of the lab (server/lab/testdata):
// a v1.33.0 kubelet at -v=4 (classified by message against the v1.31.0
// Reading), a v1.31.0 one (classified exactly) and a v1.31.0 one in the
// kubelet's JSON format (V levels printed). The lab's pod is a static pod,
// so the kubelet names it default/probe-me-lab. The variants are made by
// the classifier's own parsing of those journals: a pod renamed where the
// classifier finds it named, and the lines a kubelet at -v=2 would not
// have logged (the classifier's V level of each) left out.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/classify"
)

func reading(t testing.TB, tag string) *extractor.Reading {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "classify", "testdata", "reading-"+tag+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r extractor.Reading
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// journal is a recorded journal's lines, as the relay sends them.
func journal(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "lab", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(name, ".gz") {
		z, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(z); err != nil {
			t.Fatal(err)
		}
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// classified is raws classified in order, as a feed does, numbered from 1
// as a feed's sequence is.
func classified(r *extractor.Reading, raws []string) []Line {
	cls := classify.New(r).Stream()
	out := make([]Line, len(raws))
	for i, raw := range raws {
		out[i] = Line{Seq: uint64(i + 1), Line: cls.ClassifyString(raw)}
	}
	return out
}

// renamed is raws with the pod from renamed to, in every line the
// classifier finds naming it (as "namespace/name").
func renamed(r *extractor.Reading, raws []string, from, to string) []string {
	cls := classify.New(r).Stream()
	_, fromName, _ := strings.Cut(from, "/")
	_, toName, _ := strings.Cut(to, "/")
	out := make([]string, len(raws))
	for i, raw := range raws {
		out[i] = raw
		if l := cls.ClassifyString(raw); containsPod(l.Pods, from) {
			out[i] = strings.ReplaceAll(raw, fromName, toName)
		}
	}
	return out
}

func containsPod(pods []string, p string) bool {
	for _, q := range pods {
		if q == p {
			return true
		}
	}
	return false
}

// atV is raws as a kubelet at -v=v would have logged them: without the
// lines the classifier says are of a higher V level.
func atV(r *extractor.Reading, raws []string, v int) []string {
	cls := classify.New(r).Stream()
	var out []string
	for _, raw := range raws {
		if l := cls.ClassifyString(raw); l.Verbosity <= v {
			out = append(out, raw)
		}
	}
	return out
}

// want is one check as a test expects it: passed with its line (the
// feed's sequence number, and text the line holds), or not with a text.
type want struct {
	ok   bool
	seq  uint64
	line string // in the evidence line (ok), or the check's text (not ok)
}

func TestJournal(t *testing.T) {
	r31 := reading(t, "v1.31.0")
	v133 := journal(t, "kubelet-v1.33.0-journal.json.gz")
	v131 := journal(t, "kubelet-journal-excerpt.json")
	jsonf := journal(t, "kubelet-jsonformat-excerpt.txt")
	r20 := reading(t, "v1.20.0")
	b, err := os.ReadFile(filepath.Join("..", "classify", "testdata", "klog-v1.20.0.txt"))
	if err != nil {
		t.Fatal(err)
	}
	v120 := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	const (
		add133, live133, rm133, v4133     = `"SyncLoop ADD" source="file" pods=["default/probe-me-lab"`, `probe="liveness" status="unhealthy" pod="default/probe-me-lab"`, `"SyncLoop REMOVE" source="file" pods=["default/probe-me-lab"]`, `"SyncLoop (housekeeping)"`
		addJSON, liveJSON, rmJSON, v4JSON = `"msg":"SyncLoop ADD","v":2,"source":"file"`, `"probe":"liveness","status":"unhealthy"`, `"msg":"SyncLoop REMOVE"`, `"msg":"SyncLoop (housekeeping)","v":4`
		below4                            = "not yet: no V(4) line, only V(2) and below; a kubelet at -v below 4 cannot show them (restart it with -v=4)"
	)
	tests := []struct {
		name                             string
		pod                              string
		raws                             []string
		added, liveness, deleted, verbos want
	}{
		{"v1.33.0 by message: the lab's static pod", "", v133,
			want{true, 914, add133}, want{true, 1327, live133}, want{true, 2529, rm133}, want{true, 1103, v4133}},
		{"v1.33.0: the class names the static pod's own name", "probe-me-lab", v133,
			want{true, 914, add133}, want{true, 1327, live133}, want{true, 2529, rm133}, want{true, 1103, v4133}},
		{"v1.33.0: another namespace", "kube-system/probe-me", v133,
			want{false, 0, "saw default/probe-me-lab, default/quiet-lab added, not kube-system/probe-me"},
			want{false, 0, "saw default/probe-me-lab failing its liveness probe, not kube-system/probe-me"},
			want{false, 0, "saw default/probe-me-lab deleted, not kube-system/probe-me"}, want{true, 1103, v4133}},
		{"v1.33.0 with the pod named otherwise", "", renamed(r31, v133, "default/probe-me-lab", "default/probe-demo-vm"),
			want{false, 0, "saw default/probe-demo-vm, default/quiet-lab added, not probe-me"},
			want{false, 0, "saw default/probe-demo-vm failing its liveness probe, not probe-me"},
			want{false, 0, "saw default/probe-demo-vm deleted, not probe-me"}, want{true, 1103, v4133}},
		{"v1.33.0 with the pod as kubectl run names it", "", renamed(r31, v133, "default/probe-me-lab", "default/probe-me"),
			want{true, 914, `pods=["default/probe-me",`}, want{true, 1327, `pod="default/probe-me"`}, want{true, 2529, `pods=["default/probe-me"]`}, want{true, 1103, v4133}},
		{"v1.31.0 exact", "", v131,
			want{true, 182, add133}, want{true, 198, live133}, want{true, 229, rm133}, want{true, 186, v4133}},
		{"v1.31.0 at -v=2", "", atV(r31, v131, 2),
			want{true, 182, add133}, want{true, 192, live133}, want{true, 201, rm133}, want{false, 0, below4}},
		{"kubelet JSON format", "", jsonf,
			want{true, 42, addJSON}, want{true, 57, liveJSON}, want{true, 68, rmJSON}, want{true, 47, v4JSON}},
		{"kubelet JSON format at -v=2", "", atV(r31, jsonf, 2),
			want{true, 42, addJSON}, want{true, 52, liveJSON}, want{true, 56, rmJSON}, want{false, 0, below4}},
		// v1.20.0's printf style (the classifier's fixture, written for
		// it, not recorded): a static pod probe-demo on node vm.
		{"v1.20.0 printf style", "", v120,
			want{false, 0, "saw default/probe-demo-vm added, not probe-me"}, want{false, 0, "saw default/probe-demo-vm failing its liveness probe, not probe-me"},
			want{false, 0, "not yet"}, want{true, 3, "SyncLoop (housekeeping, skipped)"}},
		{"v1.20.0 printf style, the class's pod named", "probe-demo", v120,
			want{true, 2, `SyncLoop (ADD, "file"): "probe-demo-vm_default(`}, want{true, 5, `SyncLoop (container unhealthy): "probe-demo-vm_default(`},
			want{false, 0, "not yet"}, want{true, 3, "SyncLoop (housekeeping, skipped)"}},
		{"no journal yet", "", nil, want{false, 0, "not yet"}, want{false, 0, "not yet"}, want{false, 0, "not yet"}, want{false, 0, "not yet"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := r31
			if strings.HasPrefix(tt.name, "v1.20.0") {
				r = r20
			}
			res := Journal(tt.pod, "room-x", r, classified(r, tt.raws))
			for _, c := range []struct {
				name string
				got  Check
				want want
			}{{"added", res.Added, tt.added}, {"liveness_failed", res.LivenessFailed, tt.liveness}, {"deleted", res.Deleted, tt.deleted}, {"verbosity", res.Verbosity, tt.verbos}} {
				checkOne(t, c.name, c.got, c.want)
			}
		})
	}
}

func checkOne(t *testing.T, name string, got Check, w want) {
	t.Helper()
	switch {
	case got.OK != w.ok:
		t.Errorf("%s: ok %v, want %v (%s)", name, got.OK, w.ok, got.Text)
	case !w.ok && got.Text != w.line:
		t.Errorf("%s: %q, want %q", name, got.Text, w.line)
	case !w.ok && got.At != nil:
		t.Errorf("%s: not passed, but with evidence %+v", name, got.At)
	case !w.ok:
	case got.At == nil:
		t.Errorf("%s: passed without evidence", name)
	case got.At.Seq != w.seq:
		t.Errorf("%s: line %d, want %d: %s", name, got.At.Seq, w.seq, got.At.Line)
	case !strings.Contains(strings.ReplaceAll(got.At.Line, `\"`, `"`), w.line):
		t.Errorf("%s: line %d is %s, want it to hold %s", name, got.At.Seq, got.At.Line, w.line)
	case got.At.Time == nil || got.At.Link != fmt.Sprintf("/feeds/room-x/fired/%s/lines?before=%d&limit=1", got.At.Case, w.seq+1):
		t.Errorf("%s: time %v, link %q", name, got.At.Time, got.At.Link)
	}
}

// TestCheckerAnyOrder: the server gives a Checker a feed's lines case by
// case, as they are stored; the result is the journal's, in its order.
func TestCheckerAnyOrder(t *testing.T) {
	r31 := reading(t, "v1.31.0")
	lines := classified(r31, journal(t, "kubelet-v1.33.0-journal.json.gz"))
	want := Journal("", "room-x", r31, lines)
	byCase := map[string][]Line{}
	for _, l := range lines {
		byCase[l.Case] = append(byCase[l.Case], l)
	}
	c := New("", "room-x", r31)
	for _, key := range []string{"sync", "liveness", "housekeeping", "pleg", "config", "readiness", "startup", "container", ""} {
		for i := range byCase[key] {
			c.Add(&byCase[key][i])
		}
	}
	got, _ := json.Marshal(c.Result())
	wantJSON, _ := json.Marshal(want)
	if !bytes.Equal(got, wantJSON) || want.Done() != 4 {
		t.Errorf("case by case:\n%s\nin order (%d done):\n%s", got, want.Done(), wantJSON)
	}
}
