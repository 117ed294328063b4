package relay

import (
	"encoding/json"
	"errors"
	"strconv"

	"github.com/syncloop/syncloop/server/jsonstr"
)

// The ingest message, relay → server:
// {"lines":[{"id":…,"raw":…,"read":µs?,"age":µs?}, …]} (read and age, when
// the relay knows them: Line). Both
// ends read and write it by hand: at a thousand lines a second per feed,
// encoding/json's reflection was most of what a line cost the server.

// AppendBatch appends the ingest message carrying lines to b.
func AppendBatch(b []byte, lines []Line) []byte {
	b = append(b, `{"lines":[`...)
	for i, l := range lines {
		if i > 0 {
			b = append(b, ',')
		}
		b = jsonstr.Append(append(b, `{"id":`...), l.ID)
		b = jsonstr.Append(append(b, `,"raw":`...), l.Raw)
		if l.Read != 0 {
			b = strconv.AppendInt(append(b, `,"read":`...), l.Read, 10)
		}
		if l.Age != 0 {
			b = strconv.AppendInt(append(b, `,"age":`...), l.Age, 10)
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// ErrBatch says an ingest message is not {"lines":[{"id":…,"raw":…}]}.
var ErrBatch = errors.New(`want {"lines":[{"id":…,"raw":…}]}`)

// DecodeBatch decodes an ingest message and appends its lines to dst. It
// decodes exactly as encoding/json.Unmarshal into a struct{Lines []Line}
// would (to which it falls back for any shape other than the one
// AppendBatch writes, such as other keys, nulls or another key case).
func DecodeBatch(data []byte, dst []Line) ([]Line, error) {
	if out, ok := decodeFast(data, dst); ok {
		return out, nil
	}
	var m struct {
		Lines []Line `json:"lines"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return dst, errors.Join(ErrBatch, err)
	}
	return append(dst, m.Lines...), nil
}

func decodeFast(data []byte, dst []Line) ([]Line, bool) {
	n0 := len(dst)
	fail := func() ([]Line, bool) { return dst[:n0], false }
	p := jsonstr.SkipSpace(data)
	if p = expect(p, '{'); p == nil {
		return fail()
	}
	key, p, ok := jsonstr.Read(jsonstr.SkipSpace(p))
	if !ok || key != "lines" {
		return fail()
	}
	if p = expect(jsonstr.SkipSpace(p), ':'); p == nil {
		return fail()
	}
	if p = expect(jsonstr.SkipSpace(p), '['); p == nil {
		return fail()
	}
	p = jsonstr.SkipSpace(p)
	if len(p) > 0 && p[0] == ']' {
		p = p[1:]
	} else {
		for {
			var l Line
			if l, p, ok = decodeLine(p); !ok {
				return fail()
			}
			dst = append(dst, l)
			p = jsonstr.SkipSpace(p)
			if len(p) == 0 {
				return fail()
			}
			if p[0] == ']' {
				p = p[1:]
				break
			}
			if p[0] != ',' {
				return fail()
			}
			p = jsonstr.SkipSpace(p[1:])
		}
	}
	if p = expect(jsonstr.SkipSpace(p), '}'); p == nil || len(jsonstr.SkipSpace(p)) != 0 {
		return fail()
	}
	return dst, true
}

// decodeLine reads {"id":S,"raw":S,"read":N,"age":N} (any order, any
// absent).
func decodeLine(p []byte) (Line, []byte, bool) {
	var l Line
	if p = expect(p, '{'); p == nil {
		return l, nil, false
	}
	p = jsonstr.SkipSpace(p)
	if len(p) > 0 && p[0] == '}' {
		return l, p[1:], true
	}
	for {
		key, rest, ok := jsonstr.Read(p)
		if !ok || (key != "id" && key != "raw" && key != "read" && key != "age") {
			return l, nil, false
		}
		if p = expect(jsonstr.SkipSpace(rest), ':'); p == nil {
			return l, nil, false
		}
		p = jsonstr.SkipSpace(p)
		switch key {
		case "id", "raw":
			var val string
			if val, rest, ok = jsonstr.Read(p); !ok {
				return l, nil, false
			}
			if key == "id" {
				l.ID = val
			} else {
				l.Raw = val
			}
		default:
			var n int64
			if n, rest, ok = readInt(p); !ok {
				return l, nil, false
			}
			if key == "read" {
				l.Read = n
			} else {
				l.Age = n
			}
		}
		p = jsonstr.SkipSpace(rest)
		if len(p) == 0 {
			return l, nil, false
		}
		if p[0] == '}' {
			return l, p[1:], true
		}
		if p[0] != ',' {
			return l, nil, false
		}
		p = jsonstr.SkipSpace(p[1:])
	}
}

// readInt reads a JSON integer that fits an int64, written as
// encoding/json writes one (no leading zero, fraction or exponent): any
// other number is left to encoding/json.
func readInt(p []byte) (int64, []byte, bool) {
	i := 0
	if i < len(p) && p[i] == '-' {
		i++
	}
	start := i
	for i < len(p) && p[i] >= '0' && p[i] <= '9' {
		i++
	}
	digits := i - start
	if digits == 0 || digits > 18 || (digits > 1 && p[start] == '0') {
		return 0, nil, false
	}
	if i < len(p) && (p[i] == '.' || p[i] == 'e' || p[i] == 'E') {
		return 0, nil, false
	}
	n, err := strconv.ParseInt(string(p[:i]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return n, p[i:], true
}

// expect returns p after its first byte when that is c, else nil.
func expect(p []byte, c byte) []byte {
	if len(p) == 0 || p[0] != c {
		return nil
	}
	return p[1:]
}
