package extractor_test

// integration_test.go checks what Extract makes of real Kubernetes module
// zips, as extractortest finds or downloads them. The Readings come through
// extractortest.Reading, which extracts each once for every test binary while
// the extractor's code (its source, its modules, Go) is unchanged, as
// writers_test.go's do: the same Reading every run, without extracting eight
// real tags again when nothing that makes it has changed. Load's tests
// (fetch_real_test.go, loaddir_test.go) extract real tags on every run.

import (
	"archive/zip"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// extractZip opens the zip at p and extracts the Reading of tag from it.
func extractZip(tb testing.TB, p, tag string, symbols []string) *extractor.Reading {
	tb.Helper()
	zr, err := zip.OpenReader(p)
	if err != nil {
		tb.Fatal(err)
	}
	defer zr.Close()
	sub, err := fs.Sub(zr, "k8s.io/kubernetes@"+tag)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := extractor.Extract(sub, tag, symbols)
	if err != nil {
		tb.Fatalf("Extract %s: %v", tag, err)
	}
	return r
}

// realWant is what was read, by eye, in the source at a tag.
type realWant struct {
	tag                    string
	docStart, start, end   int
	cases                  []caseLines // in source order
	logs                   []logWant
	helpers                []string // "name@start-end[cases]"
	podWorkers             []string
	twoSets                []string // "Name@file:line"
	configCalls, plegCalls []string
	symbols                map[string]string // name → "file:line" or ""
}

type caseLines struct {
	key        string
	start, end int
	typ        string
}

type logWant struct {
	key  string // the case the log belongs to
	line int
	fn   string
	v    int
	sev  string
	sty  string
	msg  string
}

var realTwoSets = func(dswK, aswK, dswP, aswP, dswC, aswC int) []string {
	return []string{
		fmt.Sprintf("ActualStateOfWorld@pkg/kubelet/pluginmanager/cache/actual_state_of_world.go:%d", aswP),
		fmt.Sprintf("DesiredStateOfWorld@pkg/kubelet/pluginmanager/cache/desired_state_of_world.go:%d", dswP),
		fmt.Sprintf("ActualStateOfWorld@pkg/kubelet/volumemanager/cache/actual_state_of_world.go:%d", aswK),
		fmt.Sprintf("DesiredStateOfWorld@pkg/kubelet/volumemanager/cache/desired_state_of_world.go:%d", dswK),
		fmt.Sprintf("ActualStateOfWorld@pkg/controller/volume/attachdetach/cache/actual_state_of_world.go:%d", aswC),
		fmt.Sprintf("DesiredStateOfWorld@pkg/controller/volume/attachdetach/cache/desired_state_of_world.go:%d", dswC),
	}
}

// realWants were checked line by line against the source at each tag
// (pkg/kubelet/kubelet.go, … in the module zip of each tag).
var realWants = []realWant{
	{
		tag: "v1.20.0", docStart: 1840, start: 1872, end: 1975,
		cases: []caseLines{
			{"config", 1875, 1911, "kubetypes.PodUpdate"}, {"pleg", 1913, 1938, "*pleg.PodLifecycleEvent"},
			{"sync", 1939, 1946, "time.Time"}, {"liveness", 1947, 1961, "proberesults.Update"},
			{"housekeeping", 1962, 1972, "time.Time"},
		},
		logs: []logWant{
			{"config", 1879, "syncLoopIteration", 0, "error", "printf", "Update channel is closed. Exiting the sync loop."},
			{"config", 1885, "syncLoopIteration", 2, "info", "printf", "SyncLoop (ADD, %q): %q"},
			{"config", 1898, "syncLoopIteration", 4, "info", "printf", "SyncLoop (RECONCILE, %q): %q"},
			{"liveness", 1956, "syncLoopIteration", 4, "info", "printf", "SyncLoop (container unhealthy): ignore irrelevant update: %#v"},
			{"liveness", 1959, "syncLoopIteration", 1, "info", "printf", "SyncLoop (container unhealthy): %q"},
			{"housekeeping", 1970, "syncLoopIteration", 0, "error", "printf", "Failed cleaning pods: %v"},
		},
		helpers:     []string{"isSyncPodWorthy@2267-2270[pleg]"},
		podWorkers:  []string{"OnCompleteFunc:func@42", "PodStatusFunc:func@45", "KillPodOptions:struct@48", "UpdatePodOptions:struct@56", "PodWorkers:interface@74", "syncPodOptions:struct@81", "syncPodFnType:func@95", "podWorkers:struct@108"},
		twoSets:     realTwoSets(45, 46, 35, 35, 45, 45),
		configCalls: []string{"handler.HandlePodAdditions", "handler.HandlePodUpdates", "handler.HandlePodRemoves", "handler.HandlePodReconcile", "kl.sourcesReady.AddSource"},
		plegCalls:   []string{"kl.lastContainerStartedTime.Add", "isSyncPodWorthy", "kl.podManager.GetPodByUID", "handler.HandlePodSyncs", "kl.deletePodSandbox", "kl.cleanUpContainersInPod"},
	},
	{
		tag: "v1.25.0", docStart: 2051, start: 2083, end: 2196,
		cases: []caseLines{
			{"config", 2086, 2122, "kubetypes.PodUpdate"}, {"pleg", 2124, 2146, "*pleg.PodLifecycleEvent"},
			{"sync", 2147, 2154, "time.Time"}, {"liveness", 2155, 2158, "proberesults.Update"},
			{"readiness", 2159, 2167, "proberesults.Update"}, {"startup", 2168, 2176, "proberesults.Update"},
			{"housekeeping", 2177, 2193, "time.Time"},
		},
		logs: []logWant{
			{"config", 2090, "syncLoopIteration", 0, "error", "structured", "Update channel is closed, exiting the sync loop"},
			{"config", 2096, "syncLoopIteration", 2, "info", "structured", "SyncLoop ADD"},
			{"liveness", 2206, "handleProbeSync", 1, "info", "structured", "SyncLoop (probe)"},
			{"startup", 2206, "handleProbeSync", 1, "info", "structured", "SyncLoop (probe)"},
			{"housekeeping", 2186, "syncLoopIteration", 0, "error", "structured", "Failed cleaning pods"},
			{"housekeeping", 2190, "syncLoopIteration", 0, "error", "structured", "Housekeeping took longer than 15s"},
		},
		helpers:    []string{"isSyncPodWorthy@2507-2510[pleg]", "handleProbeSync@2198-2208[liveness,readiness,startup]"},
		podWorkers: []string{"OnCompleteFunc:func@43", "PodStatusFunc:func@46", "KillPodOptions:struct@49", "UpdatePodOptions:struct@66", "PodWorkType:ident@91", "PodWorkerState:ident@107", "podWork:struct@125", "PodWorkers:interface@135", "syncPodFnType:func@221", "syncTerminatingPodFnType:func@224", "syncTerminatedPodFnType:func@227", "podSyncStatus:struct@242", "podWorkers:struct@379"},
		twoSets:    realTwoSets(50, 47, 35, 35, 45, 47),
	},
	{
		tag: "v1.31.0", docStart: 2362, start: 2394, end: 2518,
		cases: []caseLines{
			{"config", 2397, 2433, "kubetypes.PodUpdate"}, {"pleg", 2435, 2451, "*pleg.PodLifecycleEvent"},
			{"sync", 2452, 2459, "time.Time"}, {"liveness", 2460, 2463, "proberesults.Update"},
			{"readiness", 2464, 2472, "proberesults.Update"}, {"startup", 2473, 2481, "proberesults.Update"},
			{"container", 2482, 2497, "resourceupdates.Update"}, {"housekeeping", 2499, 2515, "time.Time"},
		},
		logs: []logWant{
			{"config", 2407, "syncLoopIteration", 2, "info", "structured", "SyncLoop ADD"},
			{"container", 2486, "syncLoopIteration", 3, "info", "structured", "SyncLoop (containermanager): event for pod"},
			{"readiness", 2528, "handleProbeSync", 1, "info", "structured", "SyncLoop (probe)"},
			{"housekeeping", 2508, "syncLoopIteration", 0, "error", "structured", "Failed cleaning pods"},
		},
		helpers:    []string{"isSyncPodWorthy@3053-3056[pleg]", "handleProbeSync@2520-2530[liveness,readiness,startup]"},
		podWorkers: []string{"OnCompleteFunc:func@44", "PodStatusFunc:func@47", "KillPodOptions:struct@50", "UpdatePodOptions:struct@67", "PodWorkerState:ident@92", "PodWorkerSync:struct@120", "podWork:struct@132", "PodWorkers:interface@142", "podSyncer:interface@249", "syncPodFnType:func@272", "syncTerminatingPodFnType:func@273", "syncTerminatingRuntimePodFnType:func@274", "syncTerminatedPodFnType:func@275", "podSyncerFuncs:struct@278", "podSyncStatus:struct@322", "podWorkers:struct@551"},
		twoSets:    realTwoSets(52, 48, 35, 35, 45, 46),
	},
	{
		tag: "v1.37.2", docStart: 2714, start: 2746, end: 2866,
		cases: []caseLines{
			{"config", 2750, 2783, "kubetypes.PodUpdate"}, {"pleg", 2784, 2800, "*pleg.PodLifecycleEvent"},
			{"sync", 2801, 2808, "time.Time"}, {"liveness", 2809, 2812, "proberesults.Update"},
			{"readiness", 2813, 2821, "proberesults.Update"}, {"startup", 2822, 2830, "proberesults.Update"},
			{"container", 2831, 2846, "resourceupdates.Update"}, {"housekeeping", 2847, 2863, "time.Time"},
		},
		logs: []logWant{
			{"config", 2754, "syncLoopIteration", 0, "error", "contextual", "Update channel is closed, exiting the sync loop"},
			{"config", 2760, "syncLoopIteration", 2, "info", "contextual", "SyncLoop ADD"},
			{"pleg", 2788, "syncLoopIteration", 2, "info", "contextual", "SyncLoop (PLEG): event for pod"},
			{"sync", 2807, "syncLoopIteration", 4, "info", "contextual", "SyncLoop (SYNC) pods"},
			{"liveness", 2874, "handleProbeSync", 4, "info", "contextual", "SyncLoop (probe): ignore irrelevant update"},
			{"liveness", 2877, "handleProbeSync", 1, "info", "contextual", "SyncLoop (probe)"},
			{"container", 2835, "syncLoopIteration", 3, "info", "contextual", "SyncLoop (containermanager): event for pod"},
			{"housekeeping", 2856, "syncLoopIteration", 0, "error", "contextual", "Failed cleaning pods"},
			{"housekeeping", 2860, "syncLoopIteration", 0, "error", "contextual", "Housekeeping took longer than expected"},
		},
		helpers:     []string{"isSyncPodWorthy@3533-3536[pleg]", "handleProbeSync@2868-2879[liveness,readiness,startup]"},
		podWorkers:  []string{"OnCompleteFunc:func@49", "PodStatusFunc:func@52", "KillPodOptions:struct@55", "UpdatePodOptions:struct@83", "PodWorkerState:ident@108", "PodWorkerSync:struct@136", "podWork:struct@148", "PodWorkers:interface@158", "podSyncer:interface@265", "syncPodFnType:func@288", "syncTerminatingPodFnType:func@289", "syncTerminatingRuntimePodFnType:func@290", "syncTerminatedPodFnType:func@291", "podSyncerFuncs:struct@294", "podSyncStatus:struct@338", "podWorkers:struct@572"},
		twoSets:     realTwoSets(53, 48, 38, 37, 45, 47),
		configCalls: []string{"handler.HandlePodAdditions", "handler.HandlePodUpdates", "handler.HandlePodRemoves", "handler.HandlePodReconcile", "kl.sourcesReady.AddSource"},
		plegCalls:   []string{"isSyncPodWorthy", "kl.podManager.GetPodByUID", "handler.HandlePodSyncs", "kl.cleanUpContainersInPod"},
		symbols: map[string]string{
			"pkg/kubelet/prober/results.(*manager).Set": "pkg/kubelet/prober/results/results_manager.go:113",
			"pkg/kubelet.(*Kubelet).syncLoop":           "pkg/kubelet/kubelet.go:2671",
			"pkg/kubelet/pleg.PodLifecycleEvent":        "pkg/kubelet/pleg/pleg.go:54",
			"pkg/kubelet.podWorkers":                    "pkg/kubelet/pod_workers.go:572",
			"pkg/kubelet.PodWorkers.UpdatePod":          "pkg/kubelet/pod_workers.go:168",
			"pkg/kubelet/pleg.Relist":                   "",
		},
	},
}

func TestExtractRealTags(t *testing.T) {
	extractortest.NeedNetwork(t)
	for _, w := range realWants {
		t.Run(w.tag, func(t *testing.T) {
			t.Parallel()
			var syms []string
			for s := range w.symbols {
				syms = append(syms, s)
			}
			r := extractortest.Reading(t, w.tag, syms)
			checkReal(t, r, w)
		})
	}
}

func checkReal(t *testing.T, r *extractor.Reading, w realWant) {
	fn := r.Function
	if fn.DocStart != w.docStart || fn.Start != w.start || fn.End != w.end {
		t.Errorf("function lines %d/%d-%d, want %d/%d-%d", fn.DocStart, fn.Start, fn.End, w.docStart, w.start, w.end)
	}
	if want := fmt.Sprintf("https://github.com/kubernetes/kubernetes/blob/%s/pkg/kubelet/kubelet.go#L%d-L%d", w.tag, w.docStart, w.end); fn.Upstream != want {
		t.Errorf("upstream = %s, want %s", fn.Upstream, want)
	}
	if n := strings.Count(fn.Text, "\n") + 1; n != w.end-w.docStart+1 || !strings.HasPrefix(fn.Text, "// syncLoopIteration reads from various channels") || !strings.HasSuffix(fn.Text, "\treturn true\n}") {
		t.Errorf("text has %d lines, want %d, from the doc to the closing brace", n, w.end-w.docStart+1)
	}
	var got, want []string
	for _, c := range fn.Cases {
		got = append(got, fmt.Sprintf("%s@%d-%d:%s", c.Key, c.Start, c.End, c.Type))
	}
	for _, c := range w.cases {
		want = append(want, fmt.Sprintf("%s@%d-%d:%s", c.key, c.start, c.end, c.typ))
	}
	if !slices.Equal(got, want) {
		t.Errorf("cases\n got %v\nwant %v", got, want)
	}
	for _, lw := range w.logs {
		c, ok := fn.CaseByKey(lw.key)
		if !ok {
			continue // reported above
		}
		want := extractor.LogSite{File: "pkg/kubelet/kubelet.go", Line: lw.line, Func: lw.fn, Message: lw.msg, Verbosity: lw.v, Severity: lw.sev, Style: lw.sty}
		if !slices.Contains(c.Logs, want) {
			t.Errorf("case %s: no log %+v among %+v", lw.key, want, c.Logs)
		}
	}
	got = got[:0]
	for _, h := range fn.Helpers {
		got = append(got, fmt.Sprintf("%s@%d-%d[%s]", h.Name, h.Start, h.End, strings.Join(h.Cases, ",")))
	}
	if !slices.Equal(got, w.helpers) {
		t.Errorf("helpers = %v, want %v", got, w.helpers)
	}
	if c, ok := fn.CaseByKey("config"); ok && w.configCalls != nil && !slices.Equal(c.Calls, w.configCalls) {
		t.Errorf("config calls = %v, want %v", c.Calls, w.configCalls)
	}
	if c, ok := fn.CaseByKey("pleg"); ok && w.plegCalls != nil && !slices.Equal(c.Calls, w.plegCalls) {
		t.Errorf("pleg calls = %v, want %v", c.Calls, w.plegCalls)
	}
	got = got[:0]
	for _, td := range r.PodWorkers.Types {
		got = append(got, fmt.Sprintf("%s:%s@%d", td.Name, td.Kind, td.Line))
	}
	if !slices.Equal(got, w.podWorkers) {
		t.Errorf("pod_workers types\n got %v\nwant %v", got, w.podWorkers)
	}
	// podWorkers got its long doc comment in v1.22; before, it had none.
	wantDoc := "podWorkers keeps track of operations on pods"
	if w.tag == "v1.20.0" {
		wantDoc = ""
	}
	for _, td := range r.PodWorkers.Types {
		if td.Name == "podWorkers" && (!strings.HasPrefix(td.Doc, wantDoc) || (wantDoc == "") != (td.Doc == "")) {
			t.Errorf("podWorkers doc = %q, want it to start with %q", td.Doc[:min(80, len(td.Doc))], wantDoc)
		}
	}
	got = got[:0]
	for _, s := range r.TwoSets {
		got = append(got, fmt.Sprintf("%s@%s:%d", s.Name, s.File, s.Line))
		if s.Kind != "interface" || !strings.HasPrefix(s.Doc, s.Name+" ") {
			t.Errorf("two sets: %s in %s is a %s with doc %q", s.Name, s.File, s.Kind, s.Doc)
		}
	}
	if !slices.Equal(got, w.twoSets) {
		t.Errorf("two sets\n got %v\nwant %v", got, w.twoSets)
	}
	for name, want := range w.symbols {
		s := r.Symbols[name]
		got := ""
		if s.Found {
			got = fmt.Sprintf("%s:%d", s.File, s.Line)
		}
		if got != want {
			t.Errorf("symbol %s = %q, want %q", name, got, want)
		}
	}
}

// minorShape is what every v1.N.0 has, read in the source at the tags
// where it changed: v1.21.0 added the readiness and startup cases (through
// handleProbeSync) and moved to structured klog; v1.31.0 added the container
// manager's case; v1.36.0 moved to contextual logging (logger := klog.FromContext).
func minorShape(minor int) (keys []string, style string) {
	keys = []string{"config", "pleg", "sync", "liveness", "readiness", "startup", "container", "housekeeping"}
	switch {
	case minor == 20:
		return []string{"config", "pleg", "sync", "liveness", "housekeeping"}, "printf"
	case minor <= 30:
		return slices.Delete(keys, 6, 7), "structured"
	case minor <= 35:
		return keys, "structured"
	default:
		return keys, "contextual"
	}
}

// boundaryMinors are the tags on either side of each change minorShape
// describes; the sweep checks these unless SYNCLOOP_ALL_TAGS=1.
var boundaryMinors = []int{21, 30, 35, 36}

// TestExtractEveryMinor extracts v1.N.0 and checks its case keys, in order,
// and that every log site of the function is in the style of its time. With
// SYNCLOOP_ALL_TAGS=1 it covers every minor from v1.20 to v1.37 (zips not
// on the machine are downloaded four at a time); by default the boundary
// tags only, as 18 extractions under -race take minutes on two cores.
func TestExtractEveryMinor(t *testing.T) {
	extractortest.NeedNetwork(t)
	minors := boundaryMinors
	if os.Getenv("SYNCLOOP_ALL_TAGS") == "1" {
		minors = nil
		for m := 20; m <= 37; m++ {
			minors = append(minors, m)
		}
	} else {
		t.Logf("checking the boundary tags v1.%v.0 only; SYNCLOOP_ALL_TAGS=1 checks every minor", boundaryMinors)
	}
	var tags []string
	for _, m := range minors {
		tags = append(tags, fmt.Sprintf("v1.%d.0", m))
	}
	extractortest.Prefetch(tags...)
	for _, m := range minors {
		tag := fmt.Sprintf("v1.%d.0", m)
		t.Run(tag, func(t *testing.T) {
			r := extractortest.Reading(t, tag, nil)
			wantKeys, wantStyle := minorShape(m)
			var keys []string
			for _, c := range r.Function.Cases {
				keys = append(keys, c.Key)
				if c.Type == "" || c.Start == 0 || c.End < c.Start {
					t.Errorf("case %s: type %q lines %d-%d", c.Key, c.Type, c.Start, c.End)
				}
				for _, l := range c.Logs {
					if l.Style != wantStyle {
						t.Errorf("case %s: log at line %d is %s, want %s", c.Key, l.Line, l.Style, wantStyle)
					}
				}
			}
			if !slices.Equal(keys, wantKeys) {
				t.Errorf("case keys = %v, want %v", keys, wantKeys)
			}
			if len(r.PodWorkers.Types) == 0 || len(r.TwoSets) != 6 {
				t.Errorf("%d pod_workers types, %d two-set declarations (want 6)", len(r.PodWorkers.Types), len(r.TwoSets))
			}
			t.Logf("%s: %s", tag, describe(r))
		})
	}
}

// describe summarises a Reading in one line: case keys and the log styles
// each case uses, for the record of what changed across tags.
func describe(r *extractor.Reading) string {
	var parts []string
	for _, c := range r.Function.Cases {
		styles := map[string]bool{}
		for _, l := range c.Logs {
			styles[l.Style] = true
		}
		var s []string
		for k := range styles {
			s = append(s, k)
		}
		slices.Sort(s)
		parts = append(parts, fmt.Sprintf("%s(%d logs %s)", c.Key, len(c.Logs), strings.Join(s, "+")))
	}
	var helpers []string
	for _, h := range r.Function.Helpers {
		helpers = append(helpers, h.Name)
	}
	return strings.Join(parts, " ") + " helpers=" + strings.Join(helpers, ",")
}

// BenchmarkExtract is a whole Extract of the default tag from its module
// zip, the zip opened anew each iteration as a cold process would.
// BenchmarkOpenZip is the baseline: opening the zip and listing pkg/ only.
func BenchmarkExtract(b *testing.B) {
	extractortest.NeedNetwork(b)
	p := extractortest.Zip(b, extractor.DefaultTag)
	defer reportCPU(b)()
	for b.Loop() {
		extractZip(b, p, extractor.DefaultTag, nil)
	}
}

// reportCPU adds a cpu-ms/op metric: the process's CPU time per iteration,
// all goroutines included.
func reportCPU(b *testing.B) func() {
	start, ok := processCPU()
	return func() {
		if end, ok2 := processCPU(); ok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		}
	}
}

func BenchmarkOpenZip(b *testing.B) {
	extractortest.NeedNetwork(b)
	p := extractortest.Zip(b, extractor.DefaultTag)
	defer reportCPU(b)()
	for b.Loop() {
		zr, err := zip.OpenReader(p)
		if err != nil {
			b.Fatal(err)
		}
		sub, _ := fs.Sub(zr, "k8s.io/kubernetes@"+extractor.DefaultTag)
		if _, err := fs.ReadDir(sub, "pkg/kubelet"); err != nil {
			b.Fatal(err)
		}
		zr.Close()
	}
}
