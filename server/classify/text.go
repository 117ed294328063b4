package classify

import (
	"bytes"

	"github.com/syncloop/syncloop/extractor"
)

// caseColors are ANSI SGR colours by case colour slot (extractor.CaseHue),
// stable across runs: blue, magenta, cyan, red, green, bright green, bright
// blue, yellow.
var caseColors = [...]string{"34", "35", "36", "31", "32", "92", "94", "33"}

// caseColor is the colour of a case key, "" for none.
func caseColor(key string) string {
	if i := extractor.CaseHue(key); i >= 0 && i < len(caseColors) {
		return caseColors[i]
	}
	return ""
}

// textWidth is the width the case is padded to: the longest key's.
const textWidth = len(extractor.KeyHousekeeping)

// AppendText appends l as syncloop classify --format text writes it:
// "[case        ] text\n", the case padded to the longest key and the text
// the kubelet's own line (Display); a journald JSON entry's host and time
// lead it. With color, ANSI colours: the case's, or the text dimmed when
// there is none. It is written by hand, without fmt, because the command
// writes it for every line it reads.
func AppendText(b []byte, l *Line, color bool) []byte {
	b = append(b, '[')
	switch {
	case color && l.Case != "":
		c := caseColor(l.Case)
		if c == "" {
			c = "1"
		}
		b = append(b, "\x1b["...)
		b = append(b, c...)
		b = append(b, 'm')
		b = appendPadded(b, l.Case)
		b = append(b, "\x1b[0m] "...)
		b = appendDisplay(b, l)
	case color:
		b = appendPadded(b, "")
		b = append(b, "] \x1b[2m"...)
		b = appendDisplay(b, l)
		b = append(b, "\x1b[0m"...)
	default:
		b = appendPadded(b, l.Case)
		b = append(b, "] "...)
		b = appendDisplay(b, l)
	}
	return append(b, '\n')
}

// appendPadded appends s left-aligned in textWidth columns (bytes: case
// keys are ASCII), as fmt's %-*s does.
func appendPadded(b []byte, s string) []byte {
	b = append(b, s...)
	for range textWidth - len(s) {
		b = append(b, ' ')
	}
	return b
}

// appendDisplay appends the text of l's line: l.Display(), led for a
// journald JSON entry by its time and host, "Jan 02 15:04:05.000000 host: ",
// either left out when unknown.
func appendDisplay(b []byte, l *Line) []byte {
	if l.Format != FormatJournalJSON {
		return append(b, l.Display()...)
	}
	start := len(b)
	if !l.Time.IsZero() {
		b = l.Time.AppendFormat(b, "Jan 02 15:04:05.000000")
		b = append(b, ' ')
	}
	b = append(b, l.Host...)
	// As strings.TrimSpace did of the prefix: no space at either end.
	b = trimSpaceFrom(b, start)
	b = append(b, ": "...)
	return append(b, l.Display()...)
}

// trimSpaceFrom trims the white space at both ends of b[start:], in place.
func trimSpaceFrom(b []byte, start int) []byte {
	t := bytes.TrimSpace(b[start:])
	return b[:start+copy(b[start:], t)]
}
