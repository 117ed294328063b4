// Package lab holds the real-kubelet lab (lab.sh and the files it needs) and its
// end-to-end test. The test starts the lab, waits until the kubelet's journal shows
// each SyncLoop case the lab is built to fire, stops it, and checks the machine is
// as it was. It needs Linux, root and SYNCLOOP_LAB=1 (or CI=true); a first run builds the kubelet
// (~4 min), so give `go test` a -timeout of 20m or run `lab.sh build` first.
package lab

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
)

var updateExcerpt = flag.Bool("update", false, "rewrite testdata/kubelet-journal-excerpt.json from this run's journal")

// entry is one journal entry from `journalctl -o json --all`.
type entry struct {
	Cursor   string
	Realtime time.Time
	Message  string
	Binary   bool            // MESSAGE came as an array of bytes (not valid UTF-8)
	Raw      json.RawMessage // the whole entry, as journalctl printed it
}

// parseJournal reads journalctl's JSON lines. MESSAGE is a string, or an array of
// byte values when it is not valid UTF-8, or null when too large without --all.
func parseJournal(data []byte) ([]entry, error) {
	var out []entry
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var f struct {
			Cursor   string          `json:"__CURSOR"`
			Realtime string          `json:"__REALTIME_TIMESTAMP"`
			Message  json.RawMessage `json:"MESSAGE"`
		}
		if err := json.Unmarshal(line, &f); err != nil {
			return nil, fmt.Errorf("journal line %d: %w", n, err)
		}
		e := entry{Cursor: f.Cursor, Raw: slices.Clone(line)}
		if us, err := strconv.ParseInt(f.Realtime, 10, 64); err == nil {
			e.Realtime = time.UnixMicro(us)
		}
		switch {
		case len(f.Message) == 0 || string(f.Message) == "null":
		case f.Message[0] == '"':
			if err := json.Unmarshal(f.Message, &e.Message); err != nil {
				return nil, fmt.Errorf("journal line %d: MESSAGE: %w", n, err)
			}
		case f.Message[0] == '[':
			var bs []byte
			var ints []int
			if err := json.Unmarshal(f.Message, &ints); err != nil {
				return nil, fmt.Errorf("journal line %d: MESSAGE bytes: %w", n, err)
			}
			for _, i := range ints {
				bs = append(bs, byte(i))
			}
			e.Message, e.Binary = string(bs), true
		default:
			return nil, fmt.Errorf("journal line %d: MESSAGE is %.20s", n, f.Message)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// sighting is something the lab is built to make the kubelet log.
type sighting struct {
	name  string
	match func(msg string) bool
}

func contains(subs ...string) func(string) bool {
	return func(msg string) bool {
		for _, s := range subs {
			if !strings.Contains(msg, s) {
				return false
			}
		}
		return true
	}
}

// textSightings are klog text lines at -v=4 from the lab's two static pods, probe-me
// and quiet (kubelet.go in v1.31.0: ADD 2407,
// UPDATE 2414, REMOVE 2417, PLEG 2439, SYNC 2458, housekeeping 2506, probe 2528).
var textSightings = []sighting{
	{"version", contains(`"Kubelet version" kubeletVersion="v1.31.0"`)},
	{"ADD", contains(`"SyncLoop ADD" source="file" pods=[`, `"default/probe-me-lab"`)},
	{"probe startup", contains(`"SyncLoop (probe)" probe="startup" status="started" pod="default/probe-me-lab"`)},
	{"probe readiness", contains(`"SyncLoop (probe)" probe="readiness" status="ready" pod="default/probe-me-lab"`)},
	{"probe liveness", contains(`"SyncLoop (probe)" probe="liveness" status="unhealthy" pod="default/probe-me-lab"`)},
	{"PLEG", contains(`"SyncLoop (PLEG): event for pod" pod="default/probe-me-lab"`)},
	{"SYNC", contains(`"SyncLoop (SYNC) pods"`)}, // mostly quiet-lab: probe-me is rarely idle that long
	{"housekeeping", contains(`"SyncLoop (housekeeping)"`)},
	{"UPDATE", contains(`"SyncLoop UPDATE" source="file" pods=["default/probe-me-lab"]`)},
	{"REMOVE", contains(`"SyncLoop REMOVE" source="file" pods=["default/probe-me-lab"]`)},
}

// firstSightings returns, for each sighting, the index of the first entry that
// matches it, or -1.
func firstSightings(es []entry, want []sighting) []int {
	first := make([]int, len(want))
	for i := range first {
		first[i] = -1
	}
	for i, e := range es {
		for j, s := range want {
			if first[j] < 0 && s.match(e.Message) {
				first[j] = i
			}
		}
	}
	return first
}

func TestFirstSightings(t *testing.T) {
	msg := func(m string) entry { return entry{Message: m} }
	es := []entry{
		msg(`I1130 03:00:00.000001 1 kubelet.go:2506] "SyncLoop (housekeeping)"`),
		msg(`I1130 03:00:00.000002 1 kubelet.go:2407] "SyncLoop ADD" source="file" pods=["default/probe-me-lab"]`),
		msg(`I1130 03:00:00.000003 1 kubelet.go:2528] "SyncLoop (probe)" probe="liveness" status="unhealthy" pod="default/other-lab"`),
		msg(`I1130 03:00:00.000004 1 kubelet.go:2528] "SyncLoop (probe)" probe="liveness" status="unhealthy" pod="default/probe-me-lab"`),
		msg(`I1130 03:00:00.000005 1 kubelet.go:2506] "SyncLoop (housekeeping)"`),
	}
	tests := []struct {
		name string
		want int
	}{
		{"housekeeping", 0},
		{"ADD", 1},
		{"probe liveness", 3}, // not 2: that is another pod
		{"REMOVE", -1},
		{"SYNC", -1},
	}
	first := firstSightings(es, textSightings)
	for _, tt := range tests {
		i := slices.IndexFunc(textSightings, func(s sighting) bool { return s.name == tt.name })
		if i < 0 {
			t.Fatalf("no sighting %q", tt.name)
		}
		if first[i] != tt.want {
			t.Errorf("%s: first at %d, want %d", tt.name, first[i], tt.want)
		}
	}
}

func TestParseJournal(t *testing.T) {
	in := `{"__CURSOR":"s=a;i=1","__REALTIME_TIMESTAMP":"1764471600000000","MESSAGE":"I1130 plain"}
{"__CURSOR":"s=a;i=2","__REALTIME_TIMESTAMP":"1764471600000001","MESSAGE":[73,49,49,51,48,32,255]}
{"__CURSOR":"s=a;i=3","__REALTIME_TIMESTAMP":"1764471600000002","MESSAGE":null}
`
	es, err := parseJournal([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		cursor, msg string
		binary      bool
	}{
		{"s=a;i=1", "I1130 plain", false},
		{"s=a;i=2", "I1130 \xff", true},
		{"s=a;i=3", "", false},
	}
	if len(es) != len(want) {
		t.Fatalf("got %d entries, want %d", len(es), len(want))
	}
	for i, w := range want {
		if es[i].Cursor != w.cursor || es[i].Message != w.msg || es[i].Binary != w.binary {
			t.Errorf("entry %d = %q %q %v, want %q %q %v", i, es[i].Cursor, es[i].Message, es[i].Binary, w.cursor, w.msg, w.binary)
		}
	}
	if got := es[1].Realtime.Sub(es[0].Realtime); got != time.Microsecond {
		t.Errorf("realtime step = %v, want 1µs", got)
	}
	if _, err := parseJournal([]byte(`{"MESSAGE":{"x":1}}`)); err == nil {
		t.Error("an object MESSAGE parsed without error")
	}
}

// TestExcerpt guards the committed excerpt of a real run, which other packages'
// tests read: every case the lab fires is in it, in journal order.
func TestExcerpt(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "kubelet-journal-excerpt.json"))
	if err != nil {
		t.Fatal(err)
	}
	es, err := parseJournal(data)
	if err != nil {
		t.Fatal(err)
	}
	for i, at := range firstSightings(es, textSightings) {
		if at < 0 {
			t.Errorf("excerpt has no %s line", textSightings[i].name)
		}
	}
	for i := 1; i < len(es); i++ {
		if es[i].Realtime.Before(es[i-1].Realtime) {
			t.Fatalf("excerpt entry %d is older than the one before it", i)
		}
	}

	data, err = os.ReadFile(filepath.Join("testdata", "kubelet-jsonformat-excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	callers := map[string]string{} // msg -> caller, for the SyncLoop lines
	for line := range strings.Lines(string(data)) {
		var l struct{ Caller, Msg string }
		if json.Unmarshal([]byte(line), &l) == nil && strings.HasPrefix(l.Msg, "SyncLoop") {
			callers[l.Msg] = l.Caller
		}
	}
	for msg, caller := range map[string]string{
		"SyncLoop ADD":                   "kubelet/kubelet.go:2407",
		"SyncLoop REMOVE":                "kubelet/kubelet.go:2417",
		"SyncLoop (PLEG): event for pod": "kubelet/kubelet.go:2439",
		"SyncLoop (housekeeping)":        "kubelet/kubelet.go:2506",
		"SyncLoop (probe)":               "kubelet/kubelet.go:2528",
	} {
		if callers[msg] != caller {
			t.Errorf("JSON excerpt: %q at %q, want %q", msg, callers[msg], caller)
		}
	}
}

// lab runs lab.sh and returns its key=value stdout.
func lab(t *testing.T, ctx context.Context, args ...string) (map[string]string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, "./lab.sh", args...)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr // the lab's progress, with stage timings, in the test log
	err := cmd.Run()
	kv := map[string]string{}
	for line := range strings.Lines(out.String()) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			kv[k] = v
		}
	}
	if err != nil {
		return kv, fmt.Errorf("lab.sh %s: %w", strings.Join(args, " "), err)
	}
	return kv, nil
}

func TestBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"start", "--log-format", "xml"}, "want text or json"},
		{[]string{"start", "--tag", "1.31"}, "want a Kubernetes tag"},
		{[]string{"start", "--update-after", "soon"}, "whole seconds"},
		{[]string{"start", "--frobnicate"}, "unknown flag --frobnicate"},
		{[]string{"explode"}, "usage: lab.sh"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			out, err := exec.Command("./lab.sh", tt.args...).CombinedOutput()
			if err == nil {
				t.Fatalf("lab.sh %v succeeded; output:\n%s", tt.args, out)
			}
			if !strings.Contains(string(out), tt.want) {
				t.Errorf("output does not say %q:\n%s", tt.want, out)
			}
		})
	}
}

// TestRefusesNonRoot runs start as nobody (or as the caller, when that is not root):
// it must refuse before it touches anything, and say why.
func TestRefusesNonRoot(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("lab.sh refuses anything but Linux first; covered by its uname check")
	}
	// A copy nobody can read wherever the checkout is (/root is often 0700).
	tmp, err := os.MkdirTemp("", "syncloop-lab-nonroot-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	if err := os.Chmod(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"lab.sh", "cluster.sh"} { // lab.sh sources cluster.sh
		script, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, name), script, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(tmp, "lab")
	cmd := exec.Command(filepath.Join(tmp, "lab.sh"), "start", "--dir", dir)
	if os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("start as uid %d succeeded:\n%s", os.Geteuid(), out)
	}
	if !strings.Contains(string(out), "the lab needs root") {
		t.Errorf("start as non-root (%v) does not say it needs root:\n%s", err, out)
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("start as non-root created %s", dir)
	}
}

