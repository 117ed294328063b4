package extractor_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/syncloop/syncloop/extractor"
)

// -update rewrites the golden files. It is registered only if no other test
// file of the package did, so two owners' tests can share the flag.
func init() {
	if flag.Lookup("update") == nil {
		flag.Bool("update", false, "rewrite golden files under testdata/")
	}
}

func updating() bool {
	f := flag.Lookup("update")
	return f != nil && f.Value.String() == "true"
}

// fixtureSymbols are looked up in the testdata/new tree.
var fixtureSymbols = []string{
	"pkg/kubelet/prober/results.(*manager).Set",
	"pkg/kubelet/prober/results.Manager.Updates",
	"pkg/kubelet.(*Kubelet).syncLoopIteration",
	"pkg/kubelet.Kubelet.containerManager",
	"pkg/kubelet.podWorkers",
	"pkg/kubelet.handleProbeSync",
	"pkg/kubelet/pleg.PodLifecycleEventGenerator.Relist",
	"pkg/kubelet/pleg.Relist",
	"pkg/kubelet/nowhere.Thing",
	"not a symbol",
}

// TestExtractGolden extracts the fixture trees and compares the whole
// Reading with testdata/golden/*.json (go test -run TestExtractGolden -update).
func TestExtractGolden(t *testing.T) {
	for _, tree := range []string{"old", "new"} {
		t.Run(tree, func(t *testing.T) {
			r, err := extractor.Extract(os.DirFS(filepath.Join("testdata", tree)), "v0.0.0-fixture", fixtureSymbols)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(r, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			golden := filepath.Join("testdata", "golden", tree+".json")
			if updating() {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("Reading differs from %s (run with -update and review the diff):\n%s", golden, firstDiff(string(want), string(got)))
			}
		})
	}
}

// firstDiff shows the first differing line of two texts with its neighbours.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) || i < len(g); i++ {
		if i >= len(w) || i >= len(g) || w[i] != g[i] {
			lo, hi := max(0, i-3), i+3
			pick := func(s []string) string { return strings.Join(s[min(lo, len(s)):min(hi, len(s))], "\n") }
			return "line " + itoa(i+1) + "\nwant:\n" + pick(w) + "\ngot:\n" + pick(g)
		}
	}
	return ""
}

func itoa(n int) string { return strconv.Itoa(n) }

// caseWant is what a test asserts about one case.
type caseWant struct {
	key, comm, channel, typ string
	start, end              int
	calls                   []string
	logs                    []string // "line func v severity style message"
}

func logStrings(c extractor.Case) []string {
	var out []string
	for _, l := range c.Logs {
		out = append(out, strings.Join([]string{itoa(l.Line), l.Func, itoa(l.Verbosity), l.Severity, l.Style, l.Message}, " "))
	}
	return out
}

func checkCases(t *testing.T, fn extractor.Function, want []caseWant) {
	t.Helper()
	var keys, wantKeys []string
	for _, c := range fn.Cases {
		keys = append(keys, c.Key)
	}
	for _, c := range want {
		wantKeys = append(wantKeys, c.key)
	}
	if strings.Join(keys, " ") != strings.Join(wantKeys, " ") {
		t.Fatalf("case keys = %v, want %v", keys, wantKeys)
	}
	for i, w := range want {
		c := fn.Cases[i]
		if c.Comm != w.comm || c.Channel != w.channel || c.Type != w.typ || c.Start != w.start || c.End != w.end {
			t.Errorf("case %s = {comm %q, channel %q, type %q, lines %d-%d}, want {%q, %q, %q, %d-%d}",
				w.key, c.Comm, c.Channel, c.Type, c.Start, c.End, w.comm, w.channel, w.typ, w.start, w.end)
		}
		if w.calls != nil && strings.Join(c.Calls, " ") != strings.Join(w.calls, " ") {
			t.Errorf("case %s calls = %q, want %q", w.key, c.Calls, w.calls)
		}
		if w.logs != nil {
			if got := logStrings(c); strings.Join(got, "\n") != strings.Join(w.logs, "\n") {
				t.Errorf("case %s logs =\n\t%s\nwant\n\t%s", w.key, strings.Join(got, "\n\t"), strings.Join(w.logs, "\n\t"))
			}
		}
	}
}

