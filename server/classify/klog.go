package classify

// klog.go reads klog's text format, by byte scanning (no regexps: this is
// the hot path). A line is
//
//	I1130 01:02:03.123456    1234 kubelet.go:2407] "SyncLoop ADD" source="api" pods=["default/probe-me"]
//
// severity letter, month and day, time, thread (pid), caller, "] ", then
// either a quoted message and key=value pairs (klog.InfoS and contextual
// logging) or the printf-formatted text (klog.Infof).

import (
	"iter"
	"strconv"
	"strings"
	"time"
)

// klogHeader is the prefix of a klog text line.
type klogHeader struct {
	severity string
	month    time.Month
	day      int
	clock    time.Duration // time of day
	pid      int
	caller   string
}

// parseKlog splits s into its header and body; ok is false when s does not
// start with a klog header.
func parseKlog(s string) (h klogHeader, body string, ok bool) {
	// "I1130 01:02:03.123456 " is 22 bytes; then the pid and the caller.
	if len(s) < 26 {
		return h, "", false
	}
	switch s[0] {
	case 'I':
		h.severity = "info"
	case 'W':
		h.severity = "warning"
	case 'E':
		h.severity = "error"
	case 'F':
		h.severity = "fatal"
	default:
		return h, "", false
	}
	if s[5] != ' ' || s[8] != ':' || s[11] != ':' || s[14] != '.' {
		return h, "", false
	}
	mo, day, hh, mm, ss := two(s, 1), two(s, 3), two(s, 6), two(s, 9), two(s, 12)
	us, ok := digits(s[15:21])
	if !ok || mo < 1 || mo > 12 || day < 1 || day > 31 || hh < 0 || hh > 23 || mm < 0 || mm > 59 || ss < 0 || ss > 60 {
		return h, "", false
	}
	h.month, h.day = time.Month(mo), day
	h.clock = time.Duration(hh)*time.Hour + time.Duration(mm)*time.Minute + time.Duration(ss)*time.Second + time.Duration(us)*time.Microsecond
	i := 21
	for i < len(s) && s[i] == ' ' {
		i++
	}
	j := i
	for j < len(s) && s[j] >= '0' && s[j] <= '9' {
		j++
	}
	if j == i || j >= len(s) || s[j] != ' ' || i == 21 {
		return h, "", false
	}
	if j-i > 9 {
		return h, "", false
	}
	h.pid, _ = digits(s[i:j])
	j++
	k := strings.IndexByte(s[j:], ']')
	if k <= 0 {
		return h, "", false
	}
	h.caller = s[j : j+k]
	if strings.IndexByte(h.caller, ' ') >= 0 {
		return h, "", false
	}
	body = s[j+k+1:]
	if len(body) > 0 {
		if body[0] != ' ' {
			return h, "", false
		}
		body = body[1:]
	}
	return h, body, true
}

// two parses the two ASCII digits at s[i:i+2]; -1 when they are not.
func two(s string, i int) int {
	a, b := s[i]-'0', s[i+1]-'0'
	if a > 9 || b > 9 {
		return -1
	}
	return int(a)*10 + int(b)
}

// digits parses a short run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// splitCaller splits "kubelet/kubelet.go:2407" into its base name
// "kubelet.go" and line 2407.
func splitCaller(caller string) (base string, line int, ok bool) {
	i := strings.LastIndexByte(caller, ':')
	if i <= 0 {
		return "", 0, false
	}
	line, ok = digits(caller[i+1:])
	if !ok || i+1 == len(caller) {
		return "", 0, false
	}
	base = caller[:i]
	for j := len(base) - 1; j >= 0; j-- {
		if base[j] == '/' || base[j] == '\\' {
			base = base[j+1:]
			break
		}
	}
	return base, line, base != ""
}

// structured splits a structured body into its message and the key=value
// text after it. ok is false for a printf-style body.
func structured(body string) (msg, kvs string, ok bool) {
	if len(body) < 2 || body[0] != '"' {
		return "", "", false
	}
	end, esc := quotedEnd(body)
	if end < 0 {
		return "", "", false
	}
	rest := body[end:]
	if rest != "" && rest[0] != ' ' {
		return "", "", false
	}
	if !esc {
		return body[1 : end-1], rest, true
	}
	m, err := strconv.Unquote(body[:end])
	if err != nil {
		return "", "", false
	}
	m, _ = cleanText(m, MaxText) // escapes may have spelled control characters
	return m, rest, true
}

// quotedEnd returns the index after the closing quote of the Go string
// literal s starts with (-1 when unterminated) and whether it has escapes.
func quotedEnd(s string) (int, bool) {
	esc := false
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			esc = true
			i++
		case '"':
			return i + 1, esc
		}
	}
	return -1, esc
}

