// Package demo simulates a kubelet: it emits log lines in the real klog text
// format at the real file:line of a Reading's log sites, so the live pane
// works without a cluster.
//
// The scenario is the lab's: one pod, probe-me, whose liveness probe fails
// every ten seconds or so. Housekeeping runs every 2 s (a start and an end
// line); the pod is added once; its startup probe reports unhealthy, then
// started; readiness reports ready; each liveness failure is followed by the
// PLEG's ContainerDied and ContainerStarted events and a SYNC. Lines of
// other kubelet components that belong to no case (cadvisor's readlink
// noise, the prober's "Probe failed") are mixed in, so the pane shows its
// dimmed, unclassified lines too. A case the Reading does not have (no
// container manager before v1.27, no readiness or startup case at v1.20)
// is never emitted.
package demo

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// Feed is a simulated kubelet journal. It is not safe for concurrent use.
type Feed struct {
	rng   *rand.Rand
	sites map[role]extractor.LogSite
	q     events
	seq   int
	at    time.Duration // the scenario time of the last line
	pid   int
	pod   string // "probe-me"
	ns    string
	uid   string
	cid   string
}

// role is what a log line stands for in the scenario.
type role int

const (
	roleNone role = iota
	roleAdd
	roleUpdate
	rolePLEGStarted
	rolePLEGDied
	roleSync
	roleHousekeeping
	roleHousekeepingEnd
	roleHousekeepingSkipped
	roleStartupUnhealthy
	roleStartupStarted
	roleReady
	roleNotReady
	roleLiveness
	roleContainer
	// Lines that belong to no case.
	roleNoiseReadlink
	roleNoiseProbeFailed
	roleNoiseRelist
)

// caseOf is the case key each role's site is taken from.
var caseOf = map[role]string{
	roleAdd: extractor.KeyConfig, roleUpdate: extractor.KeyConfig,
	rolePLEGStarted: extractor.KeyPLEG, rolePLEGDied: extractor.KeyPLEG,
	roleSync:         extractor.KeySync,
	roleHousekeeping: extractor.KeyHousekeeping, roleHousekeepingEnd: extractor.KeyHousekeeping, roleHousekeepingSkipped: extractor.KeyHousekeeping,
	roleStartupUnhealthy: extractor.KeyStartup, roleStartupStarted: extractor.KeyStartup,
	roleReady: extractor.KeyReadiness, roleNotReady: extractor.KeyReadiness,
	roleLiveness:  extractor.KeyLiveness,
	roleContainer: extractor.KeyContainer,
}

// New returns a demo feed for r; seed makes it deterministic. With a nil
// Reading it emits only lines that belong to no case.
func New(r *extractor.Reading, seed int64) *Feed {
	f := &Feed{
		rng:   rand.New(rand.NewPCG(uint64(seed), 0x5eed)),
		sites: map[role]extractor.LogSite{},
		pod:   "probe-me",
		ns:    "default",
	}
	f.pid = 1000 + f.rng.IntN(9000)
	f.uid = f.hex(8) + "-" + f.hex(4) + "-4" + f.hex(3) + "-8" + f.hex(3) + "-" + f.hex(12)
	f.cid = f.hex(64)
	if r != nil {
		for ro, key := range caseOf {
			if ls, ok := findSite(r, key, ro); ok {
				f.sites[ro] = ls
			}
		}
	}
	ms := time.Millisecond
	f.schedule(0, roleHousekeepingSkipped)
	f.schedule(500*ms, roleAdd)
	f.schedule(1000*ms, rolePLEGStarted)
	f.schedule(1700*ms, roleStartupUnhealthy)
	f.schedule(1701*ms, roleStartupStarted)
	f.schedule(2000*ms, roleHousekeeping)
	f.schedule(2200*ms, roleReady)
	f.schedule(10800*ms, roleNoiseProbeFailed)
	f.schedule(45*time.Second, roleContainer)
	f.schedule(60*time.Second, roleUpdate)
	f.schedule(300*ms, roleNoiseReadlink)
	f.schedule(1100*ms, roleNoiseRelist)
	return f
}

func (f *Feed) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[f.rng.IntN(16)]
	}
	return string(b)
}

// findSite picks the log site of case key that plays ro: the line the
// kubelet at the Reading's tag prints for it.
func findSite(r *extractor.Reading, key string, ro role) (extractor.LogSite, bool) {
	c, ok := r.Function.CaseByKey(key)
	if !ok {
		return extractor.LogSite{}, false
	}
	var best extractor.LogSite
	found := false
	for _, ls := range c.Logs {
		if ls.Severity != "info" || path.Base(ls.File) != path.Base(r.Function.File) {
			continue
		}
		m := ls.Message
		var fits bool
		switch ro {
		case roleAdd:
			fits = strings.Contains(m, "ADD")
		case roleUpdate:
			fits = strings.Contains(m, "UPDATE")
		case roleHousekeeping:
			fits = strings.HasPrefix(m, "SyncLoop (housekeeping)") && !strings.Contains(m, "end")
		case roleHousekeepingEnd:
			fits = strings.HasPrefix(m, "SyncLoop (housekeeping) end")
		case roleHousekeepingSkipped:
			fits = strings.Contains(m, "skipped")
		default:
			// The case's main line: not the "pod no longer exists" one.
			fits = !strings.Contains(m, "ignore") && !strings.Contains(m, "does not exist")
		}
		if fits && (!found || ls.Verbosity < best.Verbosity) {
			best, found = ls, true
		}
	}
	return best, found
}

