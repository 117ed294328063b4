package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/server/classify"
)

// runClassifyCmd runs `syncloop classify args…` in-process on stdin with
// only vars in its environment.
func runClassifyCmd(t *testing.T, vars map[string]string, stdin io.Reader, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb bytes.Buffer
	err = run(t.Context(), append([]string{"syncloop", "classify"}, args...), func(k string) string { return vars[k] }, stdin, &out, &errb)
	return out.String(), errb.String(), err
}

// record is the part of a --format json record the tests read.
type record struct {
	Case    *string  `json:"case"`
	Format  string   `json:"format"`
	Caller  string   `json:"caller"`
	Message string   `json:"message"`
	Pods    []string `json:"pods"`
	Time    *string  `json:"time"`
	Raw     string   `json:"raw"`
	Version string   `json:"kubelet_version"`
	Match   string   `json:"match"`
}

func records(t *testing.T, out string) []record {
	t.Helper()
	var rs []record
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record %q: %v", sc.Text(), err)
		}
		rs = append(rs, r)
	}
	return rs
}

func caseOf(r record) string {
	if r.Case == nil {
		return "<null>"
	}
	return *r.Case
}

// modcacheEnv is an environment in which the default tag loads from the
// module cache (or, under CI, from the real proxy) into the cache dir test
// binaries share while the extractor is unchanged (extractortest.LoadCacheDir).
func modcacheEnv(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE", "GOPROXY", "GOSUMDB").Output()
	if err != nil {
		t.Fatal(err)
	}
	v := strings.Split(strings.TrimSpace(string(out)), "\n")
	zip := filepath.Join(v[0], "cache", "download", "k8s.io", "kubernetes", "@v", extractor.DefaultTag+".zip")
	if _, err := os.Stat(zip); err != nil && os.Getenv("CI") == "" {
		t.Skipf("%s is not in the module cache; run `go mod download k8s.io/kubernetes@%s` (CI=true fetches it)", extractor.DefaultTag, extractor.DefaultTag)
	}
	return map[string]string{"GOMODCACHE": v[0], "GOPROXY": v[1], "GOSUMDB": v[2], "SYNCLOOP_CACHE_DIR": extractortest.LoadCacheDir(t)}
}

const (
	addLine137 = `I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"]`
	addLine131 = `I1130 01:02:00.512345    1234 kubelet.go:2407] "SyncLoop ADD" source="file" pods=["default/probe-demo-vm"]`
	version131 = `I1130 01:02:00.412345    1234 server.go:486] "Kubelet version" kubeletVersion="v1.31.0"`
)

// TestClassifyWithReading runs the command with the default tag's Reading,
// loaded once (from the module cache, or the proxy under CI) into a cache
// the subtests share.
func TestClassifyWithReading(t *testing.T) {
	env := modcacheEnv(t)
	t.Run("json", func(t *testing.T) { classifyJSON(t, env) })
	t.Run("version mismatch", func(t *testing.T) { classifyVersionMismatch(t, env) })
}