func TestStatusWithoutLab(t *testing.T) {
	out, err := exec.Command("./lab.sh", "status", "--dir", t.TempDir()).Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.TrimSpace(string(out)) != "running=false" {
		t.Errorf("status of an empty dir = %q, want running=false", out)
	}
}

// TestMkimg checks the docker-archive mkimg.py writes is one whose digests hold:
// containerd refuses an import whose config or layer does not match its name.
func TestMkimg(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 is missing")
		}
		t.Skip("python3 is missing; lab.sh needs it to make images")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "img.tar")
	args := []string{"mkimg.py", "--tag", "localhost/x:lab", "--cmd", "/bin/prog", "--dir", "bin",
		"--file", "bin/prog=" + bin, "--link", "bin/sh=prog", out}
	if b, err := exec.Command("python3", args...).CombinedOutput(); err != nil {
		t.Fatalf("mkimg.py: %v\n%s", err, b)
	}
	files := untar(t, out)
	var man []struct{ Config, RepoTags, Layers any }
	if err := json.Unmarshal(files["manifest.json"], &man); err != nil || len(man) != 1 {
		t.Fatalf("manifest.json: %v (%d images)", err, len(man))
	}
	cfgName := man[0].Config.(string)
	if got := sha256hex(files[cfgName]) + ".json"; got != cfgName {
		t.Errorf("config is named %s but hashes to %s", cfgName, got)
	}
	var cfg struct {
		Config struct{ Cmd []string }
		RootFS struct {
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	if err := json.Unmarshal(files[cfgName], &cfg); err != nil {
		t.Fatal(err)
	}
	layerName := man[0].Layers.([]any)[0].(string)
	if want := "sha256:" + sha256hex(files[layerName]); len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != want {
		t.Errorf("diff_ids = %v, want [%s]", cfg.RootFS.DiffIDs, want)
	}
	if !slices.Equal(cfg.Config.Cmd, []string{"/bin/prog"}) {
		t.Errorf("Cmd = %v", cfg.Config.Cmd)
	}
	layer := filepath.Join(dir, "layer.tar")
	if err := os.WriteFile(layer, files[layerName], 0o644); err != nil {
		t.Fatal(err)
	}
	got := untar(t, layer)
	if string(got["bin/prog"]) != "#!/bin/sh\n" {
		t.Errorf("layer's bin/prog = %q", got["bin/prog"])
	}
	// A second run writes the same bytes: the image ID only changes with its files.
	first, _ := os.ReadFile(out)
	if b, err := exec.Command("python3", args...).CombinedOutput(); err != nil {
		t.Fatalf("mkimg.py again: %v\n%s", err, b)
	}
	if second, _ := os.ReadFile(out); !bytes.Equal(first, second) {
		t.Error("mkimg.py is not reproducible")
	}
}

func sha256hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func untar(t *testing.T, path string) map[string][]byte {
	t.Helper()
	dir := t.TempDir()
	if b, err := exec.Command("tar", "-xf", path, "-C", dir).CombinedOutput(); err != nil {
		t.Fatalf("tar: %v\n%s", err, b)
	}
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[rel] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// machine is what the lab may change on the machine, read before and after it.
type machine struct {
	sysctls map[string]string
	cgroups map[string]bool // lab-shaped cgroup directories
	paths   map[string]bool // the hard-coded paths that exist
}

var (
	labSysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
		"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"}
	labPaths = []string{"/run/containerd", "/var/lib/kubelet", "/var/log/containers", "/var/log/pods", "/run/mount"}
)

func readMachine(t *testing.T) machine {
	t.Helper()
	m := machine{sysctls: map[string]string{}, cgroups: map[string]bool{}, paths: map[string]bool{}}
	for _, s := range labSysctls {
		b, err := os.ReadFile("/proc/sys/" + s)
		if err != nil {
			t.Fatal(err)
		}
		m.sysctls[s] = strings.TrimSpace(string(b))
	}
	for _, pat := range []string{"/sys/fs/cgroup/*/k8s.io", "/sys/fs/cgroup/*/system.slice/kubelet.service",
		"/sys/fs/cgroup/k8s.io", "/sys/fs/cgroup/system.slice/kubelet.service"} {
		ms, _ := filepath.Glob(pat)
		for _, d := range ms {
			m.cgroups[d] = true
		}
	}
	for _, p := range labPaths {
		if _, err := os.Lstat(p); err == nil {
			m.paths[p] = true
		}
	}
	return m
}

// leftovers lists what of the lab in dir is still on the machine.
func leftovers(t *testing.T, dir string, before machine) []string {
	t.Helper()
	var left []string
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(dir)) {
			left = append(left, fmt.Sprintf("process %s: %s", filepath.Base(filepath.Dir(p)), bytes.ReplaceAll(b, []byte{0}, []byte{' '})))
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(mi)) {
		if f := strings.Fields(line); len(f) > 4 && (f[4] == dir || strings.HasPrefix(f[4], dir+"/")) {
			left = append(left, "mount "+f[4])
		}
	}
	after := readMachine(t)
	for k, v := range before.sysctls {
		if after.sysctls[k] != v {
			left = append(left, fmt.Sprintf("sysctl %s = %s, was %s", k, after.sysctls[k], v))
		}
	}
	for d := range after.cgroups {
		if !before.cgroups[d] {
			left = append(left, "cgroup "+d)
		}
	}
	for p := range after.paths {
		if !before.paths[p] {
			left = append(left, "path "+p)
		}
	}
	slices.Sort(left)
	return left
}