// Next returns the next raw line, stamped at now, and how long to wait
// before asking for the one after.
func (f *Feed) Next(now time.Time) ([]byte, time.Duration) {
	line, _, wait := f.next(now)
	return line, wait
}

// next is Next, also saying which case the line comes from ("" for none).
func (f *Feed) next(now time.Time) ([]byte, string, time.Duration) {
	f.skip()
	e := heap.Pop(&f.q).(event)
	f.at = e.at
	f.follow(e.role)
	line, key, _ := f.render(e.role, now)
	f.skip()
	return line, key, f.q[0].at - e.at
}

// skip plays the events at the head of the queue that the Reading has no
// site for (the startup probe at v1.20), so that the scenario goes on
// without them and the wait returned is the wait for a real line.
func (f *Feed) skip() {
	at := f.at
	for f.q[0].role < roleNoiseReadlink {
		if _, ok := f.sites[f.q[0].role]; ok {
			break
		}
		e := heap.Pop(&f.q).(event)
		f.at = e.at
		f.follow(e.role)
	}
	f.at = at
}

// follow schedules what comes after ro in the scenario.
func (f *Feed) follow(ro role) {
	ms := time.Millisecond
	jitter := func(d time.Duration) time.Duration { return d + time.Duration(f.rng.IntN(int(d/5)+1)) - d/10 }
	switch ro {
	case roleHousekeepingSkipped:
	case roleHousekeeping:
		f.schedule(time.Duration(1+f.rng.IntN(4))*ms, roleHousekeepingEnd)
		f.schedule(2*time.Second, roleHousekeeping)
	case roleNoiseProbeFailed:
		f.schedule(100*ms, roleLiveness)
	case roleLiveness:
		f.schedule(jitter(1600*ms), rolePLEGDied)
		f.schedule(jitter(10*time.Second), roleNoiseProbeFailed)
	case rolePLEGDied:
		f.schedule(50*ms, roleNotReady)
		f.schedule(jitter(900*ms), roleSync)
	case roleSync:
		f.schedule(jitter(600*ms), rolePLEGStarted)
	case rolePLEGStarted:
		if f.at > 5*time.Second {
			f.schedule(jitter(1500*ms), roleReady)
		}
	case roleContainer:
		f.schedule(jitter(45*time.Second), roleContainer)
	case roleUpdate:
		f.schedule(jitter(60*time.Second), roleUpdate)
	case roleNoiseReadlink:
		f.schedule(time.Duration(100+f.rng.IntN(1400))*ms, roleNoiseReadlink)
	case roleNoiseRelist:
		f.schedule(3*time.Second, roleNoiseRelist)
	}
}

func (f *Feed) schedule(after time.Duration, ro role) {
	f.seq++
	heap.Push(&f.q, event{at: f.at + after, seq: f.seq, role: ro})
}