// TestExtractFixtureOld asserts, line by line, the v1.20-shaped fixture.
func TestExtractFixtureOld(t *testing.T) {
	r, err := extractor.Extract(os.DirFS("testdata/old"), "v1.20.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	fn := r.Function
	if fn.DocStart != 21 || fn.Start != 27 || fn.End != 70 {
		t.Errorf("function lines = %d/%d/%d, want 21/27/70", fn.DocStart, fn.Start, fn.End)
	}
	if !strings.HasPrefix(fn.Text, "// syncLoopIteration reads") || !strings.HasSuffix(fn.Text, "\treturn true\n}") {
		t.Errorf("function text = %q…", fn.Text[:min(60, len(fn.Text))])
	}
	if want := "syncLoopIteration reads from various channels and dispatches pods to the\ngiven handler.\n\n  - configCh: dispatch the pods for the config change to the appropriate\n    handler callback for the event type\n  - liveness manager: sync pods that have failed"; fn.Doc != want {
		t.Errorf("doc = %q, want %q", fn.Doc, want)
	}
	checkCases(t, fn, []caseWant{
		{key: "config", comm: "u, open := <-configCh", channel: "configCh", typ: "kubetypes.PodUpdate", start: 30, end: 44,
			calls: []string{"handler.HandlePodAdditions"},
			logs: []string{
				"32 syncLoopIteration 0 error printf Update channel is closed. Exiting the sync loop.",
				"38 syncLoopIteration 2 info printf SyncLoop (ADD, %q): %q",
				"41 syncLoopIteration 0 warning printf Kubelet does not support snapshot update",
				"43 syncLoopIteration 0 error printf Invalid event type received: %d.",
			}},
		{key: "pleg", comm: "e := <-plegCh", channel: "plegCh", typ: "*pleg.PodLifecycleEvent", start: 46, end: 51,
			calls: []string{"isSyncPodWorthy", "handler.HandlePodSyncs", "kl.deletePodSandbox"},
			logs:  []string{"48 syncLoopIteration 2 info printf SyncLoop (PLEG): %q, event: %#v"}},
		{key: "sync", comm: "<-syncCh", channel: "syncCh", typ: "time.Time", start: 52, end: 52, calls: []string{}, logs: []string{}},
		{key: "liveness", comm: "update := <-kl.livenessManager.Updates()", channel: "kl.livenessManager.Updates()", typ: "proberesults.Update", start: 53, end: 62,
			calls: []string{"kl.podManager.GetPodByUID", "handler.HandlePodSyncs"},
			logs: []string{
				"57 syncLoopIteration 4 info printf SyncLoop (container unhealthy): ignore irrelevant update: %#v",
				"60 syncLoopIteration 1 info printf SyncLoop (container unhealthy): %q",
			}},
		{key: "housekeeping", comm: "<-housekeepingCh", channel: "housekeepingCh", typ: "time.Time", start: 63, end: 67,
			calls: []string{"handler.HandlePodCleanups"},
			logs: []string{
				"64 syncLoopIteration 4 info printf SyncLoop (housekeeping)",
				"66 syncLoopIteration 0 error printf Failed cleaning pods: %v",
			}},
	})
	if len(fn.Helpers) != 1 || fn.Helpers[0].Name != "isSyncPodWorthy" || fn.Helpers[0].DocStart != 74 ||
		fn.Helpers[0].Start != 75 || fn.Helpers[0].End != 77 || strings.Join(fn.Helpers[0].Cases, ",") != "pleg" {
		t.Errorf("helpers = %+v, want isSyncPodWorthy 74/75-77 for pleg", fn.Helpers)
	}

	var types []string
	for _, td := range r.PodWorkers.Types {
		types = append(types, td.Name+":"+td.Kind)
	}
	if got, want := strings.Join(types, " "), "OnCompleteFunc:func PodWorkers:interface syncPodFnType:func podWorkers:struct"; got != want {
		t.Errorf("pod_workers types = %s, want %s", got, want)
	}
	pw := r.PodWorkers.Types[3]
	if want := "podWorkers keeps track of operations on pods. Its states:\n\n\tpending --UpdatePod--> syncing\n\t   |                      |\n\t   +------> terminated <--+\n\nThe diagram's tabs survive."; pw.Doc != want {
		t.Errorf("podWorkers doc = %q, want %q", pw.Doc, want)
	}
	if pw.DocStart != 14 || pw.DocEnd != 20 || pw.Line != 21 || pw.End != 23 {
		t.Errorf("podWorkers lines = doc %d-%d, type %d-%d; want 14-20, 21-23", pw.DocStart, pw.DocEnd, pw.Line, pw.End)
	}
	if nd := r.PodWorkers.Types[2]; nd.DocStart != 0 || nd.DocEnd != 0 || nd.Doc != "" {
		t.Errorf("syncPodFnType has no doc, got %+v", nd)
	}

	var sets []string
	for _, s := range r.TwoSets {
		sets = append(sets, s.Name+"@"+s.File+":"+itoa(s.Line)+":"+s.Kind)
	}
	if got, want := strings.Join(sets, " "), "DesiredStateOfWorld@pkg/kubelet/volumemanager/cache/desired_state_of_world.go:5:interface ActualStateOfWorld@pkg/controller/volume/attachdetach/cache/actual_state_of_world.go:6:interface"; got != want {
		t.Errorf("two sets = %s, want %s", got, want)
	}
	if want := "ActualStateOfWorld defines a set of thread-safe operations supported on\nthe attach/detach controller's actual state of the world cache."; r.TwoSets[1].Doc != want {
		t.Errorf("grouped ActualStateOfWorld doc = %q, want %q", r.TwoSets[1].Doc, want)
	}
}

// TestExtractFixtureNew asserts the v1.37-shaped fixture, with shapes no tag
// has had yet: a concrete method's channel, ctx.Done(), a helper of a helper.
func TestExtractFixtureNew(t *testing.T) {
	r, err := extractor.Extract(os.DirFS("testdata/new"), "v1.37.2", fixtureSymbols)
	if err != nil {
		t.Fatal(err)
	}
	fn := r.Function
	probeLogs := []string{
		"87 handleProbeSync 4 info contextual SyncLoop (probe): ignore irrelevant update",
		"96 logProbe 1 info contextual SyncLoop (probe)",
	}
	checkCases(t, fn, []caseWant{
		{key: "config", comm: "u, open := <-configCh", channel: "configCh", typ: "kubetypes.PodUpdate", start: 26, end: 38,
			calls: []string{"handler.HandlePodAdditions"},
			logs: []string{
				"28 syncLoopIteration 0 error contextual Update channel is closed, exiting the sync loop",
				"34 syncLoopIteration 2 info contextual SyncLoop ADD",
				"37 syncLoopIteration 0 error contextual Invalid operation type received",
			}},
		{key: "pleg", comm: "e := <-plegCh", channel: "plegCh", typ: "*pleg.PodLifecycleEvent", start: 39, end: 48,
			calls: []string{"isSyncPodWorthy", "handler.HandlePodSyncs"},
			logs: []string{
				"41 syncLoopIteration 2 info structured SyncLoop (PLEG): event for pod",
				"46 syncLoopIteration 0 error structured PLEG event without data",
			}},
		{key: "sync", comm: "<-syncCh", channel: "syncCh", typ: "time.Time", start: 49, end: 54,
			calls: []string{"kl.getPodsToSync", "handler.HandlePodSyncs"}, logs: []string{}},
		{key: "liveness", comm: "update := <-kl.livenessManager.Updates()", channel: "kl.livenessManager.Updates()", typ: "proberesults.Update", start: 55, end: 58,
			calls: []string{"handleProbeSync"}, logs: probeLogs},
		{key: "readiness", comm: "update := <-kl.readinessManager.Updates()", channel: "kl.readinessManager.Updates()", typ: "proberesults.Update", start: 59, end: 61,
			calls: []string{"kl.statusManager.SetContainerReadiness", "handleProbeSync"}, logs: probeLogs},
		{key: "container", comm: "update := <-kl.containerManager.Updates()", channel: "kl.containerManager.Updates()", typ: "resourceupdates.Update", start: 62, end: 65,
			calls: []string{}, logs: []string{"64 syncLoopIteration 3 info contextual SyncLoop (containermanager): event for pod"}},
		{key: "kl-eventedpleg-watch", comm: "ev := <-kl.eventedPleg.Watch()", channel: "kl.eventedPleg.Watch()", typ: "*pleg.PodLifecycleEvent", start: 66, end: 68,
			calls: []string{}, logs: []string{"68 syncLoopIteration 0 info contextual msg"}},
		{key: "ctx-done", comm: "<-ctx.Done()", channel: "ctx.Done()", typ: "", start: 69, end: 69, calls: []string{}, logs: []string{}},
		{key: "housekeeping", comm: "<-housekeepingCh", channel: "housekeepingCh", typ: "time.Time", start: 70, end: 78,
			calls: []string{"kl.sourcesReady.AllReady", "handler.HandlePodCleanups"},
			logs: []string{
				"72 syncLoopIteration 4 info contextual SyncLoop (housekeeping, skipped): sources aren't ready yet",
				"74 syncLoopIteration 4 info structured SyncLoop (housekeeping)",
				"76 syncLoopIteration 0 error contextual Failed cleaning pods",
			}},
	})
	var helpers []string
	for _, h := range fn.Helpers {
		helpers = append(helpers, h.Name+"@"+itoa(h.DocStart)+"/"+itoa(h.Start)+"-"+itoa(h.End)+"["+strings.Join(h.Cases, ",")+"]")
	}
	if got, want := strings.Join(helpers, " "), "isSyncPodWorthy@99/100-102[pleg] handleProbeSync@83/83-92[liveness,readiness] logProbe@94/95-97[liveness,readiness]"; got != want {
		t.Errorf("helpers = %s, want %s", got, want)
	}
	if h := fn.Helpers[1]; !strings.HasPrefix(h.Text, "func handleProbeSync(") || !strings.HasSuffix(h.Text, "\n}") ||
		h.Upstream != "https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/kubelet.go#L83-L92" {
		t.Errorf("handleProbeSync text/upstream = %q…, %s", h.Text[:min(30, len(h.Text))], h.Upstream)
	}

	var types []string
	for _, td := range r.PodWorkers.Types {
		types = append(types, td.Name+":"+td.Kind+"@"+itoa(td.Line))
	}
	if got, want := strings.Join(types, " "), "UpdatePodOptions:struct@7 PodWorkerState:ident@12 podSet:alias@14 syncedPods:slice@16 podSyncStatus:struct@24 queue:struct@29 podQueue:ident@32 podWorkers:struct@41 workCh:chan@45 workPtr:pointer@47 window:array@49"; got != want {
		t.Errorf("pod_workers types = %s\nwant %s", got, want)
	}
	byName := map[string]extractor.TypeDecl{}
	for _, td := range r.PodWorkers.Types {
		byName[td.Name] = td
	}
	if td := byName["podSyncStatus"]; td.Doc != "\npodSyncStatus is documented in a block comment.\n\n\tIt keeps its indentation.\n" || td.DocStart != 19 || td.DocEnd != 23 {
		t.Errorf("block doc = %q lines %d-%d", td.Doc, td.DocStart, td.DocEnd)
	}
	if td := byName["PodWorkerState"]; td.Doc != "PodWorkerState classifies the status of pod as seen by the pod worker." || td.DocStart != 11 {
		t.Errorf("grouped spec doc = %q at %d", td.Doc, td.DocStart)
	}
	if td := byName["podSet"]; td.Doc != "" || td.DocStart != 0 {
		t.Errorf("undocumented grouped spec got doc %q", td.Doc)
	}

	var sets []string
	for _, s := range r.TwoSets {
		sets = append(sets, s.Name+"@"+s.File+":"+itoa(s.Line)+":"+s.Kind)
	}
	if got, want := strings.Join(sets, " "), "DesiredStateOfWorld@pkg/kubelet/pluginmanager/cache/desired_state_of_world.go:5:interface ActualStateOfWorld@pkg/kubelet/pluginmanager/cache/desired_state_of_world.go:8:struct ActualStateOfWorld@pkg/controller/volume/attachdetach/cache/actual_state_of_world.go:6:interface"; got != want {
		t.Errorf("two sets = %s\nwant %s", got, want)
	}

	wantSyms := map[string]string{
		"pkg/kubelet/prober/results.(*manager).Set":          "pkg/kubelet/prober/results/results_manager.go:18",
		"pkg/kubelet/prober/results.Manager.Updates":         "pkg/kubelet/prober/results/results_manager.go:7",
		"pkg/kubelet.(*Kubelet).syncLoopIteration":           "pkg/kubelet/kubelet.go:22",
		"pkg/kubelet.Kubelet.containerManager":               "pkg/kubelet/kubelet_types.go:14",
		"pkg/kubelet.podWorkers":                             "pkg/kubelet/pod_workers.go:41",
		"pkg/kubelet.handleProbeSync":                        "pkg/kubelet/kubelet.go:83",
		"pkg/kubelet/pleg.PodLifecycleEventGenerator.Relist": "pkg/kubelet/pleg/pleg.go:16",
		"pkg/kubelet/pleg.Relist":                            "",
		"pkg/kubelet/nowhere.Thing":                          "",
		"not a symbol":                                       "",
	}
	if len(r.Symbols) != len(wantSyms) {
		t.Errorf("%d symbols, want %d", len(r.Symbols), len(wantSyms))
	}
	for name, want := range wantSyms {
		s, ok := r.Symbols[name]
		got := ""
		if s.Found {
			got = s.File + ":" + itoa(s.Line)
		}
		if !ok || got != want {
			t.Errorf("symbol %s = %s, want %q", name, got, want)
		}
		if s.Found && s.Upstream != extractor.UpstreamURL("v1.37.2", s.File, s.Line, s.Line) {
			t.Errorf("symbol %s upstream = %s", name, s.Upstream)
		}
	}
}

// TestExtractText checks that the function's text is exactly its lines of
// the file, and the hash that of the file's bytes.
func TestExtractText(t *testing.T) {
	fsys := os.DirFS("testdata/new")
	r, err := extractor.Extract(fsys, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := fs.ReadFile(fsys, "pkg/kubelet/kubelet.go")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	fn := r.Function
	if want := strings.Join(lines[fn.DocStart-1:fn.End], "\n"); fn.Text != want {
		t.Errorf("text differs from lines %d-%d of the file", fn.DocStart, fn.End)
	}
	if !strings.Contains(fn.Upstream, "/blob/master/pkg/kubelet/kubelet.go#L") {
		t.Errorf("upstream without a tag = %s", fn.Upstream)
	}
	if r.Schema != extractor.Schema || r.Module != extractor.Module || r.Tag != "" || r.ModuleHash != "" || r.Source != "" {
		t.Errorf("header = %d %s %q %q %q", r.Schema, r.Module, r.Tag, r.ModuleHash, r.Source)
	}
	if len(fn.FileSHA256) != 64 || fn.FileSHA256 == r.PodWorkers.FileSHA256 {
		t.Errorf("file hashes %q, %q", fn.FileSHA256, r.PodWorkers.FileSHA256)
	}
}

// TestExtractErrors: trees Extract cannot read, and the errors they give.
func TestExtractErrors(t *testing.T) {
	kubelet := func(body string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("package kubelet\n\n" + body + "\n")}
	}
	podWorkers := &fstest.MapFile{Data: []byte("package kubelet\n\ntype podWorkers struct{}\n")}
	tests := []struct {
		name string
		fsys fstest.MapFS
		want error
		msg  string
	}{
		{"empty tree", fstest.MapFS{}, extractor.ErrNotKubernetes, "no pkg/kubelet/kubelet.go"},
		{"no function", fstest.MapFS{"pkg/kubelet/kubelet.go": kubelet("func (kl *Kubelet) syncLoop() {}"), "pkg/kubelet/pod_workers.go": podWorkers},
			extractor.ErrUnsupportedTag, "no func (kl *Kubelet) syncLoopIteration"},
		{"function of another type", fstest.MapFS{"pkg/kubelet/kubelet.go": kubelet("func (o *Other) syncLoopIteration() {}")},
			extractor.ErrUnsupportedTag, "no func (kl *Kubelet) syncLoopIteration"},
		{"no select", fstest.MapFS{"pkg/kubelet/kubelet.go": kubelet("func (kl *Kubelet) syncLoopIteration() bool { return true }")},
			extractor.ErrUnsupportedTag, "no top-level select"},
		{"no pod_workers", fstest.MapFS{"pkg/kubelet/kubelet.go": kubelet("func (kl *Kubelet) syncLoopIteration() { select {} }")},
			extractor.ErrUnsupportedTag, "no pkg/kubelet/pod_workers.go"},
		{"syntax error", fstest.MapFS{"pkg/kubelet/kubelet.go": kubelet("func (kl *Kubelet) syncLoopIteration( {")},
			nil, "parse pkg/kubelet/kubelet.go"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := extractor.Extract(tt.fsys, "v1.19.0", nil)
			if err == nil {
				t.Fatalf("Extract = %+v, want an error", r)
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("error %q does not wrap %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.msg) || strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q: want one line containing %q", err, tt.msg)
			}
		})
	}
}

