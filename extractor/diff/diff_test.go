package diff

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

func TestUnified(t *testing.T) {
	for _, tc := range []struct {
		name, from, to, want string
	}{
		{"white space only", "a\n\tb  c\n", "a\n    b c \n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- x\n+++ y\n@@ -10,3 +20,3 @@\n a\n-b\n+B\n c\n"},
		{"added at the end", "a\n", "a\nb\n", "--- x\n+++ y\n@@ -10 +20,2 @@\n a\n+b\n"},
		{"all new", "", "a\n", "--- x\n+++ y\n@@ -9,0 +20 @@\n+a\n"},
		{"far apart makes two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "x\n2\n3\n4\n5\n6\n7\n8\n9\ny\n",
			"--- x\n+++ y\n@@ -10,4 +20,4 @@\n-1\n+x\n 2\n 3\n 4\n@@ -16,4 +26,4 @@\n 7\n 8\n 9\n-10\n+y\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := unified("x", "y", tc.from, tc.to, 10, 20); got != tc.want {
				t.Errorf("got\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

func TestCompareLogsPairsRewordedCalls(t *testing.T) {
	a := []extractor.LogSite{
		{Func: "f", Message: "SyncLoop (ADD, %q): %q", Verbosity: 2, Severity: "info", Style: "printf"},
		{Func: "f", Message: "gone", Severity: "error", Style: "printf"},
		{Func: "f", Message: "kept", Severity: "info", Style: "printf"},
	}
	b := []extractor.LogSite{
		{Func: "f", Message: "SyncLoop ADD", Verbosity: 2, Severity: "info", Style: "structured"},
		{Func: "f", Message: "kept", Severity: "info", Style: "printf"},
		{Func: "g", Message: "new", Severity: "info", Style: "structured"},
	}
	var got []string
	for _, l := range compareLogs(a, b) {
		got = append(got, string(l.Status)+" "+strings.Join(l.Changed, ","))
	}
	want := []string{"changed message,style", "removed ", "same ", "added "}
	// g's call is after f's "kept": added, not paired with anything.
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// The tests below compare real tags; what they assert was read in the
// module zips (pkg/kubelet/kubelet.go, syncLoopIteration) at each tag.

func reading(t *testing.T, tag string) *extractor.Reading {
	t.Helper()
	extractortest.NeedNetwork(t)
	return extractortest.Reading(t, tag, nil)
}

func statuses(d *Diff) map[string]Status {
	m := map[string]Status{}
	for _, c := range d.Cases {
		m[c.Key] = c.Status
	}
	return m
}

// v1.31.0 adds `case update := <-kl.containerManager.Updates():` between
// startup and housekeeping; nothing else in the select moves.
func TestCompareV130V131AddsContainer(t *testing.T) {
	extractortest.Prefetch("v1.30.0", "v1.31.0")
	d := Compare(reading(t, "v1.30.0"), reading(t, "v1.31.0"))
	st := statuses(d)
	if st["container"] != Added {
		t.Errorf("container: %q, want added", st["container"])
	}
	c, _ := d.Case("container")
	if c.To == nil || c.To.Type != "resourceupdates.Update" || c.From != nil {
		t.Errorf("container case: %+v", c)
	}
	for key, s := range st {
		if key != "container" && s == Added || s == Removed {
			t.Errorf("%s: %s", key, s)
		}
	}
	keys := []string{}
	for _, c := range d.Cases {
		keys = append(keys, c.Key)
	}
	if want := []string{"config", "pleg", "sync", "liveness", "readiness", "startup", "container", "housekeeping"}; !slices.Equal(keys, want) {
		t.Errorf("order %v, want %v", keys, want)
	}
	if d.Summary.Added != 1 || d.Summary.Removed != 0 {
		t.Errorf("summary %+v", d.Summary)
	}
}

// v1.20.0 has five cases logging with klog printf calls
// (klog.V(2).Infof("SyncLoop (ADD, %q): %q", …)); v1.22.0 has the
// readiness and startup managers' cases (through handleProbeSync) and logs
// with klog.V(2).InfoS("SyncLoop ADD", …).
func TestCompareV120V122(t *testing.T) {
	extractortest.Prefetch("v1.20.0", "v1.22.0")
	d := Compare(reading(t, "v1.20.0"), reading(t, "v1.22.0"))
	st := statuses(d)
	for _, key := range []string{"readiness", "startup"} {
		if st[key] != Added {
			t.Errorf("%s: %q, want added", key, st[key])
		}
	}
	for _, key := range []string{"config", "pleg", "sync", "liveness", "housekeeping"} {
		c, ok := d.Case(key)
		if !ok || c.Status != Changed || !slices.Contains(c.Changed, "logs") {
			t.Errorf("%s: %+v, want changed logs", key, c)
			continue
		}
		styles := 0
		for _, l := range c.Logs {
			if l.From != nil && l.To != nil && l.From.Style == "printf" && l.To.Style == "structured" {
				styles++
			}
		}
		if styles == 0 {
			t.Errorf("%s: no log call went from printf to structured: %+v", key, c.Logs)
		}
	}
	config, _ := d.Case("config")
	var pair *Log
	for i, l := range config.Logs {
		if l.To != nil && l.To.Message == "SyncLoop ADD" {
			pair = &config.Logs[i]
		}
	}
	if pair == nil || pair.From == nil || pair.From.Message != "SyncLoop (ADD, %q): %q" || pair.From.Verbosity != 2 || pair.To.Verbosity != 2 {
		t.Errorf("SyncLoop ADD paired with %+v", pair)
	}
	if !strings.Contains(config.Code, `-			klog.V(2).Infof("SyncLoop (ADD, %q): %q", u.Source, format.Pods(u.Pods))`) ||
		!strings.Contains(config.Code, `+			klog.V(2).InfoS("SyncLoop ADD", "source", u.Source, "pods", format.Pods(u.Pods))`) {
		t.Errorf("config code diff:\n%s", config.Code)
	}
	if d.Doc.Status != Changed || !strings.Contains(d.Doc.Diff, "health manager") {
		t.Errorf("doc comment: %+v", d.Doc)
	}
}

// v1.35.4's config case logs with klog.V(2).InfoS and klog.ErrorS; v1.36.3's
// with logger.V(2).Info and logger.Error (logger := klog.FromContext(ctx)),
// and it no longer has the kubetypes.SET branch with its "Kubelet does not
// support snapshot update" error. (v1.35.0/.4 and v1.36.0/.1/.3 read alike.)
func TestCompareV135V136ConfigGoesContextual(t *testing.T) {
	extractortest.Prefetch("v1.35.4", "v1.36.3")
	d := Compare(reading(t, "v1.35.4"), reading(t, "v1.36.3"))
	c, _ := d.Case("config")
	if c.Status != Changed || !slices.Contains(c.Changed, "logs") {
		t.Fatalf("config: %+v", c)
	}
	var toContextual, removed []string
	for _, l := range c.Logs {
		switch {
		case l.Status == Changed && l.From.Style == "structured" && l.To.Style == "contextual":
			toContextual = append(toContextual, l.To.Message)
		case l.Status == Removed:
			removed = append(removed, l.From.Message)
		case l.Status != Changed:
			t.Errorf("config log %s: %+v → %+v", l.Status, l.From, l.To)
		}
	}
	want := []string{"Update channel is closed, exiting the sync loop", "SyncLoop ADD", "SyncLoop UPDATE", "SyncLoop REMOVE",
		"SyncLoop RECONCILE", "SyncLoop DELETE", "Invalid operation type received"}
	if !slices.Equal(toContextual, want) {
		t.Errorf("structured → contextual: %q, want %q", toContextual, want)
	}
	if !slices.Equal(removed, []string{"Kubelet does not support snapshot update"}) {
		t.Errorf("removed: %q", removed)
	}
	if !strings.Contains(c.Code, `+			logger.V(2).Info("SyncLoop ADD"`) {
		t.Errorf("code diff:\n%s", c.Code)
	}
}

func TestCompareTagWithItselfIsSame(t *testing.T) {
	r := reading(t, extractor.DefaultTag)
	d := Compare(r, r)
	for _, c := range d.Cases {
		if c.Status != Same || c.Code != "" || len(c.Changed) > 0 {
			t.Errorf("%s: %s %v", c.Key, c.Status, c.Changed)
		}
		for _, l := range c.Logs {
			if l.Status != Same {
				t.Errorf("%s log: %+v", c.Key, l)
			}
		}
	}
	if len(d.Cases) != len(r.Function.Cases) || d.Summary.Same != len(d.Cases) {
		t.Errorf("%d cases, summary %+v", len(d.Cases), d.Summary)
	}
	if d.Doc.Status != Same {
		t.Errorf("doc: %+v", d.Doc)
	}
	for _, h := range d.Helpers {
		if h.Status != Same {
			t.Errorf("helper %+v", h)
		}
	}
	for _, ty := range d.PodWorkers {
		if ty.Status != Same {
			t.Errorf("type %+v", ty)
		}
	}
	for _, s := range d.TwoSets {
		if s.Status != Same {
			t.Errorf("set %+v", s)
		}
	}
	// The JSON contract's top-level and case fields.
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, k := range []string{"from", "to", "cases", "doc", "pod_workers", "two_sets", "summary"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON has no %q", k)
		}
	}
	c0 := m["cases"].([]any)[0].(map[string]any)
	for _, k := range []string{"key", "status", "from", "to", "logs", "calls"} {
		if _, ok := c0[k]; !ok {
			t.Errorf("case JSON has no %q: %v", k, c0)
		}
	}
}

func TestMinorTags(t *testing.T) {
	got := MinorTags("v1.23.4")
	if want := []string{"v1.20.0", "v1.21.0", "v1.22.0", "v1.23.0"}; !slices.Equal(got, want) {
		t.Errorf("MinorTags = %v, want %v", got, want)
	}
	if got := MinorTags("v1.38.0-beta.0"); got[len(got)-1] != "v1.37.0" {
		t.Errorf("MinorTags(beta) ends %s", got[len(got)-1])
	}
	for in, want := range map[string]string{"v1.31.4": "v1.30.0", "v1.21.0": "v1.20.0", "v1.20.3": ""} {
		if got := PreviousMinor(in); got != want {
			t.Errorf("PreviousMinor(%s) = %q, want %q", in, got, want)
		}
	}
}

// typeStatuses is the pod_workers types that differ, name → status and
// what changed.
func typeStatuses(d *Diff) map[string]string {
	m := map[string]string{}
	for _, ty := range d.PodWorkers {
		if ty.Status != Same {
			m[ty.Name] = string(ty.Status) + " " + strings.Join(ty.Changed, ",")
		}
	}
	return m
}

// v1.22.0's pod_workers.go is the pod lifecycle rewrite: read at both tags,
// PodStatusFunc's comment went from "…invoked to generate a pod status." to
// "…invoked to override the pod status when a pod is killed.",
// syncPodFnType's from "the function to invoke to perform a sync." to "…
// perform a sync (reconcile the kubelet state to the desired shape of the
// pod)", podWorkers gained its long comment (it had none), PodWorkType,
// podWork, syncTerminatingPodFnType, syncTerminatedPodFnType and
// podSyncStatus are new, syncPodOptions is gone; OnCompleteFunc,
// KillPodOptions, UpdatePodOptions and PodWorkers keep their comments.
func TestComparePodWorkersTypes(t *testing.T) {
	extractortest.Prefetch("v1.21.0", "v1.22.0")
	d := Compare(reading(t, "v1.21.0"), reading(t, "v1.22.0"))
	want := map[string]string{
		"PodStatusFunc": "changed doc", "syncPodFnType": "changed doc", "podWorkers": "changed doc",
		"PodWorkType": "added ", "podWork": "added ", "syncTerminatingPodFnType": "added ",
		"syncTerminatedPodFnType": "added ", "podSyncStatus": "added ",
		"syncPodOptions": "removed ",
	}
	if got := typeStatuses(d); !maps.Equal(got, want) {
		t.Errorf("pod_workers types that differ:\n got %v\nwant %v", got, want)
	}
	byName := map[string]Type{}
	for _, ty := range d.PodWorkers {
		byName[ty.Name] = ty
	}
	for _, name := range []string{"OnCompleteFunc", "KillPodOptions", "UpdatePodOptions", "PodWorkers"} {
		if ty := byName[name]; ty.Status != Same || ty.Doc != "" || ty.From == nil || ty.To == nil {
			t.Errorf("%s: %+v, want the same", name, ty)
		}
	}
	if ty := byName["PodStatusFunc"]; ty.Doc != "--- v1.21.0 PodStatusFunc\n+++ v1.22.0 PodStatusFunc\n@@ -1 +1 @@\n"+
		"-PodStatusFunc is a function that is invoked to generate a pod status.\n"+
		"+PodStatusFunc is a function that is invoked to override the pod status when a pod is killed.\n" {
		t.Errorf("PodStatusFunc doc diff:\n%s", ty.Doc)
	}
	if ty := byName["podWorkers"]; !strings.HasPrefix(ty.Doc, "--- v1.21.0 podWorkers\n+++ v1.22.0 podWorkers\n@@ -0,0 +1,") ||
		!strings.Contains(ty.Doc, "\n+podWorkers keeps track of operations on pods and ensures each pod is\n") || strings.Contains(ty.Doc, "\n-") {
		t.Errorf("podWorkers doc diff (all added):\n%s", ty.Doc)
	}
	if ty := byName["PodWorkType"]; ty.From != nil || ty.To == nil || ty.To.Kind != "ident" || ty.To.Line != 91 {
		t.Errorf("PodWorkType (type PodWorkType int at L91): %+v", ty.To)
	}
	if ty := byName["syncPodOptions"]; ty.To != nil || ty.From == nil || ty.From.Kind != "struct" || ty.From.Line != 80 {
		t.Errorf("syncPodOptions (struct at v1.21.0 L80): %+v", ty.From)
	}
}

// The two-set sightings are the same six at v1.20.0 and v1.37.2 (read with
// grep '^type \(Desired\|Actual\)StateOfWorld ' under pkg/ at both tags:
// the kubelet's volume manager and plugin manager, and the attach/detach
// controller), though their lines moved. No minor release in between adds,
// moves or drops one; moved, added and gone are checked on v1.37.2's
// sightings with one moved, one reworded, one dropped and one added in a
// file of another name (one of the same name, elsewhere, would be moved).
func TestCompareTwoSets(t *testing.T) {
	extractortest.Prefetch("v1.20.0", extractor.DefaultTag)
	a, b := reading(t, "v1.20.0"), reading(t, extractor.DefaultTag)
	d := Compare(a, b)
	var got []string
	for _, s := range d.TwoSets {
		got = append(got, fmt.Sprintf("%s %s %s:%d→%d", s.Status, s.Name, s.To.File, s.From.Line, s.To.Line))
	}
	want := []string{
		"same ActualStateOfWorld pkg/kubelet/pluginmanager/cache/actual_state_of_world.go:35→37",
		"same DesiredStateOfWorld pkg/kubelet/pluginmanager/cache/desired_state_of_world.go:35→38",
		"same ActualStateOfWorld pkg/kubelet/volumemanager/cache/actual_state_of_world.go:46→48",
		"same DesiredStateOfWorld pkg/kubelet/volumemanager/cache/desired_state_of_world.go:45→53",
		"same ActualStateOfWorld pkg/controller/volume/attachdetach/cache/actual_state_of_world.go:45→47",
		"same DesiredStateOfWorld pkg/controller/volume/attachdetach/cache/desired_state_of_world.go:45→45",
	}
	if !slices.Equal(got, want) {
		t.Errorf("v1.20.0 → %s sightings:\n got %q\nwant %q", extractor.DefaultTag, got, want)
	}

	next := slices.Clone(b.TwoSets)
	moved := slices.IndexFunc(next, func(s extractor.SetDecl) bool {
		return s.File == "pkg/kubelet/volumemanager/cache/actual_state_of_world.go"
	})
	next[moved].File = "pkg/kubelet/volumemanager/state/actual_state_of_world.go" // another package, the same file name
	reworded := slices.IndexFunc(next, func(s extractor.SetDecl) bool {
		return s.File == "pkg/kubelet/pluginmanager/cache/desired_state_of_world.go"
	})
	next[reworded].Doc += "\nIt is reworded."
	next = slices.DeleteFunc(next, func(s extractor.SetDecl) bool {
		return s.File == "pkg/controller/volume/attachdetach/cache/desired_state_of_world.go"
	})
	next = append(next, extractor.SetDecl{Name: "DesiredStateOfWorld", File: "pkg/kubelet/cm/dra/state.go", Line: 30, Kind: "interface"})
	file := func(s *extractor.SetDecl) string {
		if s == nil {
			return "-"
		}
		return s.File
	}
	got = nil
	for _, s := range compareSets(b.TwoSets, next) {
		got = append(got, string(s.Status)+" "+s.Name+" "+file(s.From)+" → "+file(s.To))
	}
	want = []string{
		"same ActualStateOfWorld pkg/kubelet/pluginmanager/cache/actual_state_of_world.go → pkg/kubelet/pluginmanager/cache/actual_state_of_world.go",
		"changed DesiredStateOfWorld pkg/kubelet/pluginmanager/cache/desired_state_of_world.go → pkg/kubelet/pluginmanager/cache/desired_state_of_world.go",
		"moved ActualStateOfWorld pkg/kubelet/volumemanager/cache/actual_state_of_world.go → pkg/kubelet/volumemanager/state/actual_state_of_world.go",
		"same DesiredStateOfWorld pkg/kubelet/volumemanager/cache/desired_state_of_world.go → pkg/kubelet/volumemanager/cache/desired_state_of_world.go",
		"same ActualStateOfWorld pkg/controller/volume/attachdetach/cache/actual_state_of_world.go → pkg/controller/volume/attachdetach/cache/actual_state_of_world.go",
		"added DesiredStateOfWorld - → pkg/kubelet/cm/dra/state.go",
		"gone DesiredStateOfWorld pkg/controller/volume/attachdetach/cache/desired_state_of_world.go → -",
	}
	if !slices.Equal(got, want) {
		t.Errorf("sightings moved, reworded, dropped and added:\n got %q\nwant %q", got, want)
	}
}

// v1.21.0 moved the liveness case's body into a new same-file helper,
// handleProbeSync(kl, update, handler, "liveness", "unhealthy"), which the
// new readiness and startup cases call too; isSyncPodWorthy is in both
// (read in pkg/kubelet/kubelet.go: v1.20.0 L1947-1961, v1.21.0 L1998-2001
// and L2025-2035). v1.36.0 gave handleProbeSync a ctx and a contextual
// logger (v1.35.4 L2699, v1.36.0 L2817).
func TestCompareHelpersCalled(t *testing.T) {
	extractortest.Prefetch("v1.20.0", "v1.21.0", "v1.35.4", "v1.36.0")
	d := Compare(reading(t, "v1.20.0"), reading(t, "v1.21.0"))
	var helpers []string
	for _, h := range d.Helpers {
		helpers = append(helpers, h.Name+" "+string(h.Status))
	}
	if want := []string{"isSyncPodWorthy same", "handleProbeSync added"}; !slices.Equal(helpers, want) {
		t.Errorf("v1.20.0 → v1.21.0 helpers %q, want %q", helpers, want)
	}
	live, _ := d.Case("liveness")
	if live.Status != Changed || !slices.Contains(live.Changed, "calls") ||
		!slices.Equal(live.Calls.Added, []string{"handleProbeSync"}) ||
		!slices.Equal(live.Calls.Removed, []string{"kl.podManager.GetPodByUID", "handler.HandlePodSyncs"}) {
		t.Errorf("liveness: %s %v, calls %+v", live.Status, live.Changed, live.Calls)
	}
	// Its log call moved into the helper, reworded and structured.
	var moved *Log
	for i, l := range live.Logs {
		if l.To != nil && l.To.Message == "SyncLoop (probe)" {
			moved = &live.Logs[i]
		}
	}
	if moved == nil || moved.From == nil || moved.From.Message != "SyncLoop (container unhealthy): %q" || moved.From.Func != "syncLoopIteration" ||
		moved.To.Func != "handleProbeSync" || moved.To.Line != 2033 || !slices.Equal(moved.Changed, []string{"message", "style", "func"}) {
		t.Errorf("liveness's V(1) log call: %+v", moved)
	}
	for _, key := range []string{"readiness", "startup"} {
		if c, _ := d.Case(key); c.Status != Added || !slices.Contains(c.Calls.Added, "handleProbeSync") {
			t.Errorf("%s: %s, calls %+v", key, c.Status, c.Calls)
		}
	}

	d = Compare(reading(t, "v1.35.4"), reading(t, "v1.36.0"))
	helpers = nil
	for _, h := range d.Helpers {
		helpers = append(helpers, h.Name+" "+string(h.Status))
		if h.Name == "handleProbeSync" && (!strings.HasPrefix(h.Diff, "--- v1.35.4 pkg/kubelet/kubelet.go:2699\n+++ v1.36.0 pkg/kubelet/kubelet.go:2817\n") ||
			!strings.Contains(h.Diff, "\n-func handleProbeSync(kl *Kubelet, update proberesults.Update, handler SyncHandler, probe, status string) {\n") ||
			!strings.Contains(h.Diff, "\n+func handleProbeSync(ctx context.Context, kl *Kubelet, update proberesults.Update, handler SyncHandler, probe, status string) {\n+\tlogger := klog.FromContext(ctx)\n")) {
			t.Errorf("handleProbeSync diff:\n%s", h.Diff)
		}
	}
	if want := []string{"isSyncPodWorthy same", "handleProbeSync changed"}; !slices.Equal(helpers, want) {
		t.Errorf("v1.35.4 → v1.36.0 helpers %q, want %q", helpers, want)
	}
}
