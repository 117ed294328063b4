package annotations

// Text a reader typed, written into a hand-in's Markdown as text: names,
// authors, answers, headings, titles and notes become neither markup nor
// HTML in any viewer, and show as typed. Log text (pods, cursors, lines)
// is written the same way: it is untrusted too.

import (
	"strings"
	"unicode"
)

// Inline is s as inert Markdown on one line, whitespace runs made one
// space: as it is when it holds nothing but letters, digits, spaces and
// prose punctuation (a name, a sentence), which no viewer reads as
// markup; otherwise in a code span whose backticks outnumber any run of
// them in s. Inside a code span nothing is emphasis, a link, an autolink,
// an image, HTML or an entity, in CommonMark, GitHub's and goldmark's
// readings alike (GitHub links a bare "www." or "a@b.c" after resolving
// backslash escapes, so escaping alone would not do).
//
// It is the one way a typed string goes into a hand-in's Markdown line
// (fenced is the way for text over many lines): this package's worksheet,
// and the titles others give it (a class's name).
func Inline(s string) string {
	s = strings.Join(strings.Fields(CleanText(s)), " ")
	if s == "" || plain(s) {
		return s
	}
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	ticks := strings.Repeat("`", longest+1)
	if s[0] == '`' || s[len(s)-1] == '`' {
		s = " " + s + " " // one space each side is taken off again
	}
	return ticks + s + ticks
}

// plain reports whether s reads as itself anywhere in a Markdown line:
// letters, digits, spaces, hyphens, , . ; : ! ? ' " ( ) / and typographic
// quotes (none of them markup without a [, <, *, _, `, & or the like), not
// at the start of a list item ("-", "1.", "1)") nor a bare link.
func plain(s string) bool {
	for _, c := range s {
		if !unicode.IsLetter(c) && !unicode.IsDigit(c) && !unicode.IsMark(c) && c != ' ' && !strings.ContainsRune(",.;:!?'\"‘’“”…-()/", c) {
			return false
		}
	}
	if s[0] == '-' {
		return false // a list item, or a rule ("---")
	}
	first, _, _ := strings.Cut(s, " ")
	if i := strings.IndexFunc(first, func(c rune) bool { return !unicode.IsDigit(c) }); i > 0 && (first[i] == '.' || first[i] == ')') {
		return false // "1. Ann" would start an ordered list
	}
	// What GitHub and goldmark link bare (extended autolinks).
	low := strings.ToLower(s)
	for _, link := range []string{"www.", "://", "mailto:", "xmpp:"} {
		if strings.Contains(low, link) {
			return false
		}
	}
	return true
}

// fenced is s, text kept as typed over many lines, in a fenced code
// block longer than any run of backticks in it (so nothing in s can close
// it), with info string info. Inside, nothing is Markdown or HTML.
func fenced(s, info string) string {
	run, longest := 0, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '`' {
			run++
			longest = max(longest, run)
		} else {
			run = 0
		}
	}
	fence := strings.Repeat("`", max(3, longest+1))
	return fence + info + "\n" + strings.TrimSuffix(s, "\n") + "\n" + fence
}
