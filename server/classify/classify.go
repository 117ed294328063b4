// Package classify turns one kubelet log line, in any format the live pane
// reads, into a classified Line: its case of the select, caller, pods, time.
// It knows log formats and the Reading, nothing of sockets.
//
// A line's case is found in one of two ways. Exact: the klog caller
// (kubelet.go:2760) is a log site of a case in the Reading, or lies inside a
// case's clause or a helper it calls; this holds when the kubelet runs the
// Reading's tag. By message: "SyncLoop (PLEG): event for pod",
// `SyncLoop (ADD, "api"): …`, in every style the kubelet has used since
// v1.20.0, for a kubelet of another version. When both apply and disagree,
// the message wins: a caller line only means something at its own tag.
package classify

import (
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/jsonstr"
)

// Formats a line can be read as.
const (
	FormatJournalJSON = "journal-json" // journalctl -o json
	FormatJournalText = "journal-text" // journalctl -o short, short-precise, short-iso, …
	FormatKlog        = "klog"         // klog text, bare (or journalctl -o cat)
	FormatKubeletJSON = "kubelet-json" // kubelet --logging-format=json
	FormatRaw         = "raw"          // anything else, kept as is
)

// How a line's case was found.
const (
	MatchExact   = "exact"   // the caller is a log site of the case
	MatchRange   = "range"   // the caller lies inside the case (or a helper it calls)
	MatchMessage = "message" // by message text alone
)

// OmittedMessage is the Message of a journald entry whose MESSAGE journalctl
// left out (null: over 4096 bytes, printed without --all).
const OmittedMessage = "[message omitted by journalctl (use --all)]"

// Line is one classified log line. Text fields are valid UTF-8 without
// control characters or ANSI escapes (Stripped says when some were removed)
// and at most MaxText bytes plus a cut marker.
type Line struct {
	Case       string    `json:"case"`                  // case key; "" when none (null in JSON)
	Match      string    `json:"match,omitempty"`       // MatchExact, MatchRange or MatchMessage
	Format     string    `json:"format"`                // FormatJournalJSON, …
	Caller     string    `json:"caller"`                // klog's caller as printed: "kubelet.go:2760", "kubelet/kubelet.go:2407"
	SourceLine int       `json:"source_line,omitempty"` // the caller's line in the Reading's file, when matched exactly or by range
	Severity   string    `json:"severity"`              // "info", "warning", "error", "fatal"; "" when unknown
	Verbosity  int       `json:"verbosity"`             // klog V level; -1 when unknown
	Time       time.Time `json:"time"`                  // zero (null in JSON) when the line has none
	Message    string    `json:"message"`               // the structured message, or the whole printf text
	Pods       []string  `json:"pods"`                  // "namespace/name"
	Cursor     string    `json:"cursor,omitempty"`      // journald __CURSOR (opaque)
	Host       string    `json:"host,omitempty"`
	PID        int       `json:"pid,omitempty"`
	Ident      string    `json:"ident,omitempty"` // SYSLOG_IDENTIFIER, e.g. "kubelet"
	Raw        string    `json:"raw"`             // the line as given (made safe, see above)
	Text       string    `json:"text,omitempty"`  // the kubelet's own text (journald's MESSAGE) when Raw wraps it, else ""
	Version    string    `json:"kubelet_version,omitempty"`
	Stripped   bool      `json:"stripped,omitempty"` // control characters, escapes or invalid UTF-8 were removed
}

// Display is the text to show for l: the kubelet's own line, without a
// journald wrapper when it had one.
func (l *Line) Display() string {
	if l.Format == FormatJournalJSON || l.Format == FormatJournalText {
		return l.Text
	}
	return l.Raw
}

// MarshalJSON writes Case and Time as null when empty, Pods as [] when none.
func (l Line) MarshalJSON() ([]byte, error) {
	return l.AppendJSON(nil)
}