func classifyJSON(t *testing.T, env map[string]string) {
	in := strings.Join([]string{
		addLine137,
		`{"__CURSOR":"s=6a1c;i=1a2b;b=0f5e;m=2b4f;t=66173f;x=9d8c","__REALTIME_TIMESTAMP":"1796000520512600","_HOSTNAME":"vm","_PID":"4242","SYSLOG_IDENTIFIER":"kubelet","PRIORITY":"6","MESSAGE":"I1130 01:02:10.900000    4242 kubelet.go:2877] \"SyncLoop (probe)\" probe=\"liveness\" status=\"unhealthy\" pod=\"default/probe-me\""}`,
		`Nov 30 01:02:12 vm kubelet[4242]: I1130 01:02:12.500000    4242 kubelet.go:2788] "SyncLoop (PLEG): event for pod" pod="default/probe-me" event={"Type":"ContainerDied"}`,
		`{"ts":1796000522000.123,"caller":"kubelet/kubelet.go:2854","msg":"SyncLoop (housekeeping)","v":4}`,
		"",
		`E1130 01:02:03.000000    4242 handler.go:293] error while reading "/proc/1/fd/7" link: readlink /proc/1/fd/7: permission denied`,
		"I1130 01:02:00.512345    4242 kubelet.go:2760] \"SyncLoop ADD\" source=\"api\" pods=[\"default/<script>x</script>\"]\r",
		"no newline at the end",
	}, "\n")
	out, stderr, err := runClassifyCmd(t, env, strings.NewReader(in), "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr: %s", stderr)
	}
	rs := records(t, out)
	want := []struct{ c, format string }{
		{"config", classify.FormatKlog}, {"liveness", classify.FormatJournalJSON}, {"pleg", classify.FormatJournalText},
		{"housekeeping", classify.FormatKubeletJSON}, {"<null>", classify.FormatRaw}, {"<null>", classify.FormatKlog},
		{"config", classify.FormatKlog}, {"<null>", classify.FormatRaw},
	}
	if len(rs) != len(want) {
		t.Fatalf("%d records for %d lines:\n%s", len(rs), len(want), out)
	}
	for i, w := range want {
		if caseOf(rs[i]) != w.c || rs[i].Format != w.format {
			t.Errorf("record %d: case %s format %s, want %s %s", i, caseOf(rs[i]), rs[i].Format, w.c, w.format)
		}
	}
	if r := rs[0]; r.Caller != "kubelet.go:2760" || r.Message != "SyncLoop ADD" || len(r.Pods) != 1 || r.Pods[0] != "default/probe-me" || r.Time == nil || r.Match != classify.MatchExact {
		t.Errorf("record 0: %+v", r)
	}
	if r := rs[6]; r.Pods[0] != "default/<script>x</script>" || strings.HasSuffix(r.Raw, "\r") {
		t.Errorf("record 6: %+v", r)
	}
	if !strings.Contains(out, `"pods":["default/<script>x</script>"]`) {
		t.Errorf("HTML escaped in JSON output: %s", out)
	}
}

