package classify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// clock is the fixtures' "now": they were written on 2026-11-30.
var clock = func() time.Time { return time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC) }

// readingFor loads a Reading written for the tests (cases and log sites at
// the tag, read from its pkg/kubelet/kubelet.go; no source text).
func readingFor(t testing.TB, tag string) *extractor.Reading {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "reading-"+tag+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r extractor.Reading
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func fixtureLines(t testing.TB, name string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// want is what a table test checks of a Line; empty fields are not checked
// except Case, which is always.
type want struct {
	Case, Match, Format, Caller, Severity, Message, Host, Cursor, Version, Ident string
	Pods                                                                         []string
	Verbosity                                                                    *int
	PID                                                                          int
	Time                                                                         time.Time
	SourceLine                                                                   int
}

func v(n int) *int { return &n }

func check(t *testing.T, got Line, w want) {
	t.Helper()
	if got.Case != w.Case {
		t.Errorf("Case = %q, want %q (match %q, message %q)", got.Case, w.Case, got.Match, got.Message)
	}
	eq := func(name, got, want string) {
		t.Helper()
		if want != "" && got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
	eq("Match", got.Match, w.Match)
	eq("Format", got.Format, w.Format)
	eq("Caller", got.Caller, w.Caller)
	eq("Severity", got.Severity, w.Severity)
	eq("Message", got.Message, w.Message)
	eq("Host", got.Host, w.Host)
	eq("Ident", got.Ident, w.Ident)
	eq("Version", got.Version, w.Version)
	if w.Cursor != "" && !strings.HasPrefix(got.Cursor, w.Cursor) {
		t.Errorf("Cursor = %q, want prefix %q", got.Cursor, w.Cursor)
	}
	if w.Pods != nil && !slices.Equal(got.Pods, w.Pods) {
		t.Errorf("Pods = %q, want %q", got.Pods, w.Pods)
	}
	if w.Verbosity != nil && got.Verbosity != *w.Verbosity {
		t.Errorf("Verbosity = %d, want %d", got.Verbosity, *w.Verbosity)
	}
	if w.PID != 0 && got.PID != w.PID {
		t.Errorf("PID = %d, want %d", got.PID, w.PID)
	}
	if !w.Time.IsZero() && !got.Time.Equal(w.Time) {
		t.Errorf("Time = %v, want %v", got.Time, w.Time)
	}
	if w.SourceLine != 0 && got.SourceLine != w.SourceLine {
		t.Errorf("SourceLine = %d, want %d", got.SourceLine, w.SourceLine)
	}
}

func TestClassify(t *testing.T) {
	v137 := readingFor(t, "v1.37.2")
	v120 := readingFor(t, "v1.20.0")
	v131 := readingFor(t, "v1.31.0")
	ts := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	tests := []struct {
		name    string
		reading *extractor.Reading
		line    string
		want    want
	}{
		// Bare klog text at the Reading's own tag: exact, by caller.
		{"klog exact ADD", v137,
			`I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"]`,
			want{Case: "config", Match: MatchExact, Format: FormatKlog, Caller: "kubelet.go:2760", Severity: "info",
				Message: "SyncLoop ADD", Pods: []string{"default/probe-me"}, Verbosity: v(2), PID: 4242,
				SourceLine: 2760, Time: ts("2026-11-30T01:02:00.512345Z")}},
		{"klog exact probe helper liveness", v137,
			`I1130 01:02:10.900000    4242 kubelet.go:2877] "SyncLoop (probe)" probe="liveness" status="unhealthy" pod="default/probe-me"`,
			want{Case: "liveness", Match: MatchExact, Pods: []string{"default/probe-me"}, Verbosity: v(1)}},
		{"klog exact probe helper readiness", v137,
			`I1130 01:02:10.900000    4242 kubelet.go:2877] "SyncLoop (probe)" probe="readiness" status="ready" pod="default/probe-me"`,
			want{Case: "readiness", Match: MatchExact}},
		{"klog exact probe helper startup ignore", v137,
			`I1130 01:02:10.900000    4242 kubelet.go:2874] "SyncLoop (probe): ignore irrelevant update" probe="startup" status="started" update={"PodUID":"x"}`,
			want{Case: "startup", Match: MatchExact, Verbosity: v(4)}},
		{"klog exact container", v137,
			`I1130 01:02:14.000000    4242 kubelet.go:2835] "SyncLoop (containermanager): event for pod" pod="default/probe-me" event={"PodUIDs":["6f1c"]}`,
			want{Case: "container", Match: MatchExact, Pods: []string{"default/probe-me"}}},
		{"klog exact error housekeeping", v137,
			`E1130 01:02:17.000000    4242 kubelet.go:2856] "Failed cleaning pods" err="boom"`,
			want{Case: "housekeeping", Match: MatchExact, Severity: "error"}},
		{"klog range: inside the pleg clause, not a log site", v137,
			`I1130 01:02:18.000000    4242 kubelet.go:2798] "Killing unwanted containers" pod="default/probe-me"`,
			want{Case: "pleg", Match: MatchRange, SourceLine: 2798}},
		{"klog noise in kubelet.go outside the function", v137,
			`E1130 01:02:05.000000    4242 kubelet.go:3343] "Container runtime network not ready" networkReady="NetworkReady=false"`,
			want{Case: "", Format: FormatKlog, Severity: "error"}},
		{"klog cadvisor noise", v137,
			`I1130 01:02:03.000000    4242 handler.go:293] error while reading "/proc/1/fd/7" link: readlink /proc/1/fd/7: permission denied`,
			want{Case: "", Format: FormatKlog, Caller: "handler.go:293", Message: `error while reading "/proc/1/fd/7" link: readlink /proc/1/fd/7: permission denied`}},
		// A v1.31.0 kubelet read against v1.37.2: its line numbers mean
		// nothing at the tag; the message decides.
		{"v1.31 line on v1.37.2 Reading", v137,
			`I1130 01:02:00.512345    1234 kubelet.go:2407] "SyncLoop ADD" source="file" pods=["default/probe-demo-vm"]`,
			want{Case: "config", Match: MatchMessage, Pods: []string{"default/probe-demo-vm"}}},
		{"v1.31 probe on v1.37.2 Reading", v137,
			`I1130 01:02:01.700001    1234 kubelet.go:2528] "SyncLoop (probe)" probe="startup" status="unhealthy" pod="default/probe-demo-vm"`,
			want{Case: "startup", Match: MatchMessage}},
		{"v1.31 line on its own Reading", v131,
			`I1130 01:02:12.500000    1234 kubelet.go:2439] "SyncLoop (PLEG): event for pod" pod="default/probe-demo-vm" event={"ID":"6f1c","Type":"ContainerDied","Data":"3b5e"}`,
			want{Case: "pleg", Match: MatchExact, SourceLine: 2439, Pods: []string{"default/probe-demo-vm"}}},
		// A log site's line at the tag with another message: a line from
		// another version whose line number lands on a site; the message wins.
		{"caller on a site, other message", v137,
			`I1130 01:02:00.512345    4242 kubelet.go:2788] "SyncLoop (housekeeping)"`,
			want{Case: "housekeeping", Match: MatchMessage}},
		{"caller in a case range, other case's message", v137,
			`I1130 01:02:00.512345    4242 kubelet.go:2799] "SyncLoop (SYNC) pods" total=1 pods=["default/a","kube-system/b"]`,
			want{Case: "sync", Match: MatchMessage, Pods: []string{"default/a", "kube-system/b"}}},
		// v1.20 printf style.
		{"v1.20 ADD exact", v120,
			`I1130 01:02:00.512345    1234 kubelet.go:1885] SyncLoop (ADD, "file"): "probe-demo-vm_default(6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f)"`,
			want{Case: "config", Match: MatchExact, Pods: []string{"default/probe-demo-vm"},
				Message: `SyncLoop (ADD, "file"): "probe-demo-vm_default(6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f)"`}},
		{"v1.20 container unhealthy on v1.37.2", v137,
			`I1130 01:02:10.900000    1234 kubelet.go:1959] SyncLoop (container unhealthy): "probe-demo-vm_default(6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f)"`,
			want{Case: "liveness", Match: MatchMessage, Pods: []string{"default/probe-demo-vm"}}},
		{"v1.20 SYNC two pods", nil,
			`I1130 01:02:12.600000    1234 kubelet.go:1945] SyncLoop (SYNC): 2 pods; probe-demo-vm_default(6f1c), web-0_shop(0a1b)`,
			want{Case: "sync", Match: MatchMessage, Pods: []string{"default/probe-demo-vm", "shop/web-0"}}},
		{"v1.20 version line", nil,
			`I1130 01:02:00.412345    1234 server.go:416] Version: v1.20.0`,
			want{Case: "", Version: "v1.20.0"}},
		{"v1.31 probe readiness on v1.20 Reading: no such case there", v120,
			`I1130 01:02:02.100000    1234 kubelet.go:2528] "SyncLoop (probe)" probe="readiness" status="ready" pod="default/probe-demo-vm"`,
			want{Case: ""}},
		{"v1.31 probe liveness on v1.20 Reading", v120,
			`I1130 01:02:10.900000    1234 kubelet.go:2528] "SyncLoop (probe)" probe="liveness" status="unhealthy" pod="default/probe-demo-vm"`,
			want{Case: "liveness", Match: MatchMessage}},
		// Older klog printed []ObjectRef with %v: no quotes.
		{"v1.21 pods unquoted", nil,
			`I1130 01:02:00.512345    1234 kubelet.go:1938] "SyncLoop ADD" source="api" pods=[default/probe-me kube-system/kube-proxy-x]`,
			want{Case: "config", Pods: []string{"default/probe-me", "kube-system/kube-proxy-x"}}},
		{"non-SyncLoop message from another file is not the case's", nil,
			`E1130 01:02:17.000000    4242 pod_workers.go:1301] "Failed cleaning pods" err="boom"`,
			want{Case: ""}},
		{"Kubelet version", v137,
			`I1130 01:02:00.412345    4242 server.go:545] "Kubelet version" kubeletVersion="v1.37.2"`,
			want{Case: "", Version: "v1.37.2", Caller: "server.go:545"}},
		// journald text.
		{"journal short", v137,
			`Nov 30 01:02:00 vm kubelet[4242]: I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"]`,
			want{Case: "config", Match: MatchExact, Format: FormatJournalText, Host: "vm", Ident: "kubelet", PID: 4242,
				Time: ts("2026-11-30T01:02:00.512345Z")}},
		{"journal short-precise", v137,
			`Nov 30 01:02:00.512400 vm kubelet[4242]: I1130 01:02:00.512345    4242 kubelet.go:2854] "SyncLoop (housekeeping)"`,
			want{Case: "housekeeping", Format: FormatJournalText}},
		{"journal short-iso", v137,
			`2026-11-30T01:02:00+0000 vm kubelet[4242]: I1130 01:02:00.512345    4242 kubelet.go:2854] "SyncLoop (housekeeping)"`,
			want{Case: "housekeeping", Format: FormatJournalText, Host: "vm"}},
		{"journal short-iso new systemd", v137,
			`2026-11-30T01:02:00+00:00 node-1 kubelet[4242]: I1130 01:02:00.512345    4242 kubelet.go:2854] "SyncLoop (housekeeping)"`,
			want{Case: "housekeeping", Format: FormatJournalText, Host: "node-1"}},
		{"journal short-full", v137,
			`Mon 2026-11-30 01:02:00 UTC vm kubelet[4242]: I1130 01:02:00.512345    4242 kubelet.go:2854] "SyncLoop (housekeeping)"`,
			want{Case: "housekeeping", Format: FormatJournalText}},
		{"journal short-monotonic", v137,
			`[ 7261.512400] vm kubelet[4242]: I1130 01:02:00.512345    4242 kubelet.go:2854] "SyncLoop (housekeeping)"`,
			want{Case: "housekeeping", Format: FormatJournalText, Host: "vm", Time: ts("2026-11-30T01:02:00.512345Z")}},
		{"journal short-unix", v137,
			`1796000520.512400 vm kubelet[4242]: plain text`,
			want{Case: "", Format: FormatJournalText, Host: "vm", Time: ts("2026-11-30T01:02:00.5124Z")}},
		{"journal short, not klog", v137,
			`Nov 30 01:02:00 vm kubelet[4242]: Flag --logging-format has been deprecated`,
			want{Case: "", Format: FormatJournalText, Message: "Flag --logging-format has been deprecated", Severity: "",
				Time: ts("2026-11-30T01:02:00Z")}},
		{"journal short year rollover", v137,
			`Dec 31 23:59:59 vm kubelet[4242]: x`,
			want{Case: "", Format: FormatJournalText, Time: ts("2025-12-31T23:59:59Z")}},
		{"journal short kubelet JSON inside", v137,
			`Nov 30 01:02:00 vm kubelet[4242]: {"ts":1796000520512.345,"caller":"kubelet/kubelet.go:2760","msg":"SyncLoop ADD","v":2,"source":"api","pods":[{"name":"probe-me","namespace":"default"}]}`,
			want{Case: "config", Match: MatchExact, Format: FormatJournalText, Pods: []string{"default/probe-me"}, Verbosity: v(2)}},
		// journald JSON.
		{"journal json", v137,
			`{"__CURSOR":"s=6a1c;i=1a2b;b=0f5e;m=2b4f;t=66173f;x=9d8c","__REALTIME_TIMESTAMP":"1796000520512600","_HOSTNAME":"vm","_PID":"4242","SYSLOG_IDENTIFIER":"kubelet","PRIORITY":"6","MESSAGE":"E1130 01:02:17.000000    4242 kubelet.go:2856] \"Failed cleaning pods\" err=\"boom\""}`,
			want{Case: "housekeeping", Match: MatchExact, Format: FormatJournalJSON, Severity: "error", Host: "vm", PID: 4242,
				Ident: "kubelet", Cursor: "s=6a1c;i=1a2b", Time: ts("2026-11-30T01:02:00.5126Z")}},
		{"journal json null MESSAGE", v137,
			`{"__CURSOR":"s=6a1c;i=1a2c","__REALTIME_TIMESTAMP":"1796000520512600","_HOSTNAME":"vm","_PID":"4242","MESSAGE":null}`,
			want{Case: "", Format: FormatJournalJSON, Message: OmittedMessage}},
		{"journal json MESSAGE bytes", v137,
			`{"__CURSOR":"c","__REALTIME_TIMESTAMP":"1","MESSAGE":[73,49,49,51,48,32,48,49,58,48,50,58,48,48,46,53,49,50,51,52,53,32,32,32,32,52,50,52,50,32,107,117,98,101,108,101,116,46,103,111,58,50,55,54,48,93,32,34,83,121,110,99,76,111,111,112,32,65,68,68,34,32,112,111,100,115,61,91,34,100,47,99,97,102,233,255,34,93]}`,
			want{Case: "config", Format: FormatJournalJSON, Pods: []string{"d/caf\uFFFD\uFFFD"}}},
		{"journal json MESSAGE several values", v137,
			`{"__CURSOR":"c","MESSAGE":["I1130 01:02:00.512345    4242 kubelet.go:2854] \"SyncLoop (housekeeping)\"","second"]}`,
			want{Case: "housekeeping", Format: FormatJournalJSON}},
		// kubelet JSON.
		{"kubelet json", v131,
			`{"ts":1796000520512.345,"caller":"kubelet/kubelet.go:2407","msg":"SyncLoop ADD","v":2,"source":"file","pods":[{"name":"probe-demo-vm","namespace":"default"}]}`,
			want{Case: "config", Match: MatchExact, Format: FormatKubeletJSON, Caller: "kubelet/kubelet.go:2407", Severity: "info",
				Verbosity: v(2), Pods: []string{"default/probe-demo-vm"}, Time: ts("2026-11-30T01:02:00.512345Z")}},
		{"kubelet json seconds", v137,
			`{"ts":1796000537.5,"caller":"kubelet/kubelet.go:2458","msg":"SyncLoop (SYNC) pods","v":4,"total":1,"pods":[{"name":"p","namespace":"default"}]}`,
			want{Case: "sync", Match: MatchMessage, Time: ts("2026-11-30T01:02:17.5Z")}},
		{"kubelet json error", v131,
			`{"ts":1796000536000,"caller":"kubelet/kubelet.go:2508","msg":"Failed cleaning pods","err":"some error"}`,
			want{Case: "housekeeping", Severity: "error", Verbosity: v(-1)}},
		{"kubelet json probe", v137,
			`{"ts":1796000521700.001,"caller":"kubelet/kubelet.go:2528","msg":"SyncLoop (probe)","v":1,"probe":"startup","status":"unhealthy","pod":{"name":"probe-demo-vm","namespace":"default"}}`,
			want{Case: "startup", Match: MatchMessage, Pods: []string{"default/probe-demo-vm"}}},
		{"kubelet json version object", v137,
			`{"ts":1796000520412.345,"caller":"app/server.go:486","msg":"Kubelet version","v":0,"kubeletVersion":{"major":"1","minor":"31","gitVersion":"v1.31.0"}}`,
			want{Case: "", Version: "v1.31.0", Verbosity: v(0)}},
		// raw.
		{"raw", v137, `-- Boot 0f5e1c2d3b4a59687766554433221100 --`, want{Case: "", Format: FormatRaw}},
		{"raw json", v137, `{"not":"a log line"}`, want{Case: "", Format: FormatRaw}},
		{"raw truncated json", v137, `{"ts":1,"msg":"SyncLoop ADD"`, want{Case: "", Format: FormatRaw}},
		{"raw empty", v137, ``, want{Case: "", Format: FormatRaw}},
		{"raw broken header", nil, `I1130 broken header] "SyncLoop ADD"`, want{Case: "", Format: FormatRaw}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New(tt.reading, WithClock(clock))
			check(t, c.Classify([]byte(tt.line)), tt.want)
		})
	}
}

// TestFixtures classifies every fixture line against each Reading and the
// message-only classifier, checking the result against golden files
// (refresh with -update after checking the diff).
func TestFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatal("no fixtures", err)
	}
	for _, tag := range []string{"", "v1.37.2", "v1.31.0", "v1.20.0"} {
		var r *extractor.Reading
		name := "none"
		if tag != "" {
			r, name = readingFor(t, tag), tag
		}
		c := New(r, WithClock(clock))
		for _, f := range files {
			var out bytes.Buffer
			for _, line := range fixtureLines(t, filepath.Base(f)) {
				l := c.Classify([]byte(line))
				if ls := c.ClassifyString(line); !reflect.DeepEqual(l, ls) {
					t.Errorf("Classify and ClassifyString differ on %q:\n%+v\n%+v", line, l, ls)
				}
				b, err := json.Marshal(l)
				if err != nil {
					t.Fatal(err)
				}
				out.Write(b)
				out.WriteByte('\n')
			}
			golden := filepath.Join("testdata", "golden", name, strings.TrimSuffix(filepath.Base(f), ".txt")+".jsonl")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				diffLines(t, golden, want, out.Bytes())
			}
		}
	}
}