// AppendJSON appends l's JSON encoding to b (MarshalJSON is
// AppendJSON(nil)). It is written by hand, field by field, because the
// live pane encodes every line it receives. Case and time come first
// (null when empty), then the other fields in the struct's order, each
// left out as its omitempty tag says; strings are escaped as
// encoding/json escapes them without HTML escaping ("<script>" in a pod
// name stays readable; the page renders it with textContent). A test
// (json_test.go) holds the output to encoding/json's, byte for byte.
func (l *Line) AppendJSON(b []byte) ([]byte, error) {
	b = append(b, `{"case":`...)
	if l.Case == "" {
		b = append(b, "null"...)
	} else {
		b = jsonstr.Append(b, l.Case)
	}
	b = append(b, `,"time":`...)
	if y := l.Time.Year(); l.Time.IsZero() || y < 0 || y > 9999 {
		b = append(b, "null"...)
	} else {
		b = append(b, '"')
		var err error
		if b, err = l.Time.AppendText(b); err != nil {
			return nil, err
		}
		b = append(b, '"')
	}
	if l.Match != "" {
		b = jsonstr.Append(append(b, `,"match":`...), l.Match)
	}
	b = jsonstr.Append(append(b, `,"format":`...), l.Format)
	b = jsonstr.Append(append(b, `,"caller":`...), l.Caller)
	if l.SourceLine != 0 {
		b = strconv.AppendInt(append(b, `,"source_line":`...), int64(l.SourceLine), 10)
	}
	b = jsonstr.Append(append(b, `,"severity":`...), l.Severity)
	b = strconv.AppendInt(append(b, `,"verbosity":`...), int64(l.Verbosity), 10)
	b = jsonstr.Append(append(b, `,"message":`...), l.Message)
	b = append(b, `,"pods":[`...)
	for i, p := range l.Pods {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(b, p)
	}
	b = append(b, ']')
	if l.Cursor != "" {
		b = jsonstr.Append(append(b, `,"cursor":`...), l.Cursor)
	}
	if l.Host != "" {
		b = jsonstr.Append(append(b, `,"host":`...), l.Host)
	}
	if l.PID != 0 {
		b = strconv.AppendInt(append(b, `,"pid":`...), int64(l.PID), 10)
	}
	if l.Ident != "" {
		b = jsonstr.Append(append(b, `,"ident":`...), l.Ident)
	}
	b = jsonstr.Append(append(b, `,"raw":`...), l.Raw)
	if l.Text != "" {
		b = jsonstr.Append(append(b, `,"text":`...), l.Text)
	}
	if l.Version != "" {
		b = jsonstr.Append(append(b, `,"kubelet_version":`...), l.Version)
	}
	if l.Stripped {
		b = append(b, `,"stripped":true`...)
	}
	return append(b, '}'), nil
}

// Classifier classifies lines against one Reading (or by message alone when
// it has none). It is immutable and safe for concurrent use.
type Classifier struct {
	r      *extractor.Reading
	file   string // base name of the function's file, "kubelet.go"
	sites  map[int][]site
	ranges []span
	first  [256]bool         // first bytes of every message that has a case
	msgs   map[string]string // structured message → case key (or probeKey)
	printf []rule            // printf format prefixes → case key
	keys   map[string]bool   // the Reading's case keys
	now    func() time.Time  // nil: the wall clock, read through ref
	loc    *time.Location
	ref    atomic.Pointer[refTime] // the wall clock, refreshed every refEvery calls
	calls  atomic.Uint32           // calls since the last refresh of ref
}

// refTime is a reading of the wall clock and its year in the Classifier's zone.
type refTime struct {
	unix int64
	year int
}

// refEvery is how many timestamps share one reading of the wall clock. The
// year of a klog timestamp is inferred from a reference within a month of
// it, so a slightly stale clock does no harm, and reading it per line costs
// more than the rest of a line's classification on some VMs.
const refEvery = 1024

// clockNow is the reference time for timestamps without a year.
func (c *Classifier) clockNow() time.Time {
	if c.now != nil {
		return c.now()
	}
	return time.Unix(c.reference().unix, 0)
}

// reference is the wall clock as last read (or the WithClock clock).
func (c *Classifier) reference() refTime {
	if c.now != nil {
		t := c.now()
		return refTime{t.Unix(), t.In(c.loc).Year()}
	}
	p := c.ref.Load()
	if p == nil || c.calls.Add(1)%refEvery == 0 {
		t := time.Now()
		p = &refTime{t.Unix(), t.In(c.loc).Year()}
		c.ref.Store(p)
	}
	return *p
}