func classifyVersionMismatch(t *testing.T, env map[string]string) {
	in := strings.Join([]string{version131, addLine131, version131, addLine131}, "\n") + "\n"
	out, stderr, err := runClassifyCmd(t, env, strings.NewReader(in), "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	want := "syncloop classify: kubelet is v1.31.0 but classifying against " + extractor.DefaultTag + "; rerun with --tag v1.31.0\n"
	if stderr != want {
		t.Errorf("stderr %q, want once %q", stderr, want)
	}
	rs := records(t, out)
	if len(rs) != 4 || rs[0].Version != "v1.31.0" || caseOf(rs[1]) != "config" || rs[1].Match != classify.MatchMessage {
		t.Errorf("records: %+v", rs)
	}
	// The kubelet at the tag: no warning, exact matches.
	in = strings.Replace(strings.Join([]string{version131, addLine137, version131}, "\n"), "v1.31.0", extractor.DefaultTag, -1)
	out, stderr, err = runClassifyCmd(t, env, strings.NewReader(in), "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if stderr != "" {
		t.Errorf("stderr at the kubelet's own tag: %s", stderr)
	}
	if rs := records(t, out); len(rs) != 3 || rs[0].Version != extractor.DefaultTag || rs[1].Match != classify.MatchExact {
		t.Errorf("at %s: %+v", extractor.DefaultTag, rs)
	}
}

func TestClassifyText(t *testing.T) {
	in := addLine131 + "\n" + `E1130 01:02:03.000000    4242 handler.go:293] readlink` + "\n" +
		`{"__CURSOR":"c","__REALTIME_TIMESTAMP":"1796000520512600","_HOSTNAME":"vm","MESSAGE":"I1130 01:02:00.512345    1 kubelet.go:1] \"SyncLoop (SYNC) pods\" total=1"}` + "\n"
	out, stderr, err := runClassifyCmd(t, nil, strings.NewReader(in), "--tag", "none")
	if err != nil || stderr != "" {
		t.Fatalf("%v %s", err, stderr)
	}
	want := "[config      ] " + addLine131 + "\n" +
		"[            ] E1130 01:02:03.000000    4242 handler.go:293] readlink\n" +
		"[sync        ] Nov 30 01:02:00.512600 vm: I1130 01:02:00.512345    1 kubelet.go:1] \"SyncLoop (SYNC) pods\" total=1\n"
	if out != want {
		t.Errorf("text output:\n%s\nwant:\n%s", out, want)
	}
	if strings.Contains(out, "\x1b") {
		t.Error("colour written to a buffer")
	}
}

func TestClassifyTextColor(t *testing.T) {
	var b bytes.Buffer
	w := bufio.NewWriter(&b)
	c := classify.New(nil)
	l := c.Classify([]byte(addLine131))
	writeText(w, &l, true)
	l = c.Classify([]byte("noise \x1b[31mred"))
	writeText(w, &l, true)
	w.Flush()
	want := "[\x1b[34mconfig      \x1b[0m] " + addLine131 + "\n[            ] \x1b[2mnoise red\x1b[0m\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	// A pipe is not a terminal; NO_COLOR is checked by classifyLines.
	r, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer pw.Close()
	if isTerminal(pw) || isTerminal(&b) {
		t.Error("a pipe or a buffer taken for a terminal")
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !isTerminal(tty) {
			t.Error("/dev/tty not taken for a terminal")
		}
	}
}

// TestClassifyLongLines: a 10 MB line passes between two others, each gets
// its record, and what is kept of the long one is cut with a marker.
func TestClassifyLongLines(t *testing.T) {
	big := `I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" blob="` + strings.Repeat("x", 10<<20) + `"`
	in := addLine131 + "\n" + big + "\n" + addLine131 + "\n"
	start := time.Now()
	out, _, err := runClassifyCmd(t, nil, strings.NewReader(in), "--tag", "none", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	rs := records(t, out)
	if len(rs) != 3 || caseOf(rs[1]) != "config" || !strings.HasSuffix(rs[1].Raw, classify.CutMarker(len(big)-classify.MaxText)) || caseOf(rs[2]) != "config" {
		t.Fatalf("%d records; long one: case %s raw ends %q", len(rs), caseOf(rs[1]), rs[1].Raw[max(0, len(rs[1].Raw)-40):])
	}
}

func TestReadLine(t *testing.T) {
	long := strings.Repeat("a", 100)
	in := bufio.NewReaderSize(strings.NewReader("one\r\n"+long+"\n\nlast"), 16)
	var buf []byte
	for _, want := range []string{"one", long, "", "last"} {
		line, dropped, err := readLine(in, &buf)
		if string(line) != want || dropped != 0 || (err != nil) != (want == "last") {
			t.Fatalf("readLine = %q, %d, %v; want %q", line, dropped, err, want)
		}
	}
}

func TestClassifyFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		text string
		exit int
	}{
		{"bad format", nil, []string{"--format", "yaml"}, `--format "yaml": want text or json`, 2},
		{"argument", nil, []string{"x"}, `unexpected argument "x"`, 2},
		{"none and source dir", nil, []string{"--tag", "none", "--source-dir", "/x"}, "exclude each other", 2},
		{"tag too old, explicit", map[string]string{"GOPROXY": "off"}, []string{"--tag", "v1.19.0"}, "v1.19.0", 1},
		{"env tag explicit", map[string]string{"SYNCLOOP_TAG": "v1.19.0", "GOPROXY": "off"}, nil, "v1.19.0", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := runClassifyCmd(t, tc.env, strings.NewReader(""), tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.text) || exitCode(err) != tc.exit {
				t.Errorf("err %v (exit %d), want %q (exit %d)", err, exitCode(err), tc.text, tc.exit)
			}
		})
	}
	_, stderr, err := runClassifyCmd(t, nil, strings.NewReader(""), "--help")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr, "journalctl -u kubelet -f | syncloop classify") {
		t.Errorf("--help: %v\n%s", err, stderr)
	}
}

// TestClassifyOffline: with no tag given and no way to load the default
// tag's Reading, lines are classified by message, after one warning.
func TestClassifyOffline(t *testing.T) {
	env := map[string]string{"GOPROXY": "off", "GOMODCACHE": t.TempDir(), "SYNCLOOP_CACHE_DIR": t.TempDir()}
	out, stderr, err := runClassifyCmd(t, env, strings.NewReader(addLine131+"\n"), "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(stderr, "\n"); n != 1 || !strings.Contains(stderr, "classifying by message only") {
		t.Errorf("stderr: %q", stderr)
	}
	if rs := records(t, out); len(rs) != 1 || caseOf(rs[0]) != "config" || rs[0].Match != classify.MatchMessage {
		t.Errorf("records: %+v", rs)
	}
}

// TestClassifyFollow: with a pipe that stays open, as under `journalctl -f`,
// each record is written as soon as its line arrives.
func TestClassifyFollow(t *testing.T) {
	pr, pw := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(t.Context(), []string{"syncloop", "classify", "--tag", "none"}, func(string) string { return "" }, pr, outW, io.Discard)
		outW.Close()
	}()
	got := bufio.NewReader(outR)
	for i := range 3 {
		if _, err := io.WriteString(pw, addLine131+"\n"); err != nil {
			t.Fatal(err)
		}
		line, err := got.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "[config") {
			t.Fatalf("record %d: %q %v", i, line, err)
		}
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
