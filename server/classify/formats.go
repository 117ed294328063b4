package classify

// formats.go detects a line's format and reads it into an entry: journald
// JSON export, journald text, bare klog text, kubelet JSON.

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/syncloop/syncloop/server/jsonstr"
)

// parseText reads s (already cleaned) as klog text or journald text.
func (c *Classifier) parseText(s string, l *Line) (entry, bool) {
	if h, body, ok := parseKlog(s); ok {
		l.Format = FormatKlog
		e := klogEntry(h, body)
		l.Time = c.klogTime(h, time.Time{})
		l.PID = h.pid
		return e, true
	}
	j, msg, ok := parseJournalText(s, c.loc)
	if !ok {
		return entry{}, false
	}
	l.Format = FormatJournalText
	l.Host, l.Ident, l.PID, l.Text = j.host, j.ident, j.pid, msg
	ref := time.Time{}
	if !j.noYear {
		ref = j.time
	}
	l.Time = j.time
	if j.noYear {
		l.Time = c.withYear(j.time, time.Time{})
	}
	e, t := c.parseInner(msg, ref, l)
	if !t.IsZero() {
		l.Time = t
	}
	return e, true
}

// parseInner reads the message of a journald entry: klog text, kubelet
// JSON, or anything else, kept as the message. t is the time it carries.
func (c *Classifier) parseInner(msg string, ref time.Time, l *Line) (e entry, t time.Time) {
	if h, body, ok := parseKlog(msg); ok {
		return klogEntry(h, body), c.klogTime(h, ref)
	}
	if len(msg) > 0 && msg[0] == '{' {
		var j jsonLine
		if json.Unmarshal([]byte(msg), &j) == nil && j.Msg != nil {
			e, t := kubeletEntry(&j)
			return e, t
		}
	}
	return entry{message: msg, verb: -1}, time.Time{}
}

// klogEntry reads a klog text body.
func klogEntry(h klogHeader, body string) entry {
	e := entry{caller: h.caller, severity: h.severity, verb: -1}
	if msg, kvs, ok := structured(body); ok {
		e.message, e.kvs = msg, kvs
		if strings.Contains(kvs, "pod") {
			e.podsIn = podsInKVs
		}
		if msg == "Kubelet version" {
			e.version = version(kvString(kvs, "kubeletVersion"))
		}
		return e
	}
	e.message = body
	if strings.IndexByte(body, '_') >= 0 {
		e.podsIn = podsInMessage
	}
	// v1.20: klog.Infof("Version: %+v", version.Get()) in cmd/kubelet/app/server.go.
	if v, ok := strings.CutPrefix(body, "Version: "); ok {
		e.version = version(v)
	}
	return e
}

// version returns v when it looks like a kubelet version ("v1.31.0",
// "v1.31.0-rc.1+abc"), else "".
func version(v string) string {
	if len(v) < 2 || v[0] != 'v' || v[1] < '0' || v[1] > '9' || len(v) > 80 {
		return ""
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] == '"' || v[i] >= 0x7f {
			return ""
		}
	}
	return v
}

// klogTime is a klog header's time: the year (which klog does not print)
// is taken from ref, or the clock, so that it lies near it.
func (c *Classifier) klogTime(h klogHeader, ref time.Time) time.Time {
	if c.loc != time.UTC {
		if ref.IsZero() {
			ref = c.clockNow()
		}
		at := func(y int) time.Time { return time.Date(y, h.month, h.day, 0, 0, 0, 0, c.loc).Add(h.clock) }
		return nearYear(at, ref.In(c.loc))
	}
	// The hot path: integer arithmetic instead of time.Date.
	var rt refTime
	if ref.IsZero() {
		rt = c.reference()
	} else {
		rt = refTime{ref.Unix(), ref.UTC().Year()}
	}
	at := func(y int) int64 {
		return daysFromCivil(y, int(h.month), h.day)*86400 + int64(h.clock/time.Second)
	}
	sec := at(rt.year)
	switch d := sec - rt.unix; {
	case d > 31*86400:
		sec = at(rt.year - 1)
	case d < -334*86400:
		sec = at(rt.year + 1)
	}
	return time.Unix(sec, int64(h.clock%time.Second)).UTC()
}