// render writes ro's line; ok is false when the Reading has no site for it.
func (f *Feed) render(ro role, now time.Time) (line []byte, key string, ok bool) {
	podRef := f.ns + "/" + f.pod
	oldRef := f.pod + "_" + f.ns + "(" + f.uid + ")" // format.Pod before v1.21
	switch ro {
	case roleNoiseReadlink:
		fd := 3 + f.rng.IntN(60)
		return f.klog('E', now, "handler.go", 293, fmt.Sprintf(`error while reading "/proc/1/fd/%d" link: readlink /proc/1/fd/%d: permission denied`, fd, fd)), "", true
	case roleNoiseProbeFailed:
		return f.klog('I', now, "prober.go", 107, fmt.Sprintf(`"Probe failed" probeType="Liveness" pod=%q podUID=%q containerName="flaky" probeResult="failure" output="HTTP probe failed with statuscode: 500"`, podRef, f.uid)), "", true
	case roleNoiseRelist:
		return f.klog('I', now, "generic.go", 224, `"GenericPLEG: Relisting"`), "", true
	}
	ls, ok := f.sites[ro]
	if !ok {
		return nil, "", false
	}
	key = caseOf[ro]
	event := func(typ string) (structured, printf string) {
		return fmt.Sprintf(`{"ID":%q,"Type":%q,"Data":%q}`, f.uid, typ, f.cid),
			fmt.Sprintf(`&pleg.PodLifecycleEvent{ID:%q, Type:%q, Data:%q}`, f.uid, typ, f.cid)
	}
	var kvs string // key=value pairs after a structured message
	var args []arg // arguments of a printf format
	switch ro {
	case roleAdd, roleUpdate:
		kvs = fmt.Sprintf(`source="file" pods=[%q]`, podRef)
		args = []arg{{s: "file"}, {s: oldRef}}
	case rolePLEGStarted, rolePLEGDied:
		typ := "ContainerStarted"
		if ro == rolePLEGDied {
			typ = "ContainerDied"
		}
		s, p := event(typ)
		kvs = fmt.Sprintf(`pod=%q event=%s`, podRef, s)
		args = []arg{{s: oldRef}, {s: p, raw: true}}
	case roleSync:
		kvs = fmt.Sprintf(`total=1 pods=[%q]`, podRef)
		args = []arg{{s: "1", raw: true}, {s: oldRef, raw: true}}
	case roleHousekeepingEnd:
		kvs = fmt.Sprintf(`duration="%dms"`, 1+f.rng.IntN(4))
	case roleStartupUnhealthy, roleStartupStarted, roleReady, roleNotReady, roleLiveness:
		status := map[role]string{roleStartupUnhealthy: "unhealthy", roleStartupStarted: "started",
			roleReady: "ready", roleNotReady: "not ready", roleLiveness: "unhealthy"}[ro]
		kvs = fmt.Sprintf(`probe=%q status=%q pod=%q`, key, status, podRef)
		args = []arg{{s: oldRef}}
	case roleContainer:
		kvs = fmt.Sprintf(`pod=%q event={"PodUIDs":[%q]}`, podRef, f.uid)
	}
	var body string
	if ls.Style == "printf" {
		body = sprintf(ls.Message, args)
	} else {
		body = strconv.Quote(ls.Message)
		if kvs != "" {
			body += " " + kvs
		}
	}
	return f.klog(severity[ls.Severity], now, path.Base(ls.File), ls.Line, body), key, true
}

// klog writes a klog text line: "I1130 02:03:04.123456    4242 kubelet.go:2760] body".
func (f *Feed) klog(sev byte, now time.Time, file string, line int, body string) []byte {
	return klogLine(sev, now, f.pid, file, line, body)
}

func klogLine(sev byte, now time.Time, pid int, file string, line int, body string) []byte {
	now = now.UTC()
	_, mo, d := now.Date()
	h, mi, s := now.Clock()
	return fmt.Appendf(nil, "%c%02d%02d %02d:%02d:%02d.%06d %7d %s:%d] %s",
		sev, int(mo), d, h, mi, s, now.Nanosecond()/1000, pid, file, line, body)
}

// SiteLine is a klog text line as a kubelet would print it from log site ls
// of case key, at time at, about the pod default/probe-me: for tests that
// check every log site of a tag, not just the ones the scenario fires.
func SiteLine(ls extractor.LogSite, key string, at time.Time) []byte {
	var body string
	if ls.Style == "printf" {
		ref := arg{s: "probe-me_default(6f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f)"}
		body = sprintf(ls.Message, []arg{ref, ref, ref, ref})
	} else {
		body = strconv.Quote(ls.Message)
		if strings.HasPrefix(ls.Message, "SyncLoop (probe)") {
			body += fmt.Sprintf(" probe=%q status=%q", key, "unhealthy")
		}
		body += ` pod="default/probe-me"`
	}
	return klogLine(severity[ls.Severity], at, 4242, path.Base(ls.File), ls.Line, body)
}

// severity is klog's letter for a LogSite's severity.
var severity = map[string]byte{"info": 'I', "warning": 'W', "error": 'E', "fatal": 'F'}

// arg is one argument of a printf format; raw ones are not quoted by %q.
type arg struct {
	s   string
	raw bool
}

// sprintf formats a klog printf format with string arguments: %q quotes
// (unless the argument is raw), every other verb writes the text as is.
func sprintf(format string, args []arg) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(format); i++ {
		if format[i] != '%' || i+1 == len(format) {
			b.WriteByte(format[i])
			continue
		}
		j := i + 1
		for j < len(format) && strings.IndexByte("+#- 0123456789.", format[j]) >= 0 {
			j++
		}
		if j == len(format) {
			break
		}
		i = j
		if format[j] == '%' {
			b.WriteByte('%')
			continue
		}
		a := arg{s: "?", raw: true}
		if n < len(args) {
			a = args[n]
		}
		n++
		if format[j] == 'q' && !a.raw {
			b.WriteString(strconv.Quote(a.s))
		} else {
			b.WriteString(a.s)
		}
	}
	return b.String()
}

// event is one line due at a scenario time; seq keeps equal times in order.
type event struct {
	at   time.Duration
	seq  int
	role role
}

type events []event

func (q events) Len() int { return len(q) }
func (q events) Less(i, j int) bool {
	if q[i].at != q[j].at {
		return q[i].at < q[j].at
	}
	return q[i].seq < q[j].seq
}
func (q events) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *events) Push(x any)   { *q = append(*q, x.(event)) }
func (q *events) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}