func diffLines(t *testing.T, name string, want, got []byte) {
	t.Helper()
	w := bufio.NewScanner(bytes.NewReader(want))
	w.Buffer(nil, 1<<20)
	g := bufio.NewScanner(bytes.NewReader(got))
	g.Buffer(nil, 1<<20)
	for i := 1; ; i++ {
		wok, gok := w.Scan(), g.Scan()
		if !wok && !gok {
			return
		}
		if w.Text() != g.Text() {
			t.Errorf("%s:%d:\n got %s\nwant %s", name, i, g.Text(), w.Text())
			return
		}
	}
}

// TestFixtureCases pins the case of every fixture line, by format, so the
// golden files cannot drift unnoticed: the same kubelet lines in every
// journald wrapping classify alike.
func TestFixtureCases(t *testing.T) {
	klog := []string{"", "config", "housekeeping", "startup", "startup", "housekeeping", "housekeeping", "readiness", "", "",
		"", "liveness", "pleg", "sync", "config", "config", "", "housekeeping"}
	for _, tt := range []struct {
		file   string
		format string
		skip   int // header lines
		extra  []string
	}{
		{"klog-v1.31.0.txt", FormatKlog, 0, nil},
		{"journal-short.txt", FormatJournalText, 1, nil},
		{"journal-short-precise.txt", FormatJournalText, 0, nil},
		{"journal-short-iso.txt", FormatJournalText, 0, nil},
		{"journal-json.txt", FormatJournalJSON, 0, []string{"", "config"}},
	} {
		for _, r := range []*extractor.Reading{nil, readingFor(t, "v1.37.2"), readingFor(t, "v1.31.0")} {
			c := New(r, WithClock(clock))
			lines := fixtureLines(t, tt.file)[tt.skip:]
			wantCases := append(slices.Clone(klog), tt.extra...)
			if len(lines) != len(wantCases) {
				t.Fatalf("%s: %d lines, want %d", tt.file, len(lines), len(wantCases))
			}
			for i, line := range lines {
				l := c.Classify([]byte(line))
				if l.Case != wantCases[i] || l.Format != tt.format {
					t.Errorf("%s:%d (reading %v): case %q format %q, want %q %q", tt.file, i+1+tt.skip, r != nil, l.Case, l.Format, wantCases[i], tt.format)
				}
				if r != nil && r.Tag == "v1.31.0" && l.Case != "" && l.Match != MatchExact {
					t.Errorf("%s:%d: match %q at the kubelet's own tag, want exact", tt.file, i+1+tt.skip, l.Match)
				}
			}
		}
	}
}

