// Package labcheck checks the course's exercise, step 3, from a room
// feed's stored journal: that the pod (probe-me by default) was added, that
// its liveness probe failed, that it was deleted at teardown, and that the
// kubelet logged at -v=4 or more, each with the line that proves it.
//
// It reads classified lines (package classify) and nothing else: the lines
// a feed's record of what fired holds (server/feeds, fired.go), never the
// demo's. A check is a pure function of those lines and the Reading they
// were classified against; the server feeds a Checker the lines as they are
// stored.
//
// klog text does not print a line's V level. A line proves -v≥4 when the
// classifier matched it to a V(4) log site (the Reading's LogSite knows each
// site's verbosity), when the kubelet's JSON format printed "v":4, or when
// its message can only come from V(4) sites of its case (a kubelet of
// another version than the Reading's tag).
package labcheck

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/classify"
)

// DefaultPod is the exercise's pod when the class names none: the
// course's `kubectl run probe-me`, and the lab's static pod (server/lab).
const DefaultPod = "probe-me"

// maxLine bounds the evidence line quoted.
const maxLine = 600

// Line is a stored line of a feed: its sequence number there, classified.
type Line struct {
	Seq uint64
	classify.Line
}

// Evidence is the line that proves a check.
type Evidence struct {
	Seq    uint64     `json:"seq"`
	Time   *time.Time `json:"time"`
	Case   string     `json:"case"`
	Pod    string     `json:"pod,omitempty"`
	Cursor string     `json:"cursor,omitempty"` // journald __CURSOR
	Line   string     `json:"line"`             // the kubelet's own text
	// Link reads the line back from the feed's stream (NDJSON, as the
	// feed socket sends it); "" when no feed was named.
	Link string `json:"link,omitempty"`
}

// Check is one check: OK with the evidence, or not yet and why.
type Check struct {
	OK   bool      `json:"ok"`
	Text string    `json:"text"` // what the instructor reads: "probe-me added", "not yet", "saw …, not probe-me"
	At   *Evidence `json:"at,omitempty"`
	// Seen is the other pods the journal showed for this check, when
	// none was the class's.
	Seen []string `json:"seen,omitempty"`
}

// Result is the four checks of the exercise for one journal.
type Result struct {
	Pod            string `json:"pod"` // the pod looked for
	Added          Check  `json:"added"`
	LivenessFailed Check  `json:"liveness_failed"`
	Deleted        Check  `json:"deleted"`
	Verbosity      Check  `json:"verbosity"`
	// Lines is how many classified lines were looked at; MaxVerbosity the
	// highest V level one of them proved (-1: none proved one).
	Lines        int `json:"lines"`
	MaxVerbosity int `json:"max_verbosity"`
}

// BelowV4 reports whether the journal's lines say its kubelet logs below
// -v=4: lines of known V level, none of them V(4).
func (r Result) BelowV4() bool { return !r.Verbosity.OK && r.MaxVerbosity >= 0 }

// Done is how many of the four checks pass.
func (r Result) Done() int {
	n := 0
	for _, c := range []Check{r.Added, r.LivenessFailed, r.Deleted, r.Verbosity} {
		if c.OK {
			n++
		}
	}
	return n
}

// Journal is the exercise checked on lines (in any order) of the journal
// of feed ("" for no links), classified against reading (nil: the lines'
// own verbosity only), for the pod named pod ("" for DefaultPod).
func Journal(pod, feed string, reading *extractor.Reading, lines []Line) Result {
	c := New(pod, feed, reading)
	for i := range lines {
		c.Add(&lines[i])
	}
	return c.Result()
}

// podSeen is what a journal showed of one pod.
type podSeen struct {
	added, livenessFailed, deleted *Evidence
	static                         bool // added from a manifest file or URL: a static pod
}

// Checker accumulates the checks over a journal's lines, given in any
// order: each check keeps its earliest line.
type Checker struct {
	want, wantNS string
	feed         string
	sites        map[string][]extractor.LogSite // per case, from the Reading
	pods         map[string]*podSeen
	verbose      *Evidence
	maxV         int // the highest V level a line proved, -1 when none
	lines        int
}