// TestExtractMinimal: a select with nothing else around it still gives a
// whole Reading (empty lists, not nulls, in the JSON).
func TestExtractMinimal(t *testing.T) {
	fsys := fstest.MapFS{
		"pkg/kubelet/kubelet.go":     {Data: []byte("package kubelet\n\nfunc (kl *Kubelet) syncLoopIteration(ch <-chan int, out chan<- []string) {\n\tselect {\n\tcase <-ch:\n\tcase out <- nil:\n\tdefault:\n\t}\n}\n")},
		"pkg/kubelet/pod_workers.go": {Data: []byte("package kubelet\n")},
		"pkg/README":                 {Data: []byte("no Go here")},
	}
	r, err := extractor.Extract(fsys, "v1.30.0", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"cases":[{"key":"ch","comm":"\u003c-ch","channel":"ch","type":"int","start":5,"end":5,"logs":[],"calls":[],"made":[],"writers":[],"upstream":[],"goroutine":[]},` +
		`{"key":"out","comm":"out \u003c- nil","channel":"out","type":"[]string","start":6,"end":6,"logs":[],"calls":[],"made":[],"writers":[],"upstream":[],"goroutine":[]},` +
		`{"key":"default","comm":"","channel":"","type":"","start":7,"end":7,"logs":[],"calls":[],"made":[],"writers":[],"upstream":[],"goroutine":[]}]`,
		`"helpers":[]`, `"types":[]`, `"two_sets":[]`, `"doc_start":3,"start":3,"end":9`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(string(b), `"symbols"`) {
		t.Errorf("no symbols asked, but JSON has them: %s", b)
	}
}
