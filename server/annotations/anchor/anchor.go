// Package anchor ties a reader's line comment to the code it quotes, not to
// line numbers, so that it can be found again at another tag. A Quote is a
// text-quote selector (the exact lines, with a few lines of context either
// side, and the case they lie in); Find looks for it in another tag's
// Reading and says what became of it: the same lines, moved, changed, or not
// at this tag. It never guesses silently: a changed line is reported as
// changed, with the text it has now, and an ambiguous one as an orphan.
//
// It knows the Reading and nothing of HTTP or storage.
package anchor

import (
	"errors"
	"fmt"
	"strings"
	"unicode"

	"github.com/syncloop/syncloop/extractor"
)

// Status is what became of a quote at a tag.
type Status string

const (
	Same    Status = "same"    // the same text on the same lines
	Moved   Status = "moved"   // the same text, on other lines
	Changed Status = "changed" // the text changed; Start..End is where it went, Text what it says now
	Orphan  Status = "orphan"  // not at this tag
)

// context is how many lines of prefix and suffix a quote keeps.
const context = 2

// Quote is a text-quote selector for whole lines of the function (or a
// helper it calls). Tag, Start and End say where it was written; Find does
// not trust them beyond breaking ties.
type Quote struct {
	Case   string `json:"case,omitempty"` // key of the case the lines lie in; "" outside any case
	Exact  string `json:"exact"`          // the lines, joined by "\n", as in the source
	Prefix string `json:"prefix,omitempty"`
	Suffix string `json:"suffix,omitempty"`
	Tag    string `json:"tag"`
	Start  int    `json:"start"`
	End    int    `json:"end"`
}

// Result is where a quote is at a tag.
type Result struct {
	Status Status `json:"status"`
	Start  int    `json:"start,omitempty"`
	End    int    `json:"end,omitempty"`
	Case   string `json:"case,omitempty"` // the case the lines lie in at this tag
	Text   string `json:"text,omitempty"` // the lines at Start..End now, when Changed
}

// Limits on what a quote may hold, so a stored comment stays small.
const (
	MaxLines = 40
	MaxBytes = 4 << 10
)

// ErrNoLines is returned by New for lines that are not shown on the page.
var ErrNoLines = errors.New("those lines are not in the function or its helpers")

// block is a run of consecutive upstream lines shown on the page.
type block struct {
	first int // line number of lines[0]
	lines []string
}

func blocks(r *extractor.Reading) []block {
	f := &r.Function
	bs := []block{{f.DocStart, splitLines(f.Text)}}
	for _, h := range f.Helpers {
		bs = append(bs, block{h.DocStart, splitLines(h.Text)})
	}
	return bs
}

