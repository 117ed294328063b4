package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
)

func runDiffCmd(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(t.Context(), append([]string{"syncloop", "diff"}, args...), func(k string) string { return vars[k] }, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

func TestDiffHelpAndUsage(t *testing.T) {
	var out bytes.Buffer
	if err := run(t.Context(), []string{"syncloop", "--help"}, func(string) string { return "" }, nil, &out, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "\n  diff ") {
		t.Errorf("syncloop --help does not list diff:\n%s", out.String())
	}
	_, stderr, err := runDiffCmd(t, nil, "--help")
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"-from TAG", "-to TAG", "-history KEY", "-format FORMAT", "added, removed, changed or same"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help does not mention %q", want)
		}
	}
	for _, tc := range []struct {
		args []string
		text string
		exit int
	}{
		{nil, "give --from TAG", 2},
		{[]string{"--from", "v1.30.0", "--history", "config"}, "one of them", 2},
		{[]string{"--from", "v1.30.0", "--format", "yaml"}, `want text or json`, 2},
		{[]string{"--from", "1.30"}, `invalid tag "1.30"`, 1},
		{[]string{"--from", "v1.30.0", "--to", "v1.19.0"}, "before v1.20.0 is not supported", 1},
	} {
		_, _, err := runDiffCmd(t, map[string]string{"GOPROXY": "off", "GOMODCACHE": t.TempDir()}, append([]string{"--cache-dir", t.TempDir()}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.text) || exitCode(err) != tc.exit {
			t.Errorf("%v: err %v (exit %d), want %q (exit %d)", tc.args, err, exitCode(err), tc.text, tc.exit)
		}
	}
}

// TestDiffRealTags: v1.31.0's select gained the container manager's case
// (read in pkg/kubelet/kubelet.go at both tags); the text names it and the
// JSON keeps the contract's names.
func TestDiffRealTags(t *testing.T) {
	env := modcacheEnv(t)
	stdout, _, err := runDiffCmd(t, env, "--from", "v1.30.0", "--to", "v1.31.0", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		From, To string
		Cases    []struct {
			Key, Status string
			To          *extractor.Case
		}
		Summary map[string]int
	}
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	if d.From != "v1.30.0" || d.To != "v1.31.0" || d.Summary["added"] != 1 {
		t.Errorf("from %s to %s, summary %v", d.From, d.To, d.Summary)
	}
	for _, c := range d.Cases {
		if c.Key == "container" && (c.Status != "added" || c.To.Channel != "kl.containerManager.Updates()") {
			t.Errorf("container: %+v", c)
		}
	}
	text, _, err := runDiffCmd(t, env, "--from", "v1.30.0", "--to", "v1.31.0")
	if err != nil {
		t.Fatal(err)
	}
	flat := strings.Join(strings.Fields(text), " ")
	if !strings.Contains(flat, "v1.30.0 → v1.31.0: 1 added, 0 removed") ||
		!strings.Contains(flat, "container added kl.containerManager.Updates() (resourceupdates.Update)") ||
		!strings.Contains(flat, "+ case update := <-kl.containerManager.Updates():") {
		t.Errorf("text:\n%s", text)
	}
}

// keysOf is the sorted field names of a JSON object.
func keysOf(t *testing.T, v any) []string {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("not a JSON object: %v", v)
	}
	keys := slices.Sorted(maps.Keys(m))
	return keys
}

