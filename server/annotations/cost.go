package annotations

// What a note may cost to render. goldmark is linear in ordinary notes
// (8 KB in about a millisecond) but superlinear in some shapes a reader
// can type: unclosed links ("[a](" 2,000 times in 8 KB takes 50-150 ms,
// "![a](" more), deep nesting of quotes and lists ("> > > …", "- > - > …").
// A note of such a shape is shown as its text, escaped, not as Markdown:
// nothing an ordinary note needs is near the bounds below, and the render
// slots every client shares turn over in a millisecond or two.

import (
	"html"
	"strings"
)

const (
	// maxNoteBrackets bounds the '[' of a note rendered as Markdown: a note
	// with a link a line has a few dozen.
	maxNoteBrackets = 256
	// maxNoteNesting bounds the quotes and list items nested at the start of
	// one line of a note rendered as Markdown.
	maxNoteNesting = 8
	// maxNoteLines bounds the quotes and list items nested at the starts of
	// all the lines of a note together.
	maxNoteLines = 512
	// maxNoteEmphasis bounds the '*', '_' and '~' of a note rendered as
	// Markdown; maxNoteTags its '<' (raw HTML is left out, at a cost);
	// maxNoteAutolinks its bare addresses ("www.", "://").
	maxNoteEmphasis  = 1024
	maxNoteTags      = 256
	maxNoteAutolinks = 128
)

// costly reports whether text's shape could make goldmark slow (see
// above), so that it is shown as text instead.
func costly(text string) bool {
	if strings.Count(text, "[") > maxNoteBrackets {
		return true
	}
	emph, tags := 0, 0
	for i := 0; i < len(text); i++ {
		switch text[i] {
		case '*', '_', '~':
			emph++
		case '<':
			tags++
		}
	}
	if emph > maxNoteEmphasis || tags > maxNoteTags || strings.Count(text, "www.")+strings.Count(text, "://") > maxNoteAutolinks {
		return true
	}
	all := 0
	for line := range strings.SplitSeq(text, "\n") {
		n := nesting(line)
		if all += n; n > maxNoteNesting || all > maxNoteLines {
			return true
		}
	}
	return false
}

// nesting counts the block quotes and list items that open at the start of
// line: "> - 1. > x" is 4.
func nesting(line string) int {
	n := 0
	for {
		line = strings.TrimLeft(line, " \t")
		switch {
		case strings.HasPrefix(line, ">"):
			line = line[1:]
		case len(line) >= 2 && strings.ContainsRune("-*+", rune(line[0])) && (line[1] == ' ' || line[1] == '\t'):
			line = line[2:]
		default:
			i := 0
			for i < len(line) && i < 9 && line[i] >= '0' && line[i] <= '9' {
				i++
			}
			if i == 0 || i+1 >= len(line) || (line[i] != '.' && line[i] != ')') || (line[i+1] != ' ' && line[i+1] != '\t') {
				return n
			}
			line = line[i+2:]
		}
		n++
	}
}

// plainHTML is text shown as it was typed, escaped: what a costly note
// renders as.
func plainHTML(text string) string {
	return `<pre class="note-plain">` + html.EscapeString(text) + "</pre>\n"
}