func splitLines(s string) []string {
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// caseAt is the key of the case whose lines hold n, "" when none.
func caseAt(r *extractor.Reading, n int) string {
	for _, c := range r.Function.Cases {
		if c.Start <= n && n <= c.End {
			return c.Key
		}
	}
	return ""
}

// New quotes lines start..end of r.
func New(r *extractor.Reading, start, end int) (Quote, error) {
	if end < start {
		start, end = end, start
	}
	if end-start+1 > MaxLines {
		return Quote{}, fmt.Errorf("a comment covers at most %d lines", MaxLines)
	}
	for _, b := range blocks(r) {
		i, j := start-b.first, end-b.first
		if i < 0 || j >= len(b.lines) {
			continue
		}
		q := Quote{
			Case:   caseAt(r, start),
			Exact:  strings.Join(b.lines[i:j+1], "\n"),
			Prefix: strings.Join(b.lines[max(0, i-context):i], "\n"),
			Suffix: strings.Join(b.lines[j+1:min(len(b.lines), j+1+context)], "\n"),
			Tag:    r.Tag, Start: start, End: end,
		}
		if len(q.Exact)+len(q.Prefix)+len(q.Suffix) > MaxBytes {
			return Quote{}, fmt.Errorf("a comment quotes at most %d bytes of code", MaxBytes)
		}
		return q, nil
	}
	return Quote{}, ErrNoLines
}

// Valid checks a quote that came from a client.
func (q Quote) Valid() error {
	n := strings.Count(q.Exact, "\n") + 1
	switch {
	case strings.TrimSpace(q.Exact) == "":
		return errors.New("a comment quotes at least one line of code")
	case n > MaxLines:
		return fmt.Errorf("a comment covers at most %d lines", MaxLines)
	case len(q.Exact)+len(q.Prefix)+len(q.Suffix) > MaxBytes:
		return fmt.Errorf("a comment quotes at most %d bytes of code", MaxBytes)
	case q.Start <= 0 || q.End < q.Start || q.End-q.Start+1 != n:
		return errors.New("the quote's lines do not match its line numbers")
	}
	return nil
}

// norm is a line with its indentation dropped and runs of spaces made one:
// gofmt moves whitespace without changing what a line says.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

func normLines(s string) []string {
	if s == "" {
		return nil
	}
	ls := splitLines(s)
	for i := range ls {
		ls[i] = norm(ls[i])
	}
	return ls
}

// candidate is one place a quote could be at a tag.
type candidate struct {
	b     block
	i     int // index of the first line in b
	score float64
}

// Find says where q is at r's tag.
//
// First the exact lines (whitespace aside) are looked for; when they occur
// more than once, the prefix and suffix choose, then the case, then
// nearness to the old line numbers. When they do not occur, the lines of
// the same case (all lines when the quote was outside any case) are scored
// by likeness of tokens, with the context weighing in; the best window is
// reported as Changed only when it is clearly alike and clearly better than
// the runner-up, else the quote is an Orphan.
func Find(r *extractor.Reading, q Quote) Result {
	want := normLines(q.Exact)
	if len(want) == 0 {
		return Result{Status: Orphan}
	}
	pre, suf := normLines(q.Prefix), normLines(q.Suffix)
	bs := blocks(r)

	var exact []candidate
	for _, b := range bs {
		for i := 0; i+len(want) <= len(b.lines); i++ {
			if equalAt(b.lines, i, want) {
				exact = append(exact, candidate{b: b, i: i})
			}
		}
	}
	if len(exact) > 0 {
		for k := range exact {
			c := &exact[k]
			c.score = contextScore(c.b, c.i, len(want), pre, suf)
			if q.Case != "" && caseAt(r, c.b.first+c.i) == q.Case {
				c.score += 0.5
			}
		}
		best := pick(exact, q.Start)
		start := best.b.first + best.i
		res := Result{Status: Moved, Start: start, End: start + len(want) - 1, Case: caseAt(r, start)}
		if start == q.Start && res.End == q.End {
			res.Status = Same
		}
		return res
	}

	// Changed, or gone: score windows of the same length where the quote's
	// case is now (or everywhere when it had none).
	var cands []candidate
	for _, b := range bs {
		for i := 0; i+len(want) <= len(b.lines); i++ {
			n := b.first + i
			if q.Case != "" && (caseAt(r, n) != q.Case || caseAt(r, n+len(want)-1) != q.Case) {
				continue
			}
			s := 0.0
			for k, w := range want {
				s += likeness(w, norm(b.lines[i+k]))
			}
			s /= float64(len(want))
			if s < minLikeness {
				continue
			}
			// The lines' own likeness counts most; the context breaks ties
			// between lines that changed alike (the ADD and UPDATE logs).
			cands = append(cands, candidate{b: b, i: i, score: 2*s + contextScore(b, i, len(want), pre, suf)})
		}
	}
	if len(cands) == 0 {
		return Result{Status: Orphan}
	}
	best, second := 0, -1
	for k := 1; k < len(cands); k++ {
		if cands[k].score > cands[best].score {
			best, second = k, best
		} else if second < 0 || cands[k].score > cands[second].score {
			second = k
		}
	}
	if second >= 0 && cands[best].score-cands[second].score < minMargin {
		return Result{Status: Orphan}
	}
	c := cands[best]
	start := c.b.first + c.i
	return Result{
		Status: Changed, Start: start, End: start + len(want) - 1, Case: caseAt(r, start),
		Text: strings.Join(c.b.lines[c.i:c.i+len(want)], "\n"),
	}
}

// minLikeness is how alike (0..1) the lines must be to count as the same
// lines changed; minMargin how far ahead of the runner-up the best must be.
const (
	minLikeness = 0.7
	minMargin   = 0.15
)

func equalAt(lines []string, i int, want []string) bool {
	for k, w := range want {
		if norm(lines[i+k]) != w {
			return false
		}
	}
	return true
}

// contextScore is how alike the lines around a window are to the quote's
// prefix and suffix, 0..1 each.
func contextScore(b block, i, n int, pre, suf []string) float64 {
	s := 0.0
	if len(pre) > 0 {
		got := 0.0
		for k := range pre {
			j := i - len(pre) + k
			if j >= 0 {
				got += likeness(pre[k], norm(b.lines[j]))
			}
		}
		s += got / float64(len(pre))
	}
	if len(suf) > 0 {
		got := 0.0
		for k := range suf {
			j := i + n + k
			if j < len(b.lines) {
				got += likeness(suf[k], norm(b.lines[j]))
			}
		}
		s += got / float64(len(suf))
	}
	return s
}

// pick is the best-scoring exact match, the nearest to the old line on a tie.
func pick(cs []candidate, old int) candidate {
	best := cs[0]
	for _, c := range cs[1:] {
		if c.score > best.score || c.score == best.score && dist(c.b.first+c.i, old) < dist(best.b.first+best.i, old) {
			best = c
		}
	}
	return best
}

func dist(a, b int) int {
	if a > b {
		return a - b
	}
	return b - a
}

// likeness is the Dice coefficient of two lines' tokens (identifiers,
// numbers, string literals whole), 1 for equal lines.
func likeness(a, b string) float64 {
	if a == b {
		return 1
	}
	ta, tb := tokens(a), tokens(b)
	if len(ta) == 0 || len(tb) == 0 {
		return 0
	}
	count := map[string]int{}
	for _, t := range ta {
		count[t]++
	}
	common := 0
	for _, t := range tb {
		if count[t] > 0 {
			count[t]--
			common++
		}
	}
	return 2 * float64(common) / float64(len(ta)+len(tb))
}

func tokens(s string) []string {
	var out []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		c := rs[i]
		switch {
		case unicode.IsSpace(c):
			i++
		case c == '"' || c == '`':
			j := i + 1
			for j < len(rs) && rs[j] != c {
				if rs[j] == '\\' && c == '"' {
					j++
				}
				j++
			}
			j = min(j+1, len(rs))
			out = append(out, string(rs[i:j]))
			i = j
		case c == '_' || unicode.IsLetter(c) || unicode.IsDigit(c):
			j := i
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			out = append(out, string(rs[i:j]))
			i = j
		default: // punctuation: every Go line has it, it tells lines apart poorly
			i++
		}
	}
	return out
}
