package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// runExtractCmd runs `syncloop extract args…` in-process with only vars in
// its environment.
func runExtractCmd(t *testing.T, vars map[string]string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(t.Context(), append([]string{"syncloop", "extract"}, args...), func(k string) string { return vars[k] }, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

func TestExtractHelp(t *testing.T) {
	_, stderr, err := runExtractCmd(t, nil, "--help")
	if !errors.Is(err, flag.ErrHelp) || exitCode(err) != 0 {
		t.Fatalf("--help: err = %v (exit %d), want flag.ErrHelp (exit 0)", err, exitCode(err))
	}
	for _, want := range []string{"-tag TAG", "-source-dir DIR", "-cache-dir DIR", "-format FORMAT", "table", "json",
		"SYNCLOOP_TAG", "GOPROXY", "GOSUMDB", "GOMODCACHE", extractor.DefaultTag, "Exit status"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("--help does not mention %q:\n%s", want, stderr)
		}
	}
}

// TestExtractBadInput: every bad input is one line on error, the right exit
// status, and no request to the proxy.
func TestExtractBadInput(t *testing.T) {
	var requests atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer proxy.Close()
	notK8s := t.TempDir()
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want error // nil: a usage error
		text string
		exit int
	}{
		{"bad format", nil, []string{"--format", "yaml"}, nil, `--format "yaml": want table or json`, 2},
		{"bad reading", nil, []string{"--reading", "pleg"}, nil, `--reading "pleg": want sync-loop or volume-manager`, 2},
		{"volume manager, too old", nil, []string{"--reading", "volume-manager", "--tag", "v1.19.16"}, extractor.ErrUnsupportedTag, "before v1.20.0 is not supported", 1},
		{"stray argument", nil, []string{"v1.30.0"}, nil, `unexpected argument "v1.30.0"`, 2},
		{"unknown flag", nil, []string{"--tga", "v1.30.0"}, nil, "flag provided but not defined", 2},
		{"invalid tag", nil, []string{"--tag", "1.30"}, extractor.ErrInvalidTag, `invalid tag "1.30"`, 1},
		{"invalid tag from the environment", map[string]string{"SYNCLOOP_TAG": "latest"}, nil, extractor.ErrInvalidTag, `invalid tag "latest"`, 1},
		{"too old", nil, []string{"--tag", "v1.19.16"}, extractor.ErrUnsupportedTag, "before v1.20.0 is not supported", 1},
		{"not a Kubernetes tree", nil, []string{"--source-dir", notK8s}, extractor.ErrNotKubernetes, notK8s + " is not a Kubernetes source tree", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vars := map[string]string{"GOPROXY": proxy.URL, "GOMODCACHE": t.TempDir()}
			for k, v := range tc.env {
				vars[k] = v
			}
			args := append([]string{"--cache-dir", t.TempDir()}, tc.args...)
			stdout, _, err := runExtractCmd(t, vars, args...)
			if err == nil {
				t.Fatalf("succeeded, printing %q", stdout)
			}
			var ue usageError
			if tc.want == nil && !errors.As(err, &ue) || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v (nil: a usage error)", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.text) || strings.Contains(err.Error(), "\n") {
				t.Errorf("err = %q, want one line with %q", err, tc.text)
			}
			if got := exitCode(err); got != tc.exit {
				t.Errorf("exit status %d, want %d", got, tc.exit)
			}
			if stdout != "" {
				t.Errorf("printed %q on error", stdout)
			}
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("%d requests to the proxy, want none", n)
	}
}

// sourceTree is the default tag unpacked into the test's own directory, read
// as a checkout would be.
func sourceTree(t *testing.T) string {
	extractortest.NeedNetwork(t)
	return extractortest.Tree(t, extractor.DefaultTag)
}

func TestExtractJSON(t *testing.T) {
	dir := sourceTree(t)
	stdout, _, err := runExtractCmd(t, map[string]string{"SYNCLOOP_FORMAT": "json"}, "--source-dir", dir, "--tag", extractor.DefaultTag)
	if err != nil {
		t.Fatal(err)
	}
	var r extractor.Reading
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("output is not a Reading: %v", err)
	}
	var keys []string
	for _, c := range r.Function.Cases {
		keys = append(keys, c.Key)
	}
	want := []string{"config", "pleg", "sync", "liveness", "readiness", "startup", "container", "housekeeping"}
	if r.Tag != extractor.DefaultTag || r.Source != "dir" || r.ModuleHash != "" || !slices.Equal(keys, want) {
		t.Errorf("Reading %s %s %q %v, want %s dir, no hash, %v", r.Tag, r.Source, r.ModuleHash, keys, extractor.DefaultTag, want)
	}
	// The contract's field names, indented, and source text not HTML-escaped.
	for _, s := range []string{fmt.Sprintf(`"schema": %d`, extractor.Schema), `"verified": "none"`, `"module": "k8s.io/kubernetes"`, `"source": "dir"`, `"cases": [`, "\n  \"function\": {", `<-configCh`} {
		if !strings.Contains(stdout, s) {
			t.Errorf("JSON lacks %q", s)
		}
	}
	if strings.Contains(stdout, `"module_hash"`) {
		t.Errorf("a source dir Reading has a module_hash")
	}
}

