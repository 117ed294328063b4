package classify

// sanitize.go makes untrusted log text safe to show: valid UTF-8, no ANSI
// escape sequences, no control characters but tab, bidirectional controls
// shown as escapes rather than obeyed, and a bounded length with a visible
// marker where it was cut.

import (
	"encoding/binary"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxText is the longest text (in bytes) a Line carries in Raw, Text or
// Message; longer text is cut and ends with CutMarker(n).
const MaxText = 64 << 10

// maxParse is the longest JSON line that is parsed at all; a longer one is
// kept as a raw line. Text formats are parsed from their first MaxText bytes.
const maxParse = 1 << 20

// CutMarker is what ends a text cut at MaxText: n bytes were left off.
func CutMarker(n int) string { return "… [cut: " + strconv.Itoa(n) + " bytes]" }

// clean returns b as display text: at most limit bytes of it (cut at a rune
// boundary, with CutMarker), invalid UTF-8 replaced by U+FFFD, ANSI escape
// sequences and control characters other than tab removed. changed reports
// whether anything but the cut was altered.
func clean(b []byte, limit int) (s string, changed bool) {
	end := cutAt(b, limit)
	if end == len(b) && plainASCII(b) {
		return string(b), false
	}
	return cleanString(string(b[:end]), limit, len(b)-end)
}

// plainASCII reports whether b is printable ASCII (tab aside), eight bytes
// at a time: the common case of a log line.
func plainASCII(b []byte) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	// A byte < 0x20, == 0x7f or >= 0x80 sets its high bit in bad(x).
	bad := func(x uint64) uint64 {
		del := x ^ 0x7f*ones
		return ((x-0x20*ones)&^x | (del-ones)&^del | x) & highs
	}
	i := 0
	for ; i+16 <= len(b); i += 16 {
		if bad(binary.LittleEndian.Uint64(b[i:i+8]))|bad(binary.LittleEndian.Uint64(b[i+8:i+16])) != 0 {
			break
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			return false
		}
	}
	return true
}

// cleanText is clean for a string.
func cleanText(s string, limit int) (string, bool) {
	end := cutAt(s, limit)
	return cleanString(s[:end], limit, len(s)-end)
}

// cutAt is the length to keep of b: all of it, or limit backed up to the
// start of a rune so the cut does not make one invalid.
func cutAt[T []byte | string](b T, limit int) int {
	if len(b) <= limit {
		return len(b)
	}
	end := limit
	for i := 0; i < utf8.UTFMax && end > 0 && !utf8.RuneStart(b[end]); i++ {
		end--
	}
	return end
}

func cleanString(s string, limit, cut int) (string, bool) {
	changed := false
	if !plain(s) {
		s, changed = scrub(s), true
		// U+FFFD for one invalid byte takes three: cut again if need be.
		if end := cutAt(s, limit); end < len(s) {
			cut += len(s) - end
			s = s[:end]
		}
	}
	if cut > 0 {
		s += CutMarker(cut)
	}
	return s, changed
}

// plain reports whether s is valid UTF-8 without control characters (tab
// aside): the common case, checked without allocating, eight bytes at a time
// while they are printable ASCII.
func plain(s string) bool {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		// A byte < 0x20, == 0x7f or >= 0x80 sets its high bit in bad.
		lt20 := (x - 0x20*ones) &^ x
		del := x ^ 0x7f*ones
		del = (del - ones) &^ del
		if (lt20|del|x)&highs != 0 {
			break
		}
	}
	for ; i < len(s); i++ {
		c := s[i]
		if c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
		if c >= 0x80 {
			return plainUTF8(s[i:])
		}
	}
	return true
}

func plainUTF8(s string) bool {
	for i, r := range s {
		switch {
		case r < 0x20 && r != '\t' || r == 0x7f || isC1(r) || IsBidiControl(r):
			return false
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return false
			}
		}
	}
	return true
}

// IsBidiControl reports whether r is a bidirectional formatting character:
// the embeddings and overrides (U+202A–U+202E), the isolates
// (U+2066–U+2069) and the marks (U+200E, U+200F, U+061C). In a pod name
// "invoice-\u202efdp.exe" shows as "invoice-exe.pdf": log text shows
// them as the escape, never applies them.
func IsBidiControl(r rune) bool {
	return r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 || r == 0x200e || r == 0x200f || r == 0x061c
}

// BidiEscape is how a bidirectional control shows in log text: \u202e.
func BidiEscape(r rune) string { return `\u` + strconv.FormatInt(int64(0x10000+r), 16)[1:] }

// isC1 reports whether r is a C1 control character (U+0080–U+009F), which
// some terminals obey as escape sequences (U+009B is a CSI).
func isC1(r rune) bool { return r >= 0x80 && r <= 0x9f }

// scrub is the slow path of clean.
func scrub(s string) string {
	var sb strings.Builder
	sb.Grow(len(s))
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == 0x1b:
			i = skipEscape(s, i)
			continue
		case c < 0x20 && c != '\t' || c == 0x7f:
			i++
			continue
		case c < 0x80:
			sb.WriteByte(c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			sb.WriteRune(utf8.RuneError)
		case r == 0x9b: // C1 CSI: skip it like ESC [
			i = skipCSI(s, i+n)
			continue
		case isC1(r):
		case IsBidiControl(r):
			sb.WriteString(BidiEscape(r))
		default:
			sb.WriteRune(r)
		}
		i += n
	}
	return sb.String()
}

// skipEscape returns the index after the escape sequence that starts at
// s[i] == ESC: a CSI (ESC [ … final), an OSC or other string command
// (ESC ] … BEL or ESC \), or a two-byte escape.
func skipEscape(s string, i int) int {
	i++ // ESC
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		for i++; i < len(s); i++ {
			if s[i] == 0x07 {
				return i + 1
			}
			if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\' {
				return i + 2
			}
		}
		return i
	}
	return i + 1
}

// skipCSI skips a CSI's parameter and intermediate bytes and its final byte.
func skipCSI(s string, i int) int {
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}