// TestDiffJSONChangedCase pins the JSON field names of a changed case, nested
// ones included, so renaming a JSON tag fails here: v1.35.4 → v1.36.0's
// config case, whose every klog.InfoS/ErrorS became logger.Info/Error
// (logger := klog.FromContext(ctx)) and whose kubetypes.SET branch with
// "Kubelet does not support snapshot update" went (read in
// pkg/kubelet/kubelet.go at both tags, L2578-2614 and L2699-2732).
func TestDiffJSONChangedCase(t *testing.T) {
	env := modcacheEnv(t)
	stdout, _, err := runDiffCmd(t, env, "--from", "v1.35.4", "--to", "v1.36.0", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]any
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	same := func(what string, got []string, want ...string) {
		t.Helper()
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s fields %q, want %q", what, got, want)
		}
	}
	same("diff", keysOf(t, d), "from", "to", "cases", "doc", "helpers", "pod_workers", "two_sets", "summary")
	same("summary", keysOf(t, d["summary"]), "added", "removed", "changed", "same")
	same("doc", keysOf(t, d["doc"]), "status")

	var config map[string]any
	for _, c := range d["cases"].([]any) {
		if c := c.(map[string]any); c["key"] == "config" {
			config = c
		}
	}
	if config == nil {
		t.Fatal("no config case")
	}
	same("case", keysOf(t, config), "key", "status", "changed", "from", "to", "code", "logs", "calls")
	if config["status"] != "changed" || fmt.Sprint(config["changed"]) != "[code logs]" {
		t.Errorf("config: %v %v, want changed [code logs]", config["status"], config["changed"])
	}
	caseFields := []string{"key", "comm", "channel", "type", "start", "end", "logs", "calls", "made", "writers", "upstream", "goroutine"}
	same("case.from", keysOf(t, config["from"]), caseFields...)
	same("case.to", keysOf(t, config["to"]), caseFields...)
	if from, to := config["from"].(map[string]any), config["to"].(map[string]any); from["start"] != 2578.0 || from["end"] != 2614.0 || to["start"] != 2699.0 || to["end"] != 2732.0 {
		t.Errorf("config at L%v-%v → L%v-%v, want L2578-2614 → L2699-2732", from["start"], from["end"], to["start"], to["end"])
	}
	same("case.calls", keysOf(t, config["calls"])) // the same calls: an empty object, never absent

	code := config["code"].(string)
	for _, want := range []string{
		"--- v1.35.4 pkg/kubelet/kubelet.go:2578-2614\n+++ v1.36.0 pkg/kubelet/kubelet.go:2699-2732\n@@ ",
		"\n-\t\t\tklog.V(2).InfoS(\"SyncLoop ADD\", \"source\", u.Source, \"pods\", klog.KObjSlice(u.Pods))\n",
		"\n+\t\t\tlogger.V(2).Info(\"SyncLoop ADD\", \"source\", u.Source, \"pods\", klog.KObjSlice(u.Pods))\n",
		"\n-\t\t\tklog.ErrorS(nil, \"Kubelet does not support snapshot update\")\n",
	} {
		if !strings.Contains(code, want) {
			t.Errorf("code diff lacks %q:\n%s", want, code)
		}
	}

	siteFields := []string{"file", "line", "func", "message", "verbosity", "severity", "style"}
	var changed, removed int
	for _, l := range config["logs"].([]any) {
		l := l.(map[string]any)
		switch l["status"] {
		case "changed":
			changed++
			same("changed log", keysOf(t, l), "status", "changed", "from", "to")
			same("log.from", keysOf(t, l["from"]), siteFields...)
			same("log.to", keysOf(t, l["to"]), siteFields...)
			from, to := l["from"].(map[string]any), l["to"].(map[string]any)
			if fmt.Sprint(l["changed"]) != "[style]" || from["style"] != "structured" || to["style"] != "contextual" || from["message"] != to["message"] {
				t.Errorf("changed log %v: %v → %v", l["changed"], from, to)
			}
			if to["message"] == "SyncLoop ADD" && (to["verbosity"] != 2.0 || to["severity"] != "info" || to["func"] != "syncLoopIteration" ||
				to["file"] != "pkg/kubelet/kubelet.go" || to["line"] != 2709.0 || from["line"] != 2588.0) {
				t.Errorf("SyncLoop ADD: %v → %v", from, to)
			}
		case "removed":
			removed++
			same("removed log", keysOf(t, l), "status", "from")
			if from := l["from"].(map[string]any); from["message"] != "Kubelet does not support snapshot update" || from["severity"] != "error" {
				t.Errorf("removed log %v", from)
			}
		default:
			t.Errorf("config log %v", l)
		}
	}
	if changed != 7 || removed != 1 {
		t.Errorf("config logs: %d changed, %d removed; want 7 and 1", changed, removed)
	}

	// The other lists' items, as the package doc gives them.
	for _, h := range d["helpers"].([]any) {
		if h := h.(map[string]any); h["name"] == "handleProbeSync" {
			same("helper", keysOf(t, h), "name", "status", "diff")
			if h["status"] != "changed" || !strings.Contains(h["diff"].(string), "+func handleProbeSync(ctx context.Context, kl *Kubelet,") {
				t.Errorf("handleProbeSync: %v", h)
			}
		}
	}
	pw := d["pod_workers"].([]any)[0].(map[string]any)
	same("pod_workers type", keysOf(t, pw), "name", "status", "from", "to")
	same("pod_workers type.to", keysOf(t, pw["to"]), "name", "kind", "line", "end", "doc_start", "doc_end", "doc", "upstream")
	set := d["two_sets"].([]any)[0].(map[string]any)
	same("two-set sighting", keysOf(t, set), "name", "status", "from", "to")
	same("two-set sighting.to", keysOf(t, set["to"]), "name", "file", "line", "kind", "doc", "upstream")
}