// daysFromCivil is the number of days from 1970-01-01 to y-m-d in the
// proleptic Gregorian calendar (Howard Hinnant's days_from_civil).
func daysFromCivil(y, m, d int) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era = (y - 399) / 400
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return int64(era)*146097 + int64(doe) - 719468
}

// withYear gives t (whose year is unknown) the year that puts it closest
// before ref (or now): a December line read in January is last year's.
func (c *Classifier) withYear(t, ref time.Time) time.Time {
	if ref.IsZero() {
		ref = c.clockNow()
	}
	at := func(y int) time.Time {
		return time.Date(y, t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), t.Location())
	}
	return nearYear(at, ref.In(t.Location()))
}

// nearYear is at(year) for the year that puts it at most a month after ref
// and less than eleven months before it.
func nearYear(at func(int) time.Time, ref time.Time) time.Time {
	y := ref.Year()
	out := at(y)
	switch d := out.Sub(ref); {
	case d > 31*24*time.Hour:
		out = at(y - 1)
	case d < -334*24*time.Hour:
		out = at(y + 1)
	}
	return out
}

// jsonLine holds the fields of both JSON formats; the ones present say
// which it is. Values stay raw: a field of an unexpected type must not
// make the whole line unreadable.
type jsonLine struct {
	// journalctl -o json
	Cursor   json.RawMessage `json:"__CURSOR"`
	Realtime json.RawMessage `json:"__REALTIME_TIMESTAMP"`
	Hostname json.RawMessage `json:"_HOSTNAME"`
	PID      json.RawMessage `json:"_PID"`
	Ident    json.RawMessage `json:"SYSLOG_IDENTIFIER"`
	Message  json.RawMessage `json:"MESSAGE"`
	// kubelet --logging-format=json
	Ts             json.RawMessage `json:"ts"`
	Caller         json.RawMessage `json:"caller"`
	Msg            json.RawMessage `json:"msg"`
	V              json.RawMessage `json:"v"`
	Err            json.RawMessage `json:"err"`
	Pods           json.RawMessage `json:"pods"`
	Pod            json.RawMessage `json:"pod"`
	Probe          json.RawMessage `json:"probe"`
	KubeletVersion json.RawMessage `json:"kubeletVersion"`
}

// parseJSON reads raw as a journald JSON entry or a kubelet JSON line.
func (c *Classifier) parseJSON(raw []byte, l *Line) (entry, bool) {
	var j jsonLine
	if err := unmarshalLine(raw, &j); err != nil {
		return entry{}, false
	}
	switch {
	case j.Message != nil && (j.Cursor != nil || j.Realtime != nil):
		l.Format = FormatJournalJSON
		l.Cursor, _ = cleanText(jsonString(j.Cursor), 4096)
		l.Host, _ = cleanText(jsonString(j.Hostname), 1024)
		l.Ident, _ = cleanText(jsonString(j.Ident), 1024)
		l.PID, _ = strconv.Atoi(jsonString(j.PID))
		if us, err := strconv.ParseInt(jsonString(j.Realtime), 10, 64); err == nil {
			l.Time = time.UnixMicro(us).In(c.loc)
		}
		msg, ok := journalMessage(j.Message)
		if !ok {
			l.Text = OmittedMessage
			return entry{message: OmittedMessage, verb: -1}, true
		}
		var stripped bool
		l.Text, stripped = clean(msg, MaxText)
		l.Stripped = l.Stripped || stripped
		e, _ := c.parseInner(l.Text, l.Time, l)
		return e, true
	case j.Msg != nil:
		l.Format = FormatKubeletJSON
		e, t := kubeletEntry(&j)
		l.Time = t.In(c.loc)
		if t.IsZero() {
			l.Time = time.Time{}
		}
		return e, true
	}
	return entry{}, false
}

// journalMessage decodes MESSAGE: a string, an array of byte values (not
// valid UTF-8), or, for a field with several values, an array of those (the
// first is taken). ok is false for null: journalctl omitted it.
func journalMessage(m json.RawMessage) ([]byte, bool) {
	return journalValue(m, true)
}