type site struct {
	key, message, style, severity string
	verbosity                     int
}

type span struct {
	start, end int
	keys       []string
}

// Option configures a Classifier.
type Option func(*Classifier)

// WithClock sets the clock that supplies the year of klog text timestamps,
// which have none (default time.Now).
func WithClock(now func() time.Time) Option { return func(c *Classifier) { c.now = now } }

// WithLocation sets the zone of timestamps that carry none: klog text, and
// journald short output (default UTC, as on most nodes).
func WithLocation(loc *time.Location) Option { return func(c *Classifier) { c.loc = loc } }

// New returns a Classifier for r; r may be nil (by message only).
func New(r *extractor.Reading, opts ...Option) *Classifier {
	c := &Classifier{r: r, loc: time.UTC}
	for _, o := range opts {
		o(c)
	}
	for _, r := range builtin {
		c.first[r.prefix[0]] = true
	}
	if r == nil {
		return c
	}
	defer func() {
		for m := range c.msgs {
			if m != "" {
				c.first[m[0]] = true
			}
		}
		for _, r := range c.printf {
			c.first[r.prefix[0]] = true
		}
	}()
	f := &r.Function
	c.file = path.Base(f.File)
	c.sites = map[int][]site{}
	c.msgs = map[string]string{}
	c.keys = map[string]bool{}
	for _, cs := range f.Cases {
		c.keys[cs.Key] = true
		c.ranges = append(c.ranges, span{cs.Start, cs.End, []string{cs.Key}})
		for _, ls := range cs.Logs {
			if path.Base(ls.File) != c.file {
				continue
			}
			c.sites[ls.Line] = appendSite(c.sites[ls.Line], site{cs.Key, ls.Message, ls.Style, ls.Severity, ls.Verbosity})
			c.addMessage(ls, cs.Key)
		}
	}
	for _, h := range f.Helpers {
		if len(h.Cases) > 0 {
			c.ranges = append(c.ranges, span{h.Start, h.End, h.Cases})
		}
	}
	return c
}

func appendSite(ss []site, s site) []site {
	for _, o := range ss {
		if o.key == s.key {
			return ss
		}
	}
	return append(ss, s)
}

// addMessage records a log site's message for matching lines by message.
// A message reached from several cases (handleProbeSync's) is told apart by
// its probe="…" value.
func (c *Classifier) addMessage(ls extractor.LogSite, key string) {
	if ls.Style == "printf" {
		p := printfPrefix(ls.Message)
		if len(p) < 8 {
			return
		}
		for i, r := range c.printf {
			if r.prefix == p {
				if r.key != key {
					c.printf[i].key = probeKey
				}
				return
			}
		}
		c.printf = append(c.printf, rule{prefix: p, key: key})
		return
	}
	if old, ok := c.msgs[ls.Message]; ok && old != key {
		key = probeKey
	}
	c.msgs[ls.Message] = key
}

// printfPrefix is the constant text of a format before its first verb.
func printfPrefix(format string) string {
	for i := 0; i < len(format); i++ {
		if format[i] == '%' {
			if i+1 < len(format) && format[i+1] == '%' {
				return format[:i] // "%%" would need unescaping; stop short
			}
			return format[:i]
		}
	}
	return format
}

// Reading is the Reading the Classifier was built from (nil when none).
func (c *Classifier) Reading() *extractor.Reading { return c.r }

// CaseOf returns the case a caller ("kubelet.go:2760" or
// "kubelet/kubelet.go:2760") pins down by position alone at the Reading's
// tag, and the caller's line. ok is false when the caller is elsewhere, or
// in a helper several cases share.
func (c *Classifier) CaseOf(caller string) (key string, line int, ok bool) {
	base, line, okc := splitCaller(caller)
	if !okc || c.r == nil || base != c.file {
		return "", line, false
	}
	if ss := c.sites[line]; len(ss) == 1 {
		return ss[0].key, line, true
	} else if len(ss) > 1 {
		return "", line, false
	}
	if keys := c.inRange(line); len(keys) == 1 {
		return keys[0], line, true
	}
	return "", line, false
}

