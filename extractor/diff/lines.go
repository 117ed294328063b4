package diff

// Line alignment: a longest-common-subsequence walk, small enough for the
// texts it sees (a case clause, a doc comment: tens of lines), and a unified
// diff written from it.

import (
	"fmt"
	"strings"
)

// Op is one step of an alignment of two texts' lines.
type Op struct {
	Kind byte // '=' the line is on both sides (whitespace aside), '-' only in the old, '+' only in the new
	From int  // index of the old line, -1 for '+'
	To   int  // index of the new line, -1 for '-'
}

// align aligns a and b by a longest common subsequence under eq. Within a
// run of differences, the old side's lines come first, as a unified diff
// shows them.
func align[T any](a, b []T, eq func(x, y T) bool) []Op {
	n, m := len(a), len(b)
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if eq(a[i], b[j]) {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	ops := make([]Op, 0, max(n, m))
	var dels, adds []Op
	flush := func() {
		ops = append(append(ops, dels...), adds...)
		dels, adds = dels[:0], adds[:0]
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && eq(a[i], b[j]):
			flush()
			ops = append(ops, Op{'=', i, j})
			i++
			j++
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			adds = append(adds, Op{'+', -1, j})
			j++
		default:
			dels = append(dels, Op{'-', i, -1})
			i++
		}
	}
	flush()
	return ops
}

// normalize is a line as compared: runs of white space are one space, and
// leading and trailing white space is gone.
func normalize(s string) string { return strings.Join(strings.Fields(s), " ") }

// splitLines splits text into lines without their newlines; "" has none.
func splitLines(text string) []string {
	if text == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(text, "\n"), "\n")
}

// Lines aligns two texts line by line, ignoring white space.
func Lines(from, to string) []Op {
	a, b := splitLines(from), splitLines(to)
	na, nb := make([]string, len(a)), make([]string, len(b))
	for i, l := range a {
		na[i] = normalize(l)
	}
	for i, l := range b {
		nb[i] = normalize(l)
	}
	return align(na, nb, func(x, y string) bool { return x == y })
}

// unified writes the unified diff (three lines of context) of two texts
// whose first lines are numbered fromFirst and toFirst, with headers naming
// them; "" when they differ only in white space.
func unified(fromName, toName, from, to string, fromFirst, toFirst int) string {
	ops := Lines(from, to)
	a, b := splitLines(from), splitLines(to)
	changed := false
	for _, op := range ops {
		if op.Kind != '=' {
			changed = true
			break
		}
	}
	if !changed {
		return ""
	}
	const context = 3
	var w strings.Builder
	fmt.Fprintf(&w, "--- %s\n+++ %s\n", fromName, toName)
	for i := 0; i < len(ops); {
		if ops[i].Kind == '=' {
			i++
			continue
		}
		// A hunk: from context lines before the change to context lines
		// after the last change closer than 2*context to the next.
		start := max(0, i-context)
		end := i
		for k := i; k < len(ops); k++ {
			if ops[k].Kind != '=' {
				end = k
			} else if k-end > 2*context {
				break
			}
		}
		end = min(len(ops)-1, end+context)
		fa, fn, ta, tn := 0, 0, 0, 0
		for k := start; k <= end; k++ {
			op := ops[k]
			if op.From >= 0 {
				if fn == 0 {
					fa = op.From
				}
				fn++
			}
			if op.To >= 0 {
				if tn == 0 {
					ta = op.To
				}
				tn++
			}
		}
		if fn == 0 {
			fa = firstAfter(ops, start, true) - 1
		}
		if tn == 0 {
			ta = firstAfter(ops, start, false) - 1
		}
		fmt.Fprintf(&w, "@@ -%s +%s @@\n", hunkRange(fromFirst+fa, fn), hunkRange(toFirst+ta, tn))
		for k := start; k <= end; k++ {
			switch op := ops[k]; op.Kind {
			case '=':
				w.WriteString(" " + b[op.To] + "\n")
			case '-':
				w.WriteString("-" + a[op.From] + "\n")
			case '+':
				w.WriteString("+" + b[op.To] + "\n")
			}
		}
		i = end + 1
	}
	return w.String()
}

// firstAfter is the index, on one side, of the first line at or after ops[k]
// (the length of that side when none), for an empty hunk range.
func firstAfter(ops []Op, k int, from bool) int {
	n := 0
	for i, op := range ops {
		idx := op.To
		if from {
			idx = op.From
		}
		if idx < 0 {
			continue
		}
		if i >= k {
			return idx
		}
		n = idx + 1
	}
	return n
}

// hunkRange is "start,count" as unified diffs write it ("start" for one line).
func hunkRange(start, n int) string {
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