// TestDiffHistory: syncloop diff --history follows a case through every
// minor release. The container case (case update :=
// <-kl.containerManager.Updates(), L2482-2497 of pkg/kubelet/kubelet.go at
// v1.31.0, logging with klog.V(3).InfoS) is in no select from v1.20.0 to
// v1.30.0 (grep finds no containerManager.Updates() in their kubelet.go).
func TestDiffHistory(t *testing.T) {
	env := modcacheEnv(t)
	stdout, _, err := runDiffCmd(t, env, "--history", "container", "--to", "v1.31.0", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var h struct {
		Key  string `json:"key"`
		Tags []map[string]any
	}
	if err := json.Unmarshal([]byte(stdout), &h); err != nil {
		t.Fatal(err)
	}
	if h.Key != "container" || len(h.Tags) != 12 {
		t.Fatalf("key %q, %d tags, want container at 12 (v1.20.0 to v1.31.0)", h.Key, len(h.Tags))
	}
	for i, st := range h.Tags[:11] {
		if want := fmt.Sprintf("v1.%d.0", 20+i); st["tag"] != want || st["present"] != false || len(st) != 2 {
			t.Errorf("step %d: %v, want only {tag: %s, present: false}", i, st, want)
		}
	}
	last := h.Tags[11]
	same := func(got, want any) bool { return fmt.Sprint(got) == fmt.Sprint(want) }
	if want := map[string]any{"tag": "v1.31.0", "present": true, "status": "added", "styles": []any{"structured"},
		"type": "resourceupdates.Update", "start": 2482.0, "end": 2497.0}; !same(last, want) {
		t.Errorf("v1.31.0: %v, want %v", last, want)
	}

	text, _, err := runDiffCmd(t, env, "--history", "container", "--to", "v1.31.0")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	if len(lines) != 15 || lines[0] != "case container, minor by minor:" {
		t.Fatalf("text:\n%s", text)
	}
	for i, l := range lines[3:14] {
		if f := strings.Fields(l); !slices.Equal(f, []string{fmt.Sprintf("v1.%d.0", 20+i), "-", "-", "-", "-"}) {
			t.Errorf("text row %q", l)
		}
	}
	if f := strings.Fields(lines[14]); !slices.Equal(f, []string{"v1.31.0", "L2482-2497", "added", "structured", "resourceupdates.Update"}) {
		t.Errorf("text row %q", lines[14])
	}

	// A key no minor release has is an error, not an empty table.
	if _, _, err := runDiffCmd(t, env, "--history", "nosuchcase", "--to", "v1.31.0"); err == nil || !strings.Contains(err.Error(), `no case "nosuchcase"`) {
		t.Errorf("--history nosuchcase: %v", err)
	}
}