// kvPairs yields the name and the value text of each pair of klog
// key=value text (" source=\"api\" pods=[…]"), values as written: quoted,
// bracketed, braced or bare. Pairs are scanned in order, so a key inside
// another value's quotes is not mistaken for one; words without a value are
// skipped.
func kvPairs(kvs string) iter.Seq2[string, string] {
	return func(yield func(name, value string) bool) {
		i := 0
		for i < len(kvs) {
			for i < len(kvs) && kvs[i] == ' ' {
				i++
			}
			k := i
			for i < len(kvs) && kvs[i] != '=' && kvs[i] != ' ' {
				i++
			}
			if i >= len(kvs) || kvs[i] != '=' {
				continue
			}
			name := kvs[k:i]
			i++
			v := i
			i = valueEnd(kvs, i)
			if !yield(name, kvs[v:i]) {
				return
			}
		}
	}
}

// kvValue returns the text of the value of key in klog key=value text.
func kvValue(kvs, key string) (string, bool) {
	for name, v := range kvPairs(kvs) {
		if name == key {
			return v, true
		}
	}
	return "", false
}

// valueEnd returns the index after the value that starts at s[i].
func valueEnd(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '"':
		if n, _ := quotedEnd(s[i:]); n > 0 {
			return i + n
		}
		return len(s)
	case '[', '{':
		depth := 0
		for j := i; j < len(s); j++ {
			switch s[j] {
			case '"':
				n, _ := quotedEnd(s[j:])
				if n < 0 {
					return len(s)
				}
				j += n - 1
			case '[', '{':
				depth++
			case ']', '}':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(s)
	}
	for i < len(s) && s[i] != ' ' {
		i++
	}
	return i
}

// kvString returns the value of key as a string: unquoted when quoted.
func kvString(kvs, key string) string {
	v, ok := kvValue(kvs, key)
	if !ok {
		return ""
	}
	return unquote(v)
}

func unquote(v string) string {
	if len(v) >= 2 && v[0] == '"' {
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return v[1 : len(v)-1]
	}
	return v
}

// kvPods returns the pods named by pods=[…] and pod=… in key=value text:
// ["default/probe-me"] (klog ≥ 2.80), [default/probe-me other/x] (older
// klog printed []ObjectRef with %v), "default/probe-me" or a bare ref.
// One pass over the pairs, in order.
func kvPods(kvs string) []string {
	var pods []string
	for name, v := range kvPairs(kvs) {
		switch name {
		case "pods":
			pods = appendPodList(pods, v)
		case "pod":
			if p, _ := cleanText(unquote(v), 1024); p != "" && p != "<nil>" {
				pods = append(pods, p)
			}
		}
	}
	return pods
}

// appendPodList appends the elements of a klog list value "[…]".
func appendPodList(pods []string, v string) []string {
	if len(v) < 2 || v[0] != '[' || v[len(v)-1] != ']' {
		return pods
	}
	inner := v[1 : len(v)-1]
	for inner != "" {
		inner = strings.TrimLeft(inner, " ,")
		if inner == "" {
			break
		}
		end := valueEnd(inner, 0)
		if inner[0] != '"' {
			if k := strings.IndexAny(inner, " ,"); k >= 0 {
				end = k
			} else {
				end = len(inner)
			}
		}
		if p, _ := cleanText(unquote(inner[:end]), 1024); p != "" {
			pods = append(pods, p)
		}
		inner = inner[end:]
	}
	return pods
}

// oldPods finds the pods an old printf-style line names as
// "name_namespace(uid)" (format.Pod before structured logging) and returns
// them as "namespace/name".
func oldPods(s string) []string {
	var pods []string
	for i := 0; i < len(s); i++ {
		k := strings.IndexByte(s[i:], '(')
		if k < 0 {
			break
		}
		i += k
		// namespace: a DNS label before '('; then '_'; then the name, a DNS
		// subdomain; then a uid up to ')'.
		j := i
		for j > 0 && isLabel(s[j-1]) {
			j--
		}
		if j == i || j == 0 || s[j-1] != '_' {
			continue
		}
		ns := s[j:i]
		n := j - 1
		for n > 0 && (isLabel(s[n-1]) || s[n-1] == '.') {
			n--
		}
		if n == j-1 {
			continue
		}
		end := strings.IndexByte(s[i:], ')')
		if end < 0 {
			break
		}
		pods = append(pods, ns+"/"+s[n:j-1])
		i += end
	}
	return pods
}

func isLabel(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' }