func (c *Classifier) inRange(line int) []string {
	for _, s := range c.ranges {
		if s.start <= line && line <= s.end {
			return s.keys
		}
	}
	return nil
}

// Classify classifies one raw line (without its trailing newline). It never
// fails: a line it cannot read is returned as FormatRaw with no case.
func (c *Classifier) Classify(raw []byte) Line {
	return c.classify(input{b: raw}, true)
}

// ClassifyString is Classify for a line held as a string: the common case
// (printable text under MaxText) then shares its memory instead of copying.
func (c *Classifier) ClassifyString(raw string) Line {
	return c.classify(input{s: raw, isStr: true}, true)
}

// entry is what the format parsers find in a line, before classification.
type entry struct {
	caller   string
	message  string
	kvs      string // klog key=value text after a structured message
	probe    string // probe="…"
	version  string // the kubelet's version, from its start-up line
	pods     []string
	podsIn   podsIn // where pods are yet to be read from, for a klog line
	severity string
	verb     int
}

// podsIn says where a klog line's pods are, read only once the caller
// wants them (Classify does, ClassifyText does not).
type podsIn uint8

const (
	podsNone      podsIn = iota
	podsInKVs            // pod=… and pods=[…] in the key=value text
	podsInMessage        // a pre-structured message's name_namespace(uid)
)

// input is a line as bytes or as a string (isStr), so that neither form
// is copied into the other for nothing; noPods leaves Line.Pods out.
type input struct {
	b      []byte
	s      string
	isStr  bool
	noPods bool
}

func (in input) len() int {
	if in.isStr {
		return len(in.s)
	}
	return len(in.b)
}

func (c *Classifier) classify(raw input, exactOK bool) Line {
	l := Line{Verbosity: -1, Format: FormatRaw}
	var e entry
	var ok bool
	if raw.isStr {
		l.Raw, l.Stripped = cleanText(raw.s, MaxText)
	} else {
		l.Raw, l.Stripped = clean(raw.b, MaxText)
	}
	if n := raw.len(); n > 0 && l.Raw != "" && l.Raw[0] == '{' {
		if n <= maxParse {
			b := raw.b
			if raw.isStr {
				b = []byte(raw.s)
			}
			e, ok = c.parseJSON(b, &l)
		}
	} else {
		e, ok = c.parseText(l.Raw, &l)
	}
	if !ok {
		l.Format = FormatRaw
		return l
	}
	if e.severity != "" {
		l.Severity = e.severity
	}
	l.Caller = e.caller
	l.Message = e.message
	l.Version = e.version
	switch {
	case raw.noPods:
		e.pods = nil
	case e.podsIn == podsInKVs:
		e.pods = kvPods(e.kvs)
	case e.podsIn == podsInMessage:
		e.pods = oldPods(e.message)
	}
	if e.pods != nil {
		l.Pods = e.pods
	}
	if e.probe == "" && e.kvs != "" && strings.HasPrefix(e.message, "SyncLoop (probe)") {
		e.probe = kvString(e.kvs, "probe")
	}
	if e.verb >= 0 {
		l.Verbosity = e.verb
	}
	c.caseOf(&l, &e, exactOK)
	return l
}

// caseOf sets l.Case, l.Match and l.SourceLine.
func (c *Classifier) caseOf(l *Line, e *entry, exactOK bool) {
	base, line, okc := splitCaller(e.caller)
	inKubelet := !okc || base == "kubelet.go" || (c.file != "" && base == c.file)
	byMsg := c.messageKey(e, inKubelet)
	if exactOK && okc && c.r != nil && base == c.file {
		if ss := c.sites[line]; len(ss) > 0 {
			if s, ok := pick(ss, e.message, byMsg); ok {
				l.Case, l.Match, l.SourceLine = s.key, MatchExact, line
				if l.Verbosity < 0 && s.severity == "info" {
					l.Verbosity = s.verbosity
				}
				return
			}
			// A log site at this line with another message: the kubelet
			// runs another version. Trust the message.
		} else if keys := c.inRange(line); len(keys) > 0 && byMsg == "" {
			if k := pickKey(keys, probeCase(e.probe)); k != "" {
				l.Case, l.Match, l.SourceLine = k, MatchRange, line
				return
			}
		}
	}
	if byMsg != "" {
		l.Case, l.Match = byMsg, MatchMessage
	}
}