func journal(t *testing.T, cursor string, format string) []byte {
	t.Helper()
	out, err := exec.Command("journalctl", "-u", "kubelet", "--after-cursor="+cursor, "-o", format, "--all", "--no-pager").Output()
	if err != nil {
		t.Fatalf("journalctl: %v", err)
	}
	return out
}

func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SYNCLOOP_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join("..", "..", "artifacts") // the repository's, git-ignored
	}
	dir = filepath.Join(dir, "lab")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func needLab(t *testing.T) {
	t.Helper()
	// CI runs it (the same command as everyone, with CI=true); elsewhere it
	// is asked for, since it installs packages and starts a kubelet.
	if os.Getenv("SYNCLOOP_LAB") != "1" && os.Getenv("CI") != "true" {
		t.Skip("the real-kubelet lab runs only with SYNCLOOP_LAB=1 or CI=true (Linux, root; it installs packages and starts containerd and a kubelet)")
	}
	why := ""
	switch {
	case runtime.GOOS != "linux":
		why = "the lab needs Linux"
	case os.Geteuid() != 0:
		why = "the lab needs root"
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatal(why + ", and CI=true asks for the lab")
		}
		t.Skip(why)
	}
}

// runLab starts the lab in a fresh directory, calls fn while it runs, stops it, and
// checks nothing of it is left. The lab is stopped even when fn fails.
func runLab(t *testing.T, args []string, fn func(kv map[string]string)) {
	t.Helper()
	dir, err := os.MkdirTemp("", "syncloop-lab-")
	if err != nil {
		t.Fatal(err)
	}
	before := readMachine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		t0 := time.Now()
		if _, err := lab(t, ctx, "stop", "--dir", dir); err != nil {
			t.Errorf("stop: %v", err)
		}
		t.Logf("stage cleanup: %.1fs", time.Since(t0).Seconds())
		if _, err := lab(t, ctx, "stop", "--dir", dir); err != nil {
			t.Errorf("a second stop: %v", err)
		}
		if left := leftovers(t, dir, before); len(left) > 0 {
			t.Errorf("after stop, the lab left:\n  %s", strings.Join(left, "\n  "))
			return
		}
		copyFile(t, filepath.Join(dir, "timings"), filepath.Join(artifacts(t), filepath.Base(dir)+"-timings.txt"))
		os.RemoveAll(dir)
	}
	defer stop()
	kv, err := lab(t, ctx, append([]string{"start", "--dir", dir}, args...)...)
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	if kv["cursor"] == "" {
		t.Fatalf("start printed no cursor: %v", kv)
	}
	fn(kv)
	stop()
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		t.Error(err)
	}
}

