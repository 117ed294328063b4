package anchor

import (
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor/extractortest"
)

// TestReanchorConfigCase comments on lines of the config case at v1.30.0
// and finds them again at v1.31.0 (the function moved up 16 lines, the
// case did not change) and at v1.36.0 (klog.V(2).InfoS became
// logger.V(2).Info, the handlers take ctx, the SET case is gone). The
// expected lines were read in the source at each tag:
//
//	v1.30.0 kubelet.go:2413  case u, open := <-configCh:
//	v1.31.0 kubelet.go:2397  case u, open := <-configCh:
//	v1.36.0 kubelet.go:2699  case u, open := <-configCh:
func TestReanchorConfigCase(t *testing.T) {
	extractortest.NeedNetwork(t)
	extractortest.Prefetch("v1.30.0", "v1.31.0", "v1.36.0")
	r30 := extractortest.Reading(t, "v1.30.0", nil)
	r31 := extractortest.Reading(t, "v1.31.0", nil)
	r36 := extractortest.Reading(t, "v1.36.0", nil)

	type at struct {
		status     Status
		start, end int
		text       string // for Changed: what the lines say now
	}
	for _, tc := range []struct {
		name       string
		start, end int    // at v1.30.0
		exact      string // what those lines say there (whitespace aside)
		v31, v36   at
	}{
		{
			name: "the ADD log line", start: 2423, end: 2423,
			exact: `klog.V(2).InfoS("SyncLoop ADD", "source", u.Source, "pods", klog.KObjSlice(u.Pods))`,
			v31:   at{Moved, 2407, 2407, ""},
			v36:   at{Changed, 2709, 2709, `logger.V(2).Info("SyncLoop ADD", "source", u.Source, "pods", klog.KObjSlice(u.Pods))`},
		},
		{
			// handler.HandlePodUpdates(u.Pods) is on two lines of the case
			// (UPDATE and DELETE): the context must pick DELETE's.
			name: "DELETE's HandlePodUpdates", start: 2441, end: 2441,
			exact: `handler.HandlePodUpdates(u.Pods)`,
			v31:   at{Moved, 2425, 2425, ""},
			v36:   at{Changed, 2727, 2727, `handler.HandlePodUpdates(ctx, u.Pods)`},
		},
		{
			name: "the SET case, gone at v1.36.0", start: 2442, end: 2444,
			exact: "case kubetypes.SET:\n// TODO: Do we want to support this?\nklog.ErrorS(nil, \"Kubelet does not support snapshot update\")",
			v31:   at{Moved, 2426, 2428, ""},
			v36:   at{Orphan, 0, 0, ""},
		},
		{
			name: "AddSource, the same text everywhere", start: 2449, end: 2449,
			exact: `kl.sourcesReady.AddSource(u.Source)`,
			v31:   at{Moved, 2433, 2433, ""},
			v36:   at{Moved, 2732, 2732, ""},
		},
		{
			name: "the ADD branch as a range", start: 2422, end: 2428,
			exact: "case kubetypes.ADD:\n" +
				`klog.V(2).InfoS("SyncLoop ADD", "source", u.Source, "pods", klog.KObjSlice(u.Pods))` + "\n" +
				"// After restarting, kubelet will get all existing pods through\n" +
				"// ADD as if they are new pods. These pods will then go through the\n" +
				"// admission process and *may* be rejected. This can be resolved\n" +
				"// once we have checkpointing.\n" +
				"handler.HandlePodAdditions(u.Pods)",
			v31: at{Moved, 2406, 2412, ""},
			v36: at{Changed, 2708, 2714, ""},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, err := New(r30, tc.start, tc.end)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(normLines(q.Exact), "\n"); got != tc.exact {
				t.Fatalf("v1.30.0 L%d-%d quote:\n%s\nwant:\n%s", tc.start, tc.end, got, tc.exact)
			}
			if q.Case != "config" {
				t.Errorf("quote's case %q, want config", q.Case)
			}
			if err := q.Valid(); err != nil {
				t.Errorf("Valid: %v", err)
			}
			if got := Find(r30, q); got.Status != Same || got.Start != tc.start || got.End != tc.end {
				t.Errorf("at v1.30.0 itself: %+v, want same %d-%d", got, tc.start, tc.end)
			}
			for _, w := range []struct {
				tag  string
				want at
				res  Result
			}{{"v1.31.0", tc.v31, Find(r31, q)}, {"v1.36.0", tc.v36, Find(r36, q)}} {
				got := w.res
				if got.Status != w.want.status || got.Start != w.want.start || got.End != w.want.end {
					t.Errorf("at %s: %s %d-%d, want %s %d-%d", w.tag, got.Status, got.Start, got.End, w.want.status, w.want.start, w.want.end)
					continue
				}
				if w.want.text != "" && norm(got.Text) != w.want.text {
					t.Errorf("at %s: text %q, want %q", w.tag, norm(got.Text), w.want.text)
				}
				if got.Status != Orphan && got.Case != "config" {
					t.Errorf("at %s: case %q, want config", w.tag, got.Case)
				}
			}
		})
	}
}

// TestQuoteLimits: lines off the page and oversized quotes are refused.
func TestQuoteLimits(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, "v1.31.0", nil)
	if _, err := New(r, 10, 12); err != ErrNoLines {
		t.Errorf("lines 10-12 (not shown): %v, want ErrNoLines", err)
	}
	f := r.Function
	if _, err := New(r, f.Start, f.Start+MaxLines); err == nil {
		t.Errorf("%d lines: no error", MaxLines+1)
	}
	bad := Quote{Exact: "x\ny", Start: 5, End: 5}
	if bad.Valid() == nil {
		t.Errorf("two lines quoted for one line number: valid")
	}
	if (Quote{Exact: "  ", Start: 1, End: 1}).Valid() == nil {
		t.Errorf("blank quote: valid")
	}
}

func TestLikeness(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		min  float64
		max  float64
	}{
		{`handler.HandlePodAdditions(u.Pods)`, `handler.HandlePodAdditions(ctx, u.Pods)`, 0.85, 0.95},
		{`handler.HandlePodAdditions(u.Pods)`, `handler.HandlePodUpdates(ctx, u.Pods)`, 0, minLikeness},
		{`case kubetypes.SET:`, `case kubetypes.ADD:`, 0, minLikeness},
		{`x := "a \" b"`, `x := "a \" b"`, 1, 1},
	} {
		if got := likeness(tc.a, tc.b); got < tc.min || got > tc.max {
			t.Errorf("likeness(%q, %q) = %.2f, want %.2f..%.2f", tc.a, tc.b, got, tc.min, tc.max)
		}
	}
}
