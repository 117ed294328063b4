package classify

import (
	"bytes"
	"encoding/json"

	"github.com/syncloop/syncloop/server/jsonstr"
)

// A relay's journald entry (journalctl -o json) is ~1.2 KB of which the
// classifier needs six fields; encoding/json validated and decoded all of
// it twice over, ~20 µs an entry, the largest cost of ingest for real
// relays. unmarshalLine reads the top-level object by hand and falls back
// to encoding/json for anything it does not take on itself; FuzzJSONLine
// holds the two to the same result.

// jsonLineFields are jsonLine's keys; the struct tags say the same.
var jsonLineFields = []string{"__CURSOR", "__REALTIME_TIMESTAMP", "_HOSTNAME", "_PID", "SYSLOG_IDENTIFIER", "MESSAGE",
	"ts", "caller", "msg", "v", "err", "pods", "pod", "probe", "kubeletVersion"}

// unmarshalLine is json.Unmarshal(raw, j).
func unmarshalLine(raw []byte, j *jsonLine) error {
	if scanLine(raw, j) {
		return nil
	}
	*j = jsonLine{}
	return json.Unmarshal(raw, j)
}

// field returns the field of j a key fills, nil for a key encoding/json
// would ignore; ok is false for one it might match by case folding.
func (j *jsonLine) field(key string) (f *json.RawMessage, ok bool) {
	switch key {
	case "__CURSOR":
		return &j.Cursor, true
	case "__REALTIME_TIMESTAMP":
		return &j.Realtime, true
	case "_HOSTNAME":
		return &j.Hostname, true
	case "_PID":
		return &j.PID, true
	case "SYSLOG_IDENTIFIER":
		return &j.Ident, true
	case "MESSAGE":
		return &j.Message, true
	case "ts":
		return &j.Ts, true
	case "caller":
		return &j.Caller, true
	case "msg":
		return &j.Msg, true
	case "v":
		return &j.V, true
	case "err":
		return &j.Err, true
	case "pods":
		return &j.Pods, true
	case "pod":
		return &j.Pod, true
	case "probe":
		return &j.Probe, true
	case "kubeletVersion":
		return &j.KubeletVersion, true
	}
	for i := range len(key) {
		if key[i] >= 0x80 {
			return nil, false // Unicode case folding: leave it to encoding/json
		}
	}
	for _, name := range jsonLineFields {
		if len(name) == len(key) && bytes.EqualFold([]byte(name), []byte(key)) {
			return nil, false
		}
	}
	return nil, true
}

// scanLine fills j from a JSON object, validating all of it, and reports
// whether it could; it leaves every other case to encoding/json.
func scanLine(raw []byte, j *jsonLine) bool {
	p := jsonstr.SkipSpace(raw)
	if len(p) == 0 || p[0] != '{' {
		return false
	}
	p = jsonstr.SkipSpace(p[1:])
	if len(p) > 0 && p[0] == '}' {
		return len(jsonstr.SkipSpace(p[1:])) == 0
	}
	for {
		key, rest, ok := jsonstr.Read(p)
		if !ok {
			return false
		}
		p = jsonstr.SkipSpace(rest)
		if len(p) == 0 || p[0] != ':' {
			return false
		}
		p = jsonstr.SkipSpace(p[1:])
		end, ok := skipValue(p, 0)
		if !ok {
			return false
		}
		f, ok := j.field(key)
		if !ok {
			return false
		}
		if f != nil {
			*f = append((*f)[:0], p[:len(p)-len(end)]...)
		}
		p = jsonstr.SkipSpace(end)
		if len(p) == 0 {
			return false
		}
		if p[0] == '}' {
			return len(jsonstr.SkipSpace(p[1:])) == 0
		}
		if p[0] != ',' {
			return false
		}
		p = jsonstr.SkipSpace(p[1:])
	}
}

// skipValue validates the JSON value at the start of p and returns what
// follows it.
func skipValue(p []byte, depth int) ([]byte, bool) {
	if len(p) == 0 || depth > 1000 {
		return nil, false
	}
	switch c := p[0]; {
	case c == '"':
		return jsonstr.Skip(p)
	case c == '{':
		p = jsonstr.SkipSpace(p[1:])
		if len(p) > 0 && p[0] == '}' {
			return p[1:], true
		}
		for {
			rest, ok := jsonstr.Skip(p)
			if !ok {
				return nil, false
			}
			p = jsonstr.SkipSpace(rest)
			if len(p) == 0 || p[0] != ':' {
				return nil, false
			}
			if p, ok = skipValue(jsonstr.SkipSpace(p[1:]), depth+1); !ok {
				return nil, false
			}
			p = jsonstr.SkipSpace(p)
			if len(p) == 0 {
				return nil, false
			}
			if p[0] == '}' {
				return p[1:], true
			}
			if p[0] != ',' {
				return nil, false
			}
			p = jsonstr.SkipSpace(p[1:])
		}
	case c == '[':
		p = jsonstr.SkipSpace(p[1:])
		if len(p) > 0 && p[0] == ']' {
			return p[1:], true
		}
		for {
			var ok bool
			if p, ok = skipValue(p, depth+1); !ok {
				return nil, false
			}
			p = jsonstr.SkipSpace(p)
			if len(p) == 0 {
				return nil, false
			}
			if p[0] == ']' {
				return p[1:], true
			}
			if p[0] != ',' {
				return nil, false
			}
			p = jsonstr.SkipSpace(p[1:])
		}
	case c == 't':
		return skipLiteral(p, "true")
	case c == 'f':
		return skipLiteral(p, "false")
	case c == 'n':
		return skipLiteral(p, "null")
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(p)
	}
	return nil, false
}

func skipLiteral(p []byte, lit string) ([]byte, bool) {
	if !bytes.HasPrefix(p, []byte(lit)) {
		return nil, false
	}
	return p[len(lit):], true
}

// skipNumber validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func skipNumber(p []byte) ([]byte, bool) {
	i := 0
	if i < len(p) && p[i] == '-' {
		i++
	}
	digits := func() bool {
		start := i
		for i < len(p) && '0' <= p[i] && p[i] <= '9' {
			i++
		}
		return i > start
	}
	switch {
	case i < len(p) && p[i] == '0':
		i++
	case !digits():
		return nil, false
	}
	if i < len(p) && p[i] == '.' {
		i++
		if !digits() {
			return nil, false
		}
	}
	if i < len(p) && (p[i] == 'e' || p[i] == 'E') {
		i++
		if i < len(p) && (p[i] == '+' || p[i] == '-') {
			i++
		}
		if !digits() {
			return nil, false
		}
	}
	return p[i:], true
}