// waitFor polls the kubelet's journal after cursor until every sighting has been
// seen or the deadline passes; it returns the entries and the first sightings.
func waitFor(t *testing.T, cursor string, want []sighting, d time.Duration) ([]entry, []int) {
	t.Helper()
	var es []entry
	var first []int
	// journalctl reads the whole journal after cursor: once a second.
	testwait.UntilEvery(d, time.Second, func() bool {
		var err error
		if es, err = parseJournal(journal(t, cursor, "json")); err != nil {
			t.Fatal(err)
		}
		first = firstSightings(es, want)
		return !slices.Contains(first, -1)
	})
	return es, first
}

// TestLab is the suite's one run of the real kubelet for "the cases fire": it
// runs the lab with a short scenario; the real syncloop binary serves the page
// and relays the journal while Chromium reads it (runE2E, e2e_test.go); the
// journal must show each case the lab fires and the server's record must be
// that journal; then stop must leave nothing behind. The restarts of the
// server and the relay are TestRecordedRestarts's, on a recorded journal.
func TestLab(t *testing.T) {
	needLab(t)
	st := &stages{t: t, last: time.Now()}
	// UPDATE at +15 s. The pod stays while the page is read (its liveness
	// probe fails on, with the restart back-off in between); the test
	// removes its manifest after that, for the REMOVE: a timer could fire
	// while the page is read on a loaded machine, and the page's pane, held
	// on liveness while no liveness line came, then missed lines.
	args := []string{"--update-after", "15", "--remove-after", "0", "--readd-after", "0",
		"--scratch-remove-after", "0", "--scratch-readd-after", "0"}
	runLab(t, args, func(kv map[string]string) {
		st.done("lab start")
		ctx := context.Background()
		status, err := lab(t, ctx, "status", "--dir", kv["dir"])
		if err != nil || status["running"] != "true" || status["kubelet_alive"] != "true" || status["cursor"] != kv["cursor"] {
			t.Errorf("status of the running lab: %v, %v", status, err)
		}
		// A second start on the same directory must refuse and leave the first alone.
		if _, err := lab(t, ctx, "start", "--dir", kv["dir"]); err == nil {
			t.Error("a second start on a running lab succeeded")
		}
		runE2E(t, st, kv, func() {
			if err := os.Remove(filepath.Join(kv["dir"], "manifests", "probe-me.yaml")); err != nil {
				t.Fatal(err)
			}
			checkSightings(t, kv)
		})
	})
}

