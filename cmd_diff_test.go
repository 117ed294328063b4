package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
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