func TestStreamVersion(t *testing.T) {
	c := New(readingFor(t, "v1.37.2"), WithClock(clock))
	s := c.Stream()
	// Before the start-up line, a v1.36-ish caller that lands on a v1.37.2
	// case range is taken by position.
	noise := []byte(`I1130 01:02:18.000000    4242 kubelet.go:2798] "Killing unwanted containers" pod="default/probe-me"`)
	if l := s.Classify(noise); l.Case != "pleg" || l.Match != MatchRange {
		t.Fatalf("before version: %q %q", l.Case, l.Match)
	}
	l := s.Classify([]byte(`I1130 01:02:00.412345    1234 server.go:486] "Kubelet version" kubeletVersion="v1.31.0"`))
	if l.Version != "v1.31.0" || s.Version() != "v1.31.0" || !s.Mismatch() {
		t.Fatalf("version %q %q mismatch %v", l.Version, s.Version(), s.Mismatch())
	}
	if l := s.Classify(noise); l.Case != "" {
		t.Errorf("after a v1.31.0 start-up line, a caller in range still counts: %q %q", l.Case, l.Match)
	}
	if l := s.Classify([]byte(`I1130 01:02:00.512345    1234 kubelet.go:2760] "SyncLoop ADD" source="file" pods=["default/x"]`)); l.Case != "config" || l.Match != MatchMessage {
		t.Errorf("by message: %q %q", l.Case, l.Match)
	}
	s2 := c.Stream()
	s2.Classify([]byte(`I1130 01:02:00.412345    4242 server.go:545] "Kubelet version" kubeletVersion="v1.37.2+k3s1"`))
	if s2.Mismatch() {
		t.Errorf("v1.37.2+k3s1 is the tag v1.37.2")
	}
	// A stream told the version (its start-up line went by earlier) acts
	// as one that saw it.
	s3 := c.Stream()
	s3.SetVersion("v1.31.0")
	if !s3.Mismatch() {
		t.Error("SetVersion(v1.31.0) against v1.37.2: no mismatch")
	}
	if l := s3.Classify(noise); l.Case != "" {
		t.Errorf("after SetVersion(v1.31.0), a caller in range still counts: %q %q", l.Case, l.Match)
	}
}