func TestExtractTable(t *testing.T) {
	dir := sourceTree(t)
	stdout, _, err := runExtractCmd(t, nil, "--source-dir", dir, "--tag", extractor.DefaultTag)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(stdout, "\n")
	if !strings.HasPrefix(lines[0], "k8s.io/kubernetes@"+extractor.DefaultTag+" (dir, verified: none)") {
		t.Errorf("first line %q", lines[0])
	}
	var header, config string
	for _, l := range lines {
		f := strings.Fields(l)
		switch {
		case len(f) > 0 && f[0] == "KEY":
			header = l
		case len(f) > 0 && f[0] == "config":
			config = l
		}
	}
	if strings.Join(strings.Fields(header), " ") != "KEY LINES TYPE WRITERS LOG MESSAGES" {
		t.Errorf("header %q", header)
	}
	// config's row: key, start-end, type, first log message, in columns.
	f := strings.Fields(config)
	if len(f) < 5 || f[2] != "kubetypes.PodUpdate" || !strings.Contains(f[1], "-") || f[3] != "(*podStorage).Merge" || !strings.Contains(stdout, `"SyncLoop ADD"`) {
		t.Errorf("config row %q; want key, lines, kubetypes.PodUpdate, (*podStorage).Merge, messages (and SyncLoop ADD below)", config)
	}
	if !strings.Contains(stdout, "two sets: ") || !strings.Contains(stdout, "DesiredStateOfWorld (pkg/kubelet/volumemanager/cache/desired_state_of_world.go:53)") {
		t.Errorf("no two-sets line in\n%s", stdout)
	}
}

// TestPrintReadingTable pins the table's layout on a Reading written here.
func TestPrintReadingTable(t *testing.T) {
	r := &extractor.Reading{
		Module: "k8s.io/kubernetes", Tag: "v1.30.0", Source: "proxy", ModuleHash: "h1:abc=", Verified: "sumdb",
		Function: extractor.Function{
			Name: "syncLoopIteration", File: "pkg/kubelet/kubelet.go", Start: 10, End: 40, Upstream: "https://example/L10",
			Cases: []extractor.Case{
				{Key: "config", Type: "kubetypes.PodUpdate", Start: 12, End: 20, Logs: []extractor.LogSite{{Message: "SyncLoop ADD"}, {Message: "SyncLoop UPDATE"}},
					Writers: []extractor.Site{{Func: "pkg/kubelet/config.(*podStorage).Merge"}, {Func: "pkg/kubelet/config.(*podStorage).Merge"}, {Func: "pkg/x.(*y).z", Note: "feature gate Z"}}},
				{Key: "sync", Type: "time.Time", Start: 21, End: 21, Made: []extractor.Site{{File: "pkg/kubelet/kubelet.go", Line: 30, Note: "ticker: written by the Go runtime every period"}}},
			},
		},
		PodWorkers: extractor.PodWorkers{Types: make([]extractor.TypeDecl, 3)},
		TwoSets:    []extractor.SetDecl{{Name: "DesiredStateOfWorld", File: "a.go", Line: 5}, {Name: "ActualStateOfWorld", File: "b.go", Line: 6}},
	}
	var out bytes.Buffer
	if err := printReadingTable(stdio{stdout: &out}, r); err != nil {
		t.Fatal(err)
	}
	want := `k8s.io/kubernetes@v1.30.0 (proxy, h1:abc=, verified: sumdb)
syncLoopIteration pkg/kubelet/kubelet.go:10-40, 2 cases
https://example/L10

KEY     LINES  TYPE                 WRITERS                       LOG MESSAGES
config  12-20  kubetypes.PodUpdate  (*podStorage).Merge, (*y).z*  "SyncLoop ADD"
                                                                  "SyncLoop UPDATE"
sync    21-21  time.Time            ticker (kubelet.go:30)        -
(WRITERS: the functions that send on the case's channel, from the source at the tag; * behind a feature gate.)

pod_workers.go: 3 types; two sets: DesiredStateOfWorld (a.go:5), ActualStateOfWorld (b.go:6)
`
	if out.String() != want {
		t.Errorf("table:\n%s\nwant:\n%s", out.String(), want)
	}
}