// checkSightings waits for the journal to show each case the lab fires, keeps
// it in the artifacts, and classifies every SyncLoop line of it.
func checkSightings(t *testing.T, kv map[string]string) {
	es, first := waitFor(t, kv["cursor"], textSightings, 90*time.Second)
	raw := journal(t, kv["cursor"], "json")
	out := filepath.Join(artifacts(t), "kubelet-journal.json")
	if err := os.WriteFile(out, raw, 0o644); err != nil {
		t.Error(err)
	}
	t.Logf("journal: %d kubelet entries, saved in %s", len(es), out)
	if len(es) == 0 {
		t.Fatal("the kubelet wrote nothing to the journal")
	}
	t0 := es[0].Realtime
	for i, at := range first {
		if at < 0 {
			t.Errorf("no %s line in the journal", textSightings[i].name)
			continue
		}
		t.Logf("first %-16s +%5.1fs  %.160s", textSightings[i].name, es[at].Realtime.Sub(t0).Seconds(), es[at].Message)
	}
	if *updateExcerpt {
		writeExcerpt(t, es)
	}
	counts := checkClassified(t, raw, logLines(t, labTag))
	t.Logf("classified SyncLoop lines per case: %v", counts)
}

// TestLabJSON checks the kubelet's output with --logging-format=json, as a real
// run of the lab recorded it in testdata/kubelet-jsonformat-excerpt.txt (the
// start of the run and up to ten lines of each SyncLoop message): a liveness
// failure, the manifest's REMOVE, ADD and REMOVE once each at their v1.31.0
// callers, and every SyncLoop line classified to its case. With -update (and
// the lab's gate) it first runs the real kubelet in JSON and records the
// excerpt afresh; the suite's one real-kubelet run is TestLab's.
func TestLabJSON(t *testing.T) {
	name := filepath.Join("testdata", "kubelet-jsonformat-excerpt.txt")
	if *updateExcerpt {
		needLab(t)
		writeJSONExcerpt(t, runLabJSON(t))
	}
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range labJSONSightings {
		if !slices.ContainsFunc(strings.Split(string(raw), "\n"), s.match) {
			t.Errorf("%s has no %s line", name, s.name)
		}
	}
	var add, remove, lines int
	for line := range strings.Lines(string(raw)) {
		var l struct{ Caller, Msg string }
		if json.Unmarshal([]byte(line), &l) != nil {
			continue // the flag's deprecation warning is plain text
		}
		lines++
		switch {
		case l.Msg == "SyncLoop ADD" && l.Caller == "kubelet/kubelet.go:2407":
			add++
		case l.Msg == "SyncLoop REMOVE" && l.Caller == "kubelet/kubelet.go:2417":
			remove++
		}
	}
	t.Logf("JSON log: %d lines", lines)
	counts := checkClassified(t, raw, logLines(t, labTag))
	t.Logf("classified SyncLoop lines per case: %v", counts)
	if add != 1 || remove != 1 {
		t.Errorf("JSON log has %d SyncLoop ADD and %d SyncLoop REMOVE at their v1.31.0 callers, want 1 and 1", add, remove)
	}
}

