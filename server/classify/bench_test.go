package classify

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// synthLog writes n klog lines shaped like the lab's v1.31.0 kubelet at
// -v=4: three quarters cadvisor's readlink noise, housekeeping every 2 s
// (start and end), probes, PLEG, SYNC and other kubelet chatter.
func synthLog(tb testing.TB, n int) (path string, syncLoop int) {
	tb.Helper()
	path = filepath.Join(tb.TempDir(), "kubelet-v4.log")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriter(f)
	rng := rand.New(rand.NewPCG(1, 2))
	t := time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)
	nextHK := t
	for i := 0; i < n; i++ {
		t = t.Add(time.Duration(rng.IntN(40)) * time.Millisecond)
		stamp := t.Format("0102 15:04:05.000000")
		var line string
		switch r := rng.IntN(100); {
		case !t.Before(nextHK):
			line = fmt.Sprintf(`I%s    1234 kubelet.go:2506] "SyncLoop (housekeeping)"`, stamp)
			nextHK = t.Add(2 * time.Second)
			if i+1 < n {
				fmt.Fprintln(w, line)
				syncLoop++
				i++
				line = fmt.Sprintf(`I%s    1234 kubelet.go:2514] "SyncLoop (housekeeping) end" duration="2ms"`, stamp)
			}
		case r < 75:
			fd := rng.IntN(64)
			line = fmt.Sprintf(`E%s    1234 handler.go:293] error while reading "/proc/1/fd/%d" link: readlink /proc/1/fd/%d: permission denied`, stamp, fd, fd)
		case r < 80:
			line = fmt.Sprintf(`I%s    1234 kubelet.go:2528] "SyncLoop (probe)" probe="liveness" status="unhealthy" pod="default/probe-demo-vm"`, stamp)
		case r < 83:
			line = fmt.Sprintf(`I%s    1234 kubelet.go:2439] "SyncLoop (PLEG): event for pod" pod="default/probe-demo-vm" event={"ID":"6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f","Type":"ContainerDied","Data":"3b5e0c1d2a"}`, stamp)
		case r < 86:
			line = fmt.Sprintf(`I%s    1234 kubelet.go:2458] "SyncLoop (SYNC) pods" total=1 pods=["default/probe-demo-vm"]`, stamp)
		case r < 90:
			line = fmt.Sprintf(`I%s    1234 prober.go:107] "Probe failed" probeType="Liveness" pod="default/probe-demo-vm" podUID="6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f" containerName="flaky" probeResult="failure" output="HTTP probe failed with statuscode: 500"`, stamp)
		case r < 95:
			line = fmt.Sprintf(`E%s    1234 kubelet.go:2901] "Container runtime network not ready" networkReady="NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"`, stamp)
		default:
			line = fmt.Sprintf(`I%s    1234 generic.go:224] "GenericPLEG: Relisting"`, stamp)
		}
		if strings.Contains(line, "SyncLoop") {
			syncLoop++
		}
		fmt.Fprintln(w, line)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path, syncLoop
}

// classifyFile reads path line by line as the classify command does and
// classifies every line; it returns how many have a case.
func classifyFile(tb testing.TB, c *Classifier, path string) (lines, cased int) {
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		b, err := r.ReadSlice('\n')
		if len(b) > 0 {
			lines++
			if c.Classify(b[:len(b)-1]).Case != "" {
				cased++
			}
		}
		if err == io.EOF {
			return lines, cased
		}
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkClassifyVsGrep classifies a 200,000-line klog file and runs
// `grep -c SyncLoop` on the same file in the same iteration, reporting both
// rates and their ratio (classify time / grep time; the target is under 5).
func BenchmarkClassifyVsGrep(b *testing.B) {
	grep, err := exec.LookPath("grep")
	if err != nil {
		b.Skip("no grep on PATH")
	}
	const n = 200_000
	path, want := synthLog(b, n)
	for _, tt := range []struct {
		name string
		tag  string
	}{
		{"exact", "v1.31.0"},   // the kubelet's own tag: by caller
		{"message", "v1.37.2"}, // another tag: by message
		{"none", ""},           // no Reading
	} {
		b.Run(tt.name, func(b *testing.B) {
			var c *Classifier
			if tt.tag != "" {
				c = New(readingFor(b, tt.tag))
			} else {
				c = New(nil)
			}
			var tc, tg time.Duration
			for b.Loop() {
				start := time.Now()
				out, err := exec.Command(grep, "-c", "SyncLoop", path).Output()
				tg += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				if got := strings.TrimSpace(string(out)); got != fmt.Sprint(want) {
					b.Fatalf("grep -c: %s, want %d", got, want)
				}
				start = time.Now()
				lines, cased := classifyFile(b, c, path)
				tc += time.Since(start)
				if lines != n || cased != want {
					b.Fatalf("classified %d lines, %d with a case; want %d, %d", lines, cased, n, want)
				}
			}
			iters := float64(b.N)
			b.ReportMetric(n*iters/tc.Seconds(), "lines/s")
			b.ReportMetric(n*iters/tg.Seconds(), "grep-lines/s")
			b.ReportMetric(tc.Seconds()/tg.Seconds(), "x-grep")
		})
	}
}

// BenchmarkClassifyLine is the cost of one typical line, by format.
func BenchmarkClassifyLine(b *testing.B) {
	c := New(readingFor(b, "v1.37.2"))
	for _, f := range []string{"klog-v1.31.0.txt", "journal-short.txt", "journal-json.txt", "kubelet-json.txt"} {
		lines := fixtureLines(b, f)
		raw := make([][]byte, len(lines))
		for i, l := range lines {
			raw[i] = []byte(l)
		}
		b.Run(strings.TrimSuffix(f, ".txt"), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				c.Classify(raw[i%len(raw)])
				i++
			}
		})
	}
}