// consistent reports whether a line's message can come from the site.
func (s site) consistent(msg string) bool {
	if s.style == "printf" {
		return strings.HasPrefix(msg, printfPrefix(s.message))
	}
	return msg == s.message
}

// pick chooses among the sites at a caller's line those whose message the
// line can have: the one, or the one the message names (a probe helper's
// line serves three cases).
func pick(ss []site, msg, byMsg string) (site, bool) {
	var one site
	n := 0
	for _, s := range ss {
		if !s.consistent(msg) {
			continue
		}
		if s.key == byMsg {
			return s, true
		}
		one = s
		n++
	}
	return one, n == 1
}

func pickKey(keys []string, want string) string {
	if len(keys) == 1 {
		return keys[0]
	}
	for _, k := range keys {
		if k == want {
			return k
		}
	}
	return ""
}

// messageKey is the case of e by its message: the Reading's own log sites
// first, then the built-in table of every tag's messages. With a Reading,
// only its cases count (a v1.20 page has no readiness case).
func (c *Classifier) messageKey(e *entry, inKubelet bool) string {
	msg := e.message
	if msg == "" || !c.first[msg[0]] {
		return ""
	}
	key := ""
	if c.r != nil {
		key = c.msgs[msg]
		for i := 0; key == "" && i < len(c.printf); i++ {
			if strings.HasPrefix(msg, c.printf[i].prefix) {
				key = c.printf[i].key
			}
		}
		if key != "" && !inKubelet && !strings.HasPrefix(msg, "SyncLoop ") {
			key = ""
		}
	}
	if key == "" {
		key = builtinKey(msg, inKubelet)
	}
	if key == probeKey {
		key = probeCase(e.probe)
	}
	if key != "" && c.keys != nil && !c.keys[key] {
		return ""
	}
	return key
}

// Stream classifies the lines of one journal in order. It watches for the
// kubelet's start-up line: once it shows a version other than the
// Reading's tag, caller file:line no longer means anything at the tag, and
// lines are matched by message only. A Stream is not safe for concurrent
// use; make one per feed.
type Stream struct {
	c       *Classifier
	version string
}

// Stream returns a new Stream over c.
func (c *Classifier) Stream() *Stream { return &Stream{c: c} }

// Classify classifies the next line of the journal.
func (s *Stream) Classify(raw []byte) Line { return s.classify(input{b: raw}) }

// ClassifyString is Classify for a line held as a string.
func (s *Stream) ClassifyString(raw string) Line { return s.classify(input{s: raw, isStr: true}) }

// ClassifyText is Classify for a caller that writes the line as AppendText
// does: it leaves out Pods, which AppendText does not write and which cost
// a tenth of a klog line's classification (a klog line's are not read).
func (s *Stream) ClassifyText(raw []byte) Line { return s.classify(input{b: raw, noPods: true}) }

func (s *Stream) classify(raw input) Line {
	l := s.c.classify(raw, !s.Mismatch())
	if l.Version != "" {
		s.version = l.Version
		if s.Mismatch() && l.Match != MatchMessage {
			// The start-up line itself: classify it again without positions.
			l = s.c.classify(raw, false)
		}
	}
	return l
}

// Version is the kubelet's version as its start-up line said ("" until seen).
func (s *Stream) Version() string { return s.version }

// SetVersion tells the stream the kubelet's version when its start-up line
// went by before the stream existed (a feed restored from its file, or a
// Reading that arrived late).
func (s *Stream) SetVersion(v string) { s.version = v }

// Mismatch reports whether the kubelet's version is known and differs from
// the Reading's tag.
func (s *Stream) Mismatch() bool {
	return s.version != "" && s.c.r != nil && !SameVersion(s.version, s.c.r.Tag)
}

// SameVersion reports whether a kubelet's version ("v1.31.0",
// "v1.31.0+k3s1") is the tag's: build metadata after '+' is ignored.
func SameVersion(kubelet, tag string) bool {
	if i := strings.IndexByte(kubelet, '+'); i >= 0 {
		kubelet = kubelet[:i]
	}
	return kubelet == tag
}
