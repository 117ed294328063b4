//go:build unix

package classify

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the CPU (user+system) this process has used so far.
func cpuTime(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTextVsGrep is syncloop classify --format text (a Stream's
// ClassifyText of every line, each written as AppendText writes it) against what grep -c
// does, on the same 200,000 klog lines of the lab's recorded journal, in
// the same run: grep-count is bytes.Count of "SyncLoop" over the input in
// memory, grep-exec runs grep -c SyncLoop on it as a file and reports the
// child's CPU; each reports its CPU (user+system) as cpu-ns/op, which on a
// shared machine says more than ns/op. Compare the medians of -count 6:
//
//	go test -run '^$' -bench TextVsGrep -count 6 ./server/classify/
func BenchmarkTextVsGrep(b *testing.B) {
	const n = 200_000
	in := labKlog(b, n)
	want := bytes.Count(in, []byte("SyncLoop"))
	b.Run("text", func(b *testing.B) {
		c := New(readingFor(b, "v1.37.2"))
		b.SetBytes(int64(len(in)))
		var out []byte
		cpu0 := cpuTime(b)
		for b.Loop() {
			s := c.Stream()
			lines := 0
			for rest := in; len(rest) > 0; lines++ {
				line, after, _ := bytes.Cut(rest, []byte("\n"))
				rest = after
				l := s.ClassifyText(line)
				out = AppendText(out[:0], &l, false)
			}
			if lines != n {
				b.Fatalf("%d lines, want %d", lines, n)
			}
		}
		b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	b.Run("grep-count", func(b *testing.B) {
		b.SetBytes(int64(len(in)))
		cpu0 := cpuTime(b)
		for b.Loop() {
			if got := bytes.Count(in, []byte("SyncLoop")); got != want {
				b.Fatalf("%d, want %d", got, want)
			}
		}
		b.ReportMetric(float64((cpuTime(b)-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	b.Run("grep-exec", func(b *testing.B) {
		grep, err := exec.LookPath("grep")
		if err != nil {
			b.Skip("no grep on PATH")
		}
		path := filepath.Join(b.TempDir(), "klog.txt")
		if err := os.WriteFile(path, in, 0o644); err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(in)))
		var cpu time.Duration
		for b.Loop() {
			cmd := exec.Command(grep, "-c", "SyncLoop", path)
			out, err := cmd.Output()
			if err != nil {
				b.Fatal(err)
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			if got, _ := strconv.Atoi(strings.TrimSpace(string(out))); got == 0 {
				b.Fatalf("grep -c: %q", out)
			}
		}
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