// New returns a Checker for pod ("namespace/name" or a name in any
// namespace; "" for DefaultPod) over the journal of feed.
func New(pod, feed string, reading *extractor.Reading) *Checker {
	pod = strings.TrimSpace(pod)
	if pod == "" {
		pod = DefaultPod
	}
	c := &Checker{want: pod, feed: feed, pods: map[string]*podSeen{}, maxV: -1}
	if ns, name, ok := strings.Cut(pod, "/"); ok {
		c.wantNS, c.want = ns, name
	}
	if reading != nil {
		c.sites = make(map[string][]extractor.LogSite, len(reading.Function.Cases))
		for _, cs := range reading.Function.Cases {
			c.sites[cs.Key] = cs.Logs
		}
	}
	return c
}

// Verbose is the sequence number of the earliest line given that proves
// -v=4 or more, 0 when none does.
func (c *Checker) Verbose() uint64 {
	if c.verbose == nil {
		return 0
	}
	return c.verbose.Seq
}

// Pod is the pod the checker looks for, as the class names it.
func (c *Checker) Pod() string {
	if c.wantNS != "" {
		return c.wantNS + "/" + c.want
	}
	return c.want
}

// Add looks at one line. Lines of no case are not the loop's: they prove
// nothing here.
func (c *Checker) Add(l *Line) {
	if l.Case == "" {
		return
	}
	c.lines++
	if v := c.verbosity(l); v >= 0 {
		c.maxV = max(c.maxV, v)
		if v >= 4 && earlier(l.Seq, c.verbose) {
			c.verbose = c.evidence(l, "")
		}
	}
	switch l.Case {
	case "config":
		op, source := configOp(l)
		for _, p := range l.Pods {
			s := c.seen(p)
			switch op {
			case "ADD":
				if earlier(l.Seq, s.added) {
					s.added = c.evidence(l, p)
				}
				s.static = s.static || source == "file" || source == "http"
			case "REMOVE", "DELETE":
				if earlier(l.Seq, s.deleted) {
					s.deleted = c.evidence(l, p)
				}
			}
		}
	case "liveness":
		if !livenessFailed(l) {
			return
		}
		for _, p := range l.Pods {
			if s := c.seen(p); earlier(l.Seq, s.livenessFailed) {
				s.livenessFailed = c.evidence(l, p)
			}
		}
	}
}

func (c *Checker) seen(pod string) *podSeen {
	s := c.pods[pod]
	if s == nil {
		s = &podSeen{}
		c.pods[pod] = s
	}
	return s
}

func earlier(seq uint64, e *Evidence) bool { return e == nil || seq < e.Seq }

func (c *Checker) evidence(l *Line, pod string) *Evidence {
	e := &Evidence{Seq: l.Seq, Case: l.Case, Pod: pod, Cursor: l.Cursor, Line: l.Display()}
	if e.Line == "" {
		e.Line = l.Raw
	}
	if len(e.Line) > maxLine {
		e.Line = cutUTF8(e.Line, maxLine) + "…"
	}
	if !l.Time.IsZero() {
		t := l.Time
		e.Time = &t
	}
	if c.feed != "" {
		e.Link = fmt.Sprintf("/feeds/%s/fired/%s/lines?before=%d&limit=1", c.feed, l.Case, l.Seq+1)
	}
	return e
}

// matches reports whether the journal's pod p ("namespace/name") is the
// one looked for: by name, or, for a static pod, by the name the kubelet
// gives its mirror (name-NODE: the lab's probe-me is default/probe-me-lab).
func (c *Checker) matches(p string, s *podSeen) bool {
	ns, name, ok := strings.Cut(p, "/")
	if !ok {
		ns, name = "", p
	}
	if c.wantNS != "" && ns != c.wantNS {
		return false
	}
	if name == c.want {
		return true
	}
	node, ok := strings.CutPrefix(name, c.want+"-")
	return ok && node != "" && s.static
}

// Result is the checks as they stand.
func (c *Checker) Result() Result {
	r := Result{Pod: c.Pod(), Lines: c.lines, MaxVerbosity: c.maxV}
	pods := make([]string, 0, len(c.pods))
	for p := range c.pods {
		pods = append(pods, p)
	}
	slices.Sort(pods)
	pick := func(of func(*podSeen) *Evidence) (best *Evidence, others []string) {
		for _, p := range pods {
			s := c.pods[p]
			e := of(s)
			switch {
			case e == nil:
			case c.matches(p, s):
				if earlier(e.Seq, best) {
					best = e
				}
			default:
				others = append(others, p)
			}
		}
		return best, others
	}
	want := c.Pod()
	e, others := pick(func(s *podSeen) *Evidence { return s.added })
	r.Added = c.check(e, others, want+" added", "added")
	e, others = pick(func(s *podSeen) *Evidence { return s.livenessFailed })
	r.LivenessFailed = c.check(e, others, want+"'s liveness probe failed", "failing its liveness probe")
	e, others = pick(func(s *podSeen) *Evidence { return s.deleted })
	r.Deleted = c.check(e, others, want+" deleted", "deleted")
	r.Verbosity = c.verbosityCheck()
	return r
}