func journalValue(m json.RawMessage, outer bool) ([]byte, bool) {
	m = bytes.TrimSpace(m)
	if len(m) == 0 || string(m) == "null" {
		return nil, false
	}
	switch m[0] {
	case '"':
		if s, ok := readString(m); ok {
			return []byte(s), true
		}
	case '[':
		var nums []int
		if json.Unmarshal(m, &nums) == nil {
			bs := make([]byte, 0, len(nums))
			for _, n := range nums {
				bs = append(bs, byte(n))
			}
			return bs, true
		}
		var many []json.RawMessage
		if outer && json.Unmarshal(m, &many) == nil && len(many) > 0 {
			return journalValue(many[0], false)
		}
	}
	return m, true // an unexpected type: show it as written
}

// readString decodes m, a JSON string literal and nothing else, as
// encoding/json would (jsonstr.Read is held to it).
func readString(m json.RawMessage) (string, bool) {
	s, rest, ok := jsonstr.Read(m)
	return s, ok && len(rest) == 0
}

// jsonString is a JSON string's value, a number's text, or "".
func jsonString(m json.RawMessage) string {
	if len(m) == 0 {
		return ""
	}
	if m[0] == '"' {
		s, _ := readString(m)
		return s
	}
	if m[0] == '-' || m[0] >= '0' && m[0] <= '9' {
		return string(m)
	}
	return ""
}

// kubeletEntry reads a kubelet JSON line. Its "ts" is a float of
// milliseconds since the epoch (older releases wrote seconds); it has no
// level key: info lines carry "v", error lines "err" and no "v".
func kubeletEntry(j *jsonLine) (entry, time.Time) {
	e := entry{verb: -1, severity: "info"}
	e.caller, _ = cleanText(jsonString(j.Caller), 1024)
	e.message, _ = cleanText(jsonString(j.Msg), MaxText)
	if n, err := strconv.Atoi(string(j.V)); err == nil {
		e.verb = n
	} else if j.Err != nil || j.V == nil {
		e.severity = "error"
	}
	e.probe = jsonString(j.Probe)
	e.pods = jsonPods(j.Pods, jsonPods(j.Pod, nil))
	if j.KubeletVersion != nil {
		v := jsonString(j.KubeletVersion)
		if v == "" {
			var info struct {
				GitVersion string `json:"gitVersion"`
			}
			_ = json.Unmarshal(j.KubeletVersion, &info)
			v = info.GitVersion
		}
		e.version = version(v)
	}
	var t time.Time
	if ts, err := strconv.ParseFloat(string(j.Ts), 64); err == nil && ts > 0 && ts < 2.5e14 { // 2.5e14 ms: the year 9892
		ms := ts
		if ts < 1e11 { // seconds: 1e11 s is the year 5138, 1e11 ms 1973
			ms = ts * 1000
		}
		t = time.UnixMicro(int64(ms * 1000))
	}
	return e, t
}

// jsonPods appends to pods those m names: an object {"name","namespace"},
// a "namespace/name" string, or an array of either.
func jsonPods(m json.RawMessage, pods []string) []string {
	m = bytes.TrimSpace(m)
	if len(m) == 0 {
		return pods
	}
	switch m[0] {
	case '[':
		var many []json.RawMessage
		if json.Unmarshal(m, &many) == nil {
			for _, p := range many {
				if len(bytes.TrimSpace(p)) > 0 && bytes.TrimSpace(p)[0] != '[' {
					pods = jsonPods(p, pods)
				}
			}
		}
	case '{':
		var ref struct{ Name, Namespace string }
		if json.Unmarshal(m, &ref) == nil && ref.Name != "" {
			p := ref.Name
			if ref.Namespace != "" {
				p = ref.Namespace + "/" + ref.Name
			}
			p, _ = cleanText(p, 1024)
			pods = append(pods, p)
		}
	case '"':
		if s, _ := cleanText(jsonString(m), 1024); s != "" {
			pods = append(pods, s)
		}
	}
	return pods
}
