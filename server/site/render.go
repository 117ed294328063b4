package site

// Highlighting: chroma tokenises the source and names each token's class; we
// write the lines ourselves, because every line must carry its upstream line
// number as its id (L2760) and the cases split the function into blocks that
// sit beside their notes. The classes are chroma's, so its generated
// stylesheet (chromaCSS) colours them and no inline style is ever needed.

import (
	"bytes"
	"fmt"
	"html/template"
	"strings"

	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/formatters/html"
	"github.com/alecthomas/chroma/v2/lexers"
	"github.com/alecthomas/chroma/v2/styles"

	"github.com/syncloop/syncloop/extractor"
)

// Chroma styles for the light and dark themes.
const (
	lightStyle = "github"
	darkStyle  = "github-dark"
)

// highlighted is a piece of one file's source, highlighted, by line number.
type highlighted struct {
	first int
	lines []template.HTML // lines[i] is line first+i, without its newline
}

// highlightRefs highlights text, Go source whose first line is line
// first, and makes each identifier refs names (a module symbol, from the Reading's definitions
// index) a control that opens its definition in place: a button with
// data-def (static/peek.js).
func highlightRefs(text string, first int, refs []extractor.Ref) (*highlighted, error) {
	t, err := tokenise(text)
	if err != nil {
		return nil, err
	}
	return t.render(first, refs), nil
}

// tokens is Go source split by chroma's lexer into lines of tokens: the
// costly half of highlighting, done once for a text rendered twice (the
// reading's function with its controls, and the compare page's without).
type tokens struct {
	lines [][]chroma.Token
	want  int // the text's number of lines
}

func tokenise(text string) (*tokens, error) {
	lexer := lexers.Get("go")
	if lexer == nil {
		return nil, fmt.Errorf("highlight: chroma has no Go lexer")
	}
	it, err := chroma.Coalesce(lexer).Tokenise(nil, text)
	if err != nil {
		return nil, fmt.Errorf("highlight: %w", err)
	}
	// The text's last line has a newline or not; either way it has as many
	// lines as newline-separated pieces.
	want := strings.Count(strings.TrimSuffix(text, "\n"), "\n") + 1
	return &tokens{lines: chroma.SplitTokensIntoLines(it.Tokens()), want: want}, nil
}

// render writes the text's lines, its first line numbered first, each
// identifier refs names a control (highlightRefs).
func (t *tokens) render(first int, refs []extractor.Ref) *highlighted {
	byLine := map[int][]extractor.Ref{}
	for _, r := range refs {
		byLine[r.Line] = append(byLine[r.Line], r)
	}
	h := &highlighted{first: first}
	for i, line := range t.lines {
		var b strings.Builder
		col := 0
		lineRefs := byLine[first+i]
		for _, tok := range line {
			v := strings.TrimSuffix(tok.Value, "\n")
			if v == "" {
				continue
			}
			writeToken(&b, tokenClass(tok.Type), v, col, lineRefs)
			col += len(v)
		}
		h.lines = append(h.lines, template.HTML(b.String()))
	}
	for len(h.lines) < t.want {
		h.lines = append(h.lines, "")
	}
	h.lines = h.lines[:t.want]
	return h
}

// writeToken writes one token (v, starting at byte col of its line) with
// its class, the parts refs cover as controls.
func writeToken(b *strings.Builder, cls, v string, col int, refs []extractor.Ref) {
	span := func(s string) {
		if s == "" {
			return
		}
		if cls != "" {
			fmt.Fprintf(b, `<span class="%s">%s</span>`, cls, template.HTMLEscapeString(s))
		} else {
			b.WriteString(template.HTMLEscapeString(s))
		}
	}
	at := 0
	for _, r := range refs {
		from, to := r.Col-col, r.Col-col+r.Len
		if from < at || to > len(v) {
			continue // not inside this token
		}
		span(v[at:from])
		fmt.Fprintf(b, `<button type="button" class="def" data-def="%s" aria-expanded="false" title="Open %s here">`,
			template.HTMLEscapeString(r.Sym), template.HTMLEscapeString(extractor.ShortSymbol(r.Sym)))
		span(v[from:to])
		b.WriteString(`</button>`)
		at = to
	}
	span(v[at:])
}

// tokenClass is chroma's CSS class for a token type, as its HTML formatter
// names it.
func tokenClass(t chroma.TokenType) string {
	for t != 0 {
		if cls, ok := chroma.StandardTypes[t]; ok {
			return cls
		}
		t = t.Parent()
	}
	return ""
}

// last is the number of the last line held.
func (h *highlighted) last() int { return h.first + len(h.lines) - 1 }

// block renders lines a..b (clamped to what h holds) as a <pre>, each line
// an element with id L<n> and a line-number link.
func (h *highlighted) block(a, b int) template.HTML {
	a, b = max(a, h.first), min(b, h.last())
	var w bytes.Buffer
	w.WriteString(`<pre class="chroma code">`)
	for n := a; n <= b; n++ {
		fmt.Fprintf(&w, `<span class="line" id="L%d"><a class="ln" href="#L%d">%d</a><span class="cl">%s`+"\n"+`</span></span>`,
			n, n, n, h.lines[n-h.first])
	}
	w.WriteString(`</pre>`)
	return template.HTML(w.String())
}

// chromaCSS is the stylesheet for chroma's classes: the light style, and the
// dark one under prefers-color-scheme: dark.
func chromaCSS() ([]byte, error) {
	f := html.New(html.WithClasses(true), html.TabWidth(4))
	var b bytes.Buffer
	b.WriteString("/* Generated by syncloop from chroma's " + lightStyle + " and " + darkStyle + " styles. */\n")
	if err := f.WriteCSS(&b, styles.Get(lightStyle)); err != nil {
		return nil, err
	}
	// A token the dark style leaves plain must not keep the light style's
	// colour: reset every class (same specificity as chroma's rules, and
	// earlier, so the dark rules that follow win).
	b.WriteString("@media screen and (prefers-color-scheme: dark) {\n")
	b.WriteString(".chroma [class] { color: inherit; background-color: transparent; font-weight: inherit; font-style: inherit; text-decoration: inherit }\n")
	if err := f.WriteCSS(&b, styles.Get(darkStyle)); err != nil {
		return nil, err
	}
	b.WriteString("}\n")
	return b.Bytes(), nil
}
