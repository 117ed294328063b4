// Package jsonstr writes and reads JSON strings exactly as encoding/json
// does (without its HTML escaping), for the live path's hand-written
// messages: a relayed line is decoded once and encoded twice (to the feed's
// file, to browsers), and encoding/json's reflection was most of the
// server's cost per line. The tests hold both functions to encoding/json's
// output, byte for byte, on fuzzed input.
package jsonstr

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

const hex = "0123456789abcdef"

// unescape[c] is the byte the escape \c stands for (0: not a one-byte escape).
var unescape = [256]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t'}

// safe[b] is true for the ASCII bytes that need no escaping.
var safe = func() (t [utf8.RuneSelf]bool) {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// Append appends s as a quoted JSON string to dst, escaped as
// encoding/json.Encoder with SetEscapeHTML(false) escapes it: `"` and `\`,
// control characters (\b \f \n \r \t by name, others as \u00XX), U+2028
// and U+2029 as \u2028 and \u2029, and invalid UTF-8 as \ufffd.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Read reads the JSON string literal at the start of data and returns its
// value (as encoding/json would decode it into a string) and the bytes
// after it. ok is false when data does not start with a valid string
// literal: no opening quote, no closing one, a raw control character, or an
// unknown escape.
func Read(data []byte) (s string, rest []byte, ok bool) {
	if len(data) == 0 || data[0] != '"' {
		return "", data, false
	}
	// Find the closing quote; the common case has nothing escaped and
	// nothing outside ASCII, and is the bytes themselves.
	plain := true
	i := 1
	for ; i < len(data); i++ {
		b := data[i]
		if b == '"' {
			break
		}
		if b < 0x20 {
			return "", data, false
		}
		if b == '\\' {
			plain = false
			i++ // the escaped byte cannot close the string
		} else if b >= utf8.RuneSelf {
			plain = false
		}
	}
	if i >= len(data) {
		return "", data, false
	}
	if plain {
		return string(data[1:i]), data[i+1:], true
	}
	if s, ok = unquote(data[1:i]); !ok {
		return "", data, false
	}
	return s, data[i+1:], true
}

// unquote decodes the inside of a string literal, escapes and all.
func unquote(lit []byte) (string, bool) {
	var buf strings.Builder // one allocation, and no copy for the string
	buf.Grow(len(lit))
	for i := 0; i < len(lit); {
		b := lit[i]
		switch {
		case b < 0x20:
			return "", false
		case b == '\\':
			if i+1 >= len(lit) {
				return "", false
			}
			switch e := lit[i+1]; {
			case unescape[e] != 0:
				buf.WriteByte(unescape[e])
				i += 2
			case e == 'u':
				r, ok := hex4(lit[i+2:])
				if !ok {
					return "", false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					// A pair only when a valid second half follows; else the
					// first half alone is U+FFFD and the escape after it is
					// read on its own, as encoding/json does.
					if i+1 < len(lit) && lit[i] == '\\' && lit[i+1] == 'u' {
						if r2, ok := hex4(lit[i+2:]); ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								buf.WriteRune(dec)
								i += 6
								continue
							}
						}
					}
					r = utf8.RuneError
				}
				buf.WriteRune(r)
			default:
				return "", false
			}
		case b < utf8.RuneSelf:
			j := i + 1 // a run of plain ASCII, copied at once
			for j < len(lit) && lit[j] >= 0x20 && lit[j] < utf8.RuneSelf && lit[j] != '\\' {
				j++
			}
			buf.Write(lit[i:j])
			i = j
		default:
			r, size := utf8.DecodeRune(lit[i:])
			if r == utf8.RuneError && size == 1 {
				buf.WriteRune(utf8.RuneError)
			} else {
				buf.Write(lit[i : i+size])
			}
			i += size
		}
	}
	return buf.String(), true
}

// SkipSpace returns p after its leading JSON whitespace.
func SkipSpace(p []byte) []byte {
	for len(p) > 0 && (p[0] == ' ' || p[0] == '\t' || p[0] == '\n' || p[0] == '\r') {
		p = p[1:]
	}
	return p
}

// Skip validates the string literal at the start of p, without decoding
// it, and returns what follows it: raw control characters and unknown or
// short escapes are refused; other bytes, valid UTF-8 or not, pass, as
// they do for encoding/json.
func Skip(p []byte) ([]byte, bool) {
	if len(p) == 0 || p[0] != '"' {
		return nil, false
	}
	for i := 1; i < len(p); i++ {
		switch c := p[i]; {
		case c == '"':
			return p[i+1:], true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if i+1 >= len(p) {
				return nil, false
			}
			switch p[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if _, ok := hex4(p[i+2:]); !ok {
					return nil, false
				}
				i += 5
			default:
				return nil, false
			}
		}
	}
	return nil, false
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