// labJSONSightings are what TestLabJSON's run waits for, in order.
var labJSONSightings = []sighting{
	{"probe liveness", contains(`"msg":"SyncLoop (probe)"`, `"probe":"liveness"`, `"status":"unhealthy"`)},
	{"REMOVE", contains(`"msg":"SyncLoop REMOVE"`)},
}

// runLabJSON runs the kubelet with --logging-format=json until its liveness
// probe has failed and its manifest has been removed, and returns its raw
// output (journalctl -o cat).
func runLabJSON(t *testing.T) []byte {
	var raw []byte
	// The test removes the manifest itself once the liveness failure is in: a timer
	// could fire first on a loaded machine.
	args := []string{"--log-format", "json", "--update-after", "0", "--remove-after", "0", "--readd-after", "0",
		"--scratch-remove-after", "0", "--scratch-readd-after", "0"}
	runLab(t, args, func(kv map[string]string) {
		if _, first := waitFor(t, kv["cursor"], labJSONSightings[:1], 60*time.Second); first[0] < 0 {
			t.Fatal("no liveness failure in the JSON log within 60 s")
		}
		if err := os.Remove(filepath.Join(kv["dir"], "manifests", "probe-me.yaml")); err != nil {
			t.Fatal(err)
		}
		if _, first := waitFor(t, kv["cursor"], labJSONSightings[1:], 30*time.Second); first[0] < 0 {
			t.Fatal("no SyncLoop REMOVE in the JSON log within 30 s of removing the manifest")
		}
		// Saved now: stop takes away a journald the lab started, and its journal.
		raw = journal(t, kv["cursor"], "cat")
		if err := os.WriteFile(filepath.Join(artifacts(t), "kubelet-jsonformat.txt"), raw, 0o644); err != nil {
			t.Error(err)
		}
	})
	return raw
}