// maxSeen bounds the other pods a check names.
const maxSeen = 3

func (c *Checker) check(e *Evidence, others []string, ok, what string) Check {
	if e != nil {
		if _, name, _ := strings.Cut(e.Pod, "/"); name != c.want {
			ok += " (static pod " + e.Pod + ")"
		}
		return Check{OK: true, Text: ok, At: e}
	}
	if len(others) == 0 {
		return Check{Text: "not yet"}
	}
	shown := others[:min(len(others), maxSeen)]
	text := fmt.Sprintf("saw %s %s, not %s", strings.Join(shown, ", "), what, c.Pod())
	if n := len(others) - len(shown); n > 0 {
		text = fmt.Sprintf("saw %s and %d more %s, not %s", strings.Join(shown, ", "), n, what, c.Pod())
	}
	return Check{Text: text, Seen: slices.Clone(others)}
}

func (c *Checker) verbosityCheck() Check {
	switch {
	case c.verbose != nil:
		return Check{OK: true, Text: "-v=4 or more: a V(4) line", At: c.verbose}
	case c.maxV >= 0:
		return Check{Text: fmt.Sprintf("not yet: no V(4) line, only V(%d) and below; a kubelet at -v below 4 cannot show them (restart it with -v=4)", c.maxV)}
	}
	return Check{Text: "not yet"}
}

// verbosity is the V level line l was logged at, -1 when unknown.
func (c *Checker) verbosity(l *Line) int {
	if l.Severity != "" && l.Severity != "info" {
		return -1 // warnings and errors are not V-gated
	}
	if l.Verbosity >= 0 {
		return l.Verbosity
	}
	// By message: the case's sites the message can come from, if they
	// agree on one level.
	v := -1
	for _, s := range c.sites[l.Case] {
		if s.Severity != "info" || !consistent(s, l.Message) {
			continue
		}
		if v >= 0 && s.Verbosity != v {
			return -1
		}
		v = s.Verbosity
	}
	return v
}

// consistent reports whether a line's message can come from site s.
func consistent(s extractor.LogSite, msg string) bool {
	if s.Style == "printf" {
		p := s.Message
		if i := strings.IndexByte(p, '%'); i >= 0 {
			p = p[:i]
		}
		return p != "" && strings.HasPrefix(msg, p)
	}
	return msg == s.Message
}

// configOp is a config line's operation (ADD, UPDATE, REMOVE, DELETE,
// RECONCILE) and its source ("api", "file", "http"), from its message:
// `"SyncLoop ADD" source="file"` or `SyncLoop (ADD, "file"): …`.
func configOp(l *Line) (op, source string) {
	rest, ok := strings.CutPrefix(l.Message, "SyncLoop ")
	if !ok {
		return "", ""
	}
	if inner, ok := strings.CutPrefix(rest, "("); ok { // printf style
		op, after, _ := strings.Cut(inner, ",")
		src, _, _ := strings.Cut(strings.TrimSpace(after), ")")
		return op, strings.Trim(src, `"`)
	}
	return rest, field(l.Display(), "source")
}

// livenessFailed reports whether a liveness line says the probe failed:
// "SyncLoop (probe)" with status="unhealthy", or the older
// "SyncLoop (container unhealthy)". An update the loop ignores (of a
// container since replaced) is not its pod's probe failing.
func livenessFailed(l *Line) bool {
	if strings.Contains(l.Message, "ignore") {
		return false
	}
	if strings.HasPrefix(l.Message, "SyncLoop (container unhealthy)") {
		return true
	}
	return field(l.Display(), "status") == "unhealthy"
}

// field is the value of a structured line's key: klog text's key="value"
// or the kubelet's JSON format's "key":"value" ("" when absent).
func field(text, key string) string {
	for _, pre := range []string{" " + key + `="`, `"` + key + `":"`} {
		if i := strings.Index(text, pre); i >= 0 {
			v, _, _ := strings.Cut(text[i+len(pre):], `"`)
			return v
		}
	}
	return ""
}

// cutUTF8 is s cut to at most n bytes, on a rune boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
