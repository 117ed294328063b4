package loadtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// ProcRSS returns a process's resident set size (VmRSS) in bytes.
func ProcRSS(pid int) (int64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("VmRSS %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmRSS", pid)
}

// ProcCPU returns a process's user+system CPU time so far.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state): utime is field 14, stime 15
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procStats samples a process's RSS every 100 ms and its CPU at start.
type procStats struct {
	pid      int
	cpu0     time.Duration
	cancel   context.CancelFunc
	done     chan struct{}
	mu       sync.Mutex
	peak, at int64
}

func startProcStats(ctx context.Context, pid int) *procStats {
	p := &procStats{pid: pid, done: make(chan struct{})}
	p.cpu0, _ = ProcCPU(pid)
	ctx, p.cancel = context.WithCancel(ctx)
	p.sample()
	go func() { // owned: stop waits for it
		defer close(p.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				p.sample()
			}
		}
	}()
	return p
}

func (p *procStats) sample() {
	rss, err := ProcRSS(p.pid)
	if err != nil {
		return
	}
	p.mu.Lock()
	p.peak, p.at = max(p.peak, rss), rss
	p.mu.Unlock()
}

func (p *procStats) cpuSince() time.Duration {
	c, _ := ProcCPU(p.pid)
	return c - p.cpu0
}

// stop ends sampling and returns the peak and last RSS.
func (p *procStats) stop() (peak, last int64) {
	p.sample()
	p.cancel()
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.peak, p.at
}

// Print writes the result for a person.
func (r Result) Print(w io.Writer) {
	mb := func(b int64) string { return fmt.Sprintf("%.0f MB", float64(b)/(1<<20)) }
	pct := func(d time.Duration) string {
		if r.Duration <= 0 {
			return "?"
		}
		return fmt.Sprintf("%.0f%%", 100*d.Seconds()/r.Duration.Seconds())
	}
	what := "klog lines"
	if r.Journal {
		what = "journald JSON entries"
	}
	fmt.Fprintf(w, "load:       %d feeds × %d readers, %d %s/s per feed, %d log sites, sent for %v\n",
		r.Rooms, r.Readers, r.Rate, what, r.Sites, r.Duration.Round(time.Millisecond))
	fmt.Fprintf(w, "ingest:     %d lines sent, %d acknowledged\n", r.Sent, r.Acked)
	fmt.Fprintf(w, "readers:    %d expected, %d delivered, %d skipped (server markers), %d lost, %d duplicated\n",
		r.Expected, r.Delivered, r.Skipped, r.Lost, r.Duplicated)
	if r.Messages > 0 {
		fmt.Fprintf(w, "messages:   %d websocket messages to readers, %.1f lines each\n", r.Messages, float64(r.Delivered)/float64(r.Messages))
	}
	fmt.Fprintf(w, "kept up:    %d of %d readers (no skipped marker, connection kept); lost by them: %d; connections dropped: %d\n",
		r.KeptUp, r.Rooms*r.Readers, r.LostKeptUp, r.Dropped)
	fmt.Fprintf(w, "latency:    ingest-send → browser-receive p50 %v, p99 %v, max %v\n",
		r.P50.Round(10*time.Microsecond), r.P99.Round(10*time.Microsecond), r.Max.Round(10*time.Microsecond))
	if r.RSSPeak > 0 {
		fmt.Fprintf(w, "server:     RSS peak %s, at end %s; CPU %.1f s while sending (%s of one core)\n",
			mb(r.RSSPeak), mb(r.RSSEnd), r.ServerCPU.Seconds(), pct(r.ServerCPU))
	}
	if len(r.Procs) > 1 { // each, when the server is several processes
		for _, p := range r.Procs {
			fmt.Fprintf(w, "  pid %-6d RSS peak %s, at end %s; CPU %.1f s (%s of one core)\n",
				p.PID, mb(p.RSSPeak), mb(p.RSSEnd), p.CPU.Seconds(), pct(p.CPU))
		}
	}
	fmt.Fprintf(w, "clients:    CPU %.1f s while sending (%s of one core; same machine as the server)\n",
		r.ClientCPU.Seconds(), pct(r.ClientCPU))
}

// Check returns an error naming each target the result missed: a lost or
// duplicated line by a reader that kept up, p99 over maxP99 (0: no limit),
// peak RSS over maxRSS bytes (0: no limit).
func (r Result) Check(maxP99 time.Duration, maxRSS int64) error {
	var miss []string
	if r.LostKeptUp > 0 {
		miss = append(miss, fmt.Sprintf("%d lines lost by readers that kept up", r.LostKeptUp))
	}
	if r.Duplicated > 0 {
		miss = append(miss, fmt.Sprintf("%d lines duplicated", r.Duplicated))
	}
	if r.Acked != r.Sent {
		miss = append(miss, fmt.Sprintf("%d of %d lines acknowledged", r.Acked, r.Sent))
	}
	if maxP99 > 0 && r.P99 > maxP99 {
		miss = append(miss, fmt.Sprintf("p99 %v over %v", r.P99, maxP99))
	}
	if maxRSS > 0 && r.RSSPeak > maxRSS {
		miss = append(miss, fmt.Sprintf("RSS %d MB over %d MB", r.RSSPeak>>20, maxRSS>>20))
	}
	if len(miss) > 0 {
		return fmt.Errorf("loadtest: %s", strings.Join(miss, "; "))
	}
	return nil
}