// writeExcerpt keeps a few hundred real entries for other packages' tests: the
// first lines of the run (among them "Kubelet version"), every SyncLoop line up to
// a few of each kind, a sample of the cadvisor noise, and any binary MESSAGE.
func writeExcerpt(t *testing.T, es []entry) {
	t.Helper()
	keep := make([]bool, len(es))
	perKind := map[string]int{}
	noise := 0
	for i, e := range es {
		switch {
		case i < 150, e.Binary, strings.Contains(e.Message, `"Kubelet version"`):
			keep[i] = true
		case strings.Contains(e.Message, "SyncLoop"):
			k := e.Message
			if j := strings.Index(k, `"SyncLoop`); j >= 0 {
				k = k[j:]
			}
			k, _, _ = strings.Cut(k, `" `)
			if strings.Contains(e.Message, `probe="`) {
				k += e.Message[strings.Index(e.Message, `probe="`):]
			}
			if perKind[k] < 15 {
				perKind[k]++
				keep[i] = true
			}
		case strings.Contains(e.Message, "/proc/1/fd/") && noise < 30:
			noise++
			keep[i] = true
		}
	}
	var b bytes.Buffer
	n := 0
	for i, e := range es {
		if keep[i] {
			b.Write(e.Raw)
			b.WriteByte('\n')
			n++
		}
	}
	if err := os.WriteFile(filepath.Join("testdata", "kubelet-journal-excerpt.json"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d entries to testdata/kubelet-journal-excerpt.json", n)
}

// writeJSONExcerpt keeps the start of a --logging-format=json run and its SyncLoop
// lines, a few of each message, as the kubelet printed them.
func writeJSONExcerpt(t *testing.T, raw []byte) {
	t.Helper()
	var b bytes.Buffer
	perMsg := map[string]int{}
	n := 0
	for line := range strings.Lines(string(raw)) {
		var l struct{ Msg string }
		_ = json.Unmarshal([]byte(line), &l)
		keep := n < 40 || strings.Contains(line, `"Kubelet version"`)
		if strings.HasPrefix(l.Msg, "SyncLoop") {
			key := l.Msg
			if i := strings.Index(line, `"probe":`); i >= 0 {
				key += line[i:]
			}
			perMsg[key]++
			keep = keep || perMsg[key] <= 10
		}
		if keep {
			b.WriteString(line)
		}
		n++
	}
	if err := os.WriteFile(filepath.Join("testdata", "kubelet-jsonformat-excerpt.txt"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSameEntry: the compare of the server's record with the journal takes
// an entry whose fields journalctl printed in another order, and no other.
func TestSameEntry(t *testing.T) {
	tests := []struct {
		a, b string
		same bool
	}{
		{`{"MESSAGE":"m","__CURSOR":"c"}`, `{"MESSAGE":"m","__CURSOR":"c"}`, true},
		{`{"MESSAGE":"m","__CURSOR":"c","B":[1,2]}`, `{"B":[1,2],"__CURSOR":"c","MESSAGE":"m"}`, true},
		{`{"MESSAGE":"m","__CURSOR":"c"}`, `{"MESSAGE":"n","__CURSOR":"c"}`, false},
		{`{"MESSAGE":"m"}`, `{"MESSAGE":"m","__CURSOR":"c"}`, false},
		{`{"MESSAGE":"m","A":"1"}`, `{"MESSAGE":"m","B":"1"}`, false},
		{`{"MESSAGE":"m"}`, `not json`, false},
	}
	for _, tt := range tests {
		if got := sameEntry(tt.a, []byte(tt.b)); got != tt.same {
			t.Errorf("sameEntry(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.same)
		}
	}
}