func TestCaseOf(t *testing.T) {
	c := New(readingFor(t, "v1.37.2"))
	for _, tt := range []struct {
		caller string
		key    string
		line   int
		ok     bool
	}{
		{"kubelet.go:2760", "config", 2760, true},
		{"kubelet/kubelet.go:2788", "pleg", 2788, true},
		{"kubelet.go:2798", "pleg", 2798, true},
		{"kubelet.go:2877", "", 2877, false}, // handleProbeSync serves three cases
		{"kubelet.go:3343", "", 3343, false},
		{"handler.go:293", "", 293, false},
		{"garbage", "", 0, false},
	} {
		key, line, ok := c.CaseOf(tt.caller)
		if key != tt.key || line != tt.line || ok != tt.ok {
			t.Errorf("CaseOf(%q) = %q, %d, %v; want %q, %d, %v", tt.caller, key, line, ok, tt.key, tt.line, tt.ok)
		}
	}
	if _, _, ok := New(nil).CaseOf("kubelet.go:2760"); ok {
		t.Error("CaseOf without a Reading")
	}
}

func TestMarshalJSON(t *testing.T) {
	c := New(nil, WithClock(clock))
	b, err := json.Marshal(c.Classify([]byte("plain text")))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["case"] != nil || m["time"] != nil || m["format"] != "raw" {
		t.Errorf("case/time/format: %s", b)
	}
	if p, ok := m["pods"].([]any); !ok || len(p) != 0 {
		t.Errorf("pods not []: %s", b)
	}
	b, _ = json.Marshal(c.Classify([]byte(`I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"]`)))
	if !bytes.Contains(b, []byte(`"case":"config"`)) || !bytes.Contains(b, []byte(`"time":"2026-11-30T01:02:00.512345Z"`)) {
		t.Errorf("classified: %s", b)
	}
}

func TestDaysFromCivil(t *testing.T) {
	for _, y := range []int{-401, -400, -1, 0, 1, 1969, 1970, 2000, 2024, 2025, 2026, 2100, 9999} {
		for m := 1; m <= 12; m++ {
			for _, d := range []int{1, 15, 28, 29, 31} {
				want := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).Unix() / 86400
				if tm := time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC); tm.Unix()%86400 != 0 && tm.Unix() < 0 {
					want--
				}
				if got := daysFromCivil(y, m, d); got != want {
					t.Fatalf("daysFromCivil(%d, %d, %d) = %d, want %d", y, m, d, got, want)
				}
			}
		}
	}
}
