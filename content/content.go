// Package content holds syncloop's own writing: one Markdown note per case
// key, plus the intro, pod_workers and two-sets notes, embedded in the binary.
//
// A note is a file notes/NAME.md that starts with a front matter block:
//
//	---
//	title: What the PLEG case carries
//	kind: case          # "case" (a note for one select case) or "page"
//	case: pleg          # kind case: the case key (by convention also NAME)
//	key: intro          # kind page: the note's key (by convention also NAME)
//	order: 1            # kind page: position among page notes (default 0)
//	since: v1.31.0      # optional, free-form: first tag with the case
//	writer: the results manager's Set  # kind case: who sends on the channel (the worksheet's column)
//	---
//
// Each front matter line is "field: value"; blank lines and lines starting
// with "#" are skipped, and a value may carry a trailing " # comment".
// Unknown fields are kept in Note.Front.
//
// The Markdown links to upstream code by symbol, never by line:
// [results manager](sym:pkg/kubelet/prober/results.(*manager).Set). Render
// turns each such link into a link to the line where the symbol is declared
// at the page's tag, or into visibly unresolved text when it does not
// resolve there.
package content

import (
	"bytes"
	"cmp"
	"embed"
	"fmt"
	"html"
	"html/template"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"

	"github.com/syncloop/syncloop/extractor"
)

//go:embed notes/*.md
var notesFS embed.FS

// Note is one Markdown note with its front matter.
type Note struct {
	Key   string            // case key ("pleg") or page note ("intro", "pod-workers", "two-sets")
	Kind  string            // "case" or "page"
	Title string            // from front matter
	Front map[string]string // all front matter fields
	Body  []byte            // Markdown after the front matter
}

// Note kinds.
const (
	KindCase = "case"
	KindPage = "page"
)

// SymScheme is the link scheme of a symbol link: [text](sym:pkg/dir.Name).
const SymScheme = "sym:"

// ReadingScheme is the link scheme of a link to another reading of the
// site at the page's tag: [the second reading](reading:volume-manager).
// Render asks its resolver for the whole destination; a link it does not
// resolve is left as its text.
const ReadingScheme = "reading:"

// CaseOrder is the order in which case notes are listed: the order of the
// cases in syncLoopIteration at recent tags. Case keys not in it follow,
// sorted by name.
var CaseOrder = extractor.CaseKeys[:]

// loaded parses the embedded notes once; they cannot change at run time.
var loaded = sync.OnceValues(func() ([]Note, error) { return parseNotes(notesFS, "notes") })

// Notes returns every embedded note: page notes first (by order, then key),
// then case notes in CaseOrder. It fails when a note's front matter is
// malformed or two notes share a key. The returned notes are copies.
func Notes() ([]Note, error) { return copies(loaded()) }

// copies are notes' copies (their front matter and body cloned), for a
// caller that may change them.
func copies(notes []Note, err error) ([]Note, error) {
	if err != nil {
		return nil, err
	}
	out := make([]Note, len(notes))
	for i, n := range notes {
		n.Front = maps.Clone(n.Front)
		n.Body = slices.Clone(n.Body)
		out[i] = n
	}
	return out, nil
}

// parseNotes reads every dir/*.md in fsys.
func parseNotes(fsys fs.FS, dir string) ([]Note, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.md"))
	if err != nil {
		return nil, err
	}
	var notes []Note
	seen := map[string]string{}
	for _, name := range names {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		n, err := parseNote(data)
		if err != nil {
			return nil, fmt.Errorf("note %s: %w", name, err)
		}
		if prev, dup := seen[n.Key]; dup {
			return nil, fmt.Errorf("note %s: duplicate key %q (also in %s)", name, n.Key, prev)
		}
		seen[n.Key] = name
		notes = append(notes, n)
	}
	sortNotes(notes)
	return notes, nil
}

// parseNote splits a note into front matter and body and checks the fields.
func parseNote(data []byte) (Note, error) {
	front, body, err := parseFrontMatter(data)
	if err != nil {
		return Note{}, err
	}
	n := Note{Kind: front["kind"], Title: front["title"], Front: front, Body: body}
	if n.Title == "" {
		return Note{}, fmt.Errorf("front matter: missing title")
	}
	switch n.Kind {
	case KindCase:
		n.Key = front["case"]
		if n.Key == "" {
			return Note{}, fmt.Errorf("front matter: a case note needs a case field")
		}
	case KindPage:
		n.Key = front["key"]
		if n.Key == "" {
			return Note{}, fmt.Errorf("front matter: a page note needs a key field")
		}
	case "":
		return Note{}, fmt.Errorf("front matter: missing kind (case or page)")
	default:
		return Note{}, fmt.Errorf("front matter: kind %q is neither case nor page", n.Kind)
	}
	if o, ok := front["order"]; ok {
		if _, err := strconv.Atoi(o); err != nil {
			return Note{}, fmt.Errorf("front matter: order %q is not an integer", o)
		}
	}
	return n, nil
}

// parseFrontMatter reads the leading "---" block of key: value lines.
func parseFrontMatter(data []byte) (map[string]string, []byte, error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	rest, ok := cutLine(data)
	if !ok || strings.TrimSpace(string(rest.line)) != "---" {
		return nil, nil, fmt.Errorf("front matter: the note must start with a --- line")
	}
	front := map[string]string{}
	lineNo := 1
	for data = rest.tail; ; {
		r, ok := cutLine(data)
		if !ok {
			return nil, nil, fmt.Errorf("front matter: no closing --- line")
		}
		lineNo++
		data = r.tail
		line := strings.TrimSpace(strings.TrimSuffix(string(r.line), "\r"))
		if line == "---" {
			return front, data, nil
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, found := strings.Cut(line, ":")
		key = strings.TrimSpace(key)
		if !found || key == "" || strings.ContainsAny(key, " \t") {
			return nil, nil, fmt.Errorf("front matter line %d: want \"field: value\", got %q", lineNo, line)
		}
		if i := strings.Index(value, " #"); i >= 0 {
			value = value[:i]
		}
		value = unquote(strings.TrimSpace(value))
		if _, dup := front[key]; dup {
			return nil, nil, fmt.Errorf("front matter line %d: field %q given twice", lineNo, key)
		}
		front[key] = value
	}
}

type cut struct{ line, tail []byte }

// cutLine returns the first line of data (without its newline) and the rest.
// ok is false only when data is empty.
func cutLine(data []byte) (cut, bool) {
	if len(data) == 0 {
		return cut{}, false
	}
	line, tail, _ := bytes.Cut(data, []byte("\n"))
	return cut{line, tail}, true
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}

func sortNotes(notes []Note) {
	rank := func(n Note) (int, int, string) {
		if n.Kind == KindPage {
			o, _ := strconv.Atoi(n.Front["order"])
			return 0, o, n.Key
		}
		if i := slices.Index(CaseOrder, n.Key); i >= 0 {
			return 1, i, ""
		}
		return 2, 0, n.Key
	}
	slices.SortStableFunc(notes, func(a, b Note) int {
		a1, a2, a3 := rank(a)
		b1, b2, b3 := rank(b)
		return cmp.Or(cmp.Compare(a1, b1), cmp.Compare(a2, b2), cmp.Compare(a3, b3))
	})
}

// markdown is the one goldmark configuration: GFM, heading ids, safe mode
// (raw HTML is omitted and dangerous URLs dropped; html.WithUnsafe is never
// set), and a renderer for resolved and unresolved symbol links.
var markdown = goldmark.New(
	goldmark.WithExtensions(extension.GFM),
	goldmark.WithParserOptions(parser.WithAutoHeadingID()),
	goldmark.WithRendererOptions(
		renderer.WithNodeRenderers(util.Prioritized(symRenderer{}, 100)),
	),
)

// parse parses a note's body; heading ids are prefixed with the note's key
// so that several notes on one page never share an id.
func parse(n Note) ast.Node {
	ctx := parser.NewContext(parser.WithIDs(newIDs("note-" + n.Key + "-")))
	return markdown.Parser().Parse(text.NewReader(n.Body), parser.WithContext(ctx))
}

// Symbols returns every sym: link target the notes use, sorted, deduplicated.
// It reads the notes' Markdown syntax trees, so a target with parentheses,
// e.g. pkg/kubelet/prober/results.(*manager).Set, is returned whole.
func Symbols() []string { return slices.Clone(symbols()) }

var symbols = sync.OnceValue(func() []string {
	notes, _ := loaded() // a broken note fails Notes and its tests; list what parses
	var out []string
	for _, n := range notes {
		out = append(out, NoteSymbols(n)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
})

// NoteSymbols returns the sym: targets one note links to, in order of use.
func NoteSymbols(n Note) []string {
	var out []string
	for _, l := range symLinks(parse(n), n.Body) {
		out = append(out, l.sym)
	}
	return out
}

type symLink struct {
	node ast.Node // *ast.Link or *ast.AutoLink
	sym  string
}

// symLinks finds the links whose destination has the sym: scheme.
func symLinks(doc ast.Node, source []byte) []symLink {
	var out []symLink
	_ = ast.Walk(doc, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var dest string
		switch v := node.(type) {
		case *ast.Link:
			dest = string(v.Destination)
		case *ast.AutoLink:
			dest = string(v.URL(source))
		default:
			return ast.WalkContinue, nil
		}
		if sym, ok := strings.CutPrefix(strings.TrimSpace(dest), SymScheme); ok {
			out = append(out, symLink{node: node, sym: strings.TrimSpace(sym)})
		}
		return ast.WalkContinue, nil
	})
	return out
}

// Render turns a note's Markdown into safe HTML; resolve maps a sym: target
// to an upstream URL at the page's tag, ok=false when it does not resolve.
// A resolved symbol becomes <a class="sym">; an unresolved one a
// <span class="sym-unresolved"> that says so, never a broken link.
func Render(n Note, resolve func(sym string) (href string, ok bool)) (template.HTML, error) {
	doc := parse(n)
	if n.Kind == KindCase {
		nestHeadings(doc, 4)
	}
	readingLinks(doc, resolve)
	for _, l := range symLinks(doc, n.Body) {
		s := &symNode{Sym: l.sym}
		if resolve != nil {
			href, ok := resolve(l.sym)
			s.Href, s.Resolved = href, ok && href != "" && !gmhtml.IsDangerousURL([]byte(href))
		}
		if _, ok := l.node.(*ast.AutoLink); ok {
			// <sym:pkg/dir.Name> shows the symbol itself, without the scheme.
			s.AppendChild(s, ast.NewString([]byte(l.sym)))
		}
		for c := l.node.FirstChild(); c != nil; {
			next := c.NextSibling()
			s.AppendChild(s, c)
			c = next
		}
		l.node.Parent().ReplaceChild(l.node.Parent(), l.node, s)
	}
	var buf bytes.Buffer
	if err := markdown.Renderer().Render(&buf, n.Body, doc); err != nil {
		return "", fmt.Errorf("render note %s: %w", n.Key, err)
	}
	// The HTML comes from goldmark in safe mode: raw HTML in the note is
	// omitted and every attribute value is escaped.
	return template.HTML(buf.String()), nil
}

// nestHeadings shifts a note's headings so that its highest is at level top:
// a case note sits under the case's own title (an h3 on the page), so its
// "### Fire it" must not read as a sibling of that title.
func nestHeadings(doc ast.Node, top int) {
	var hs []*ast.Heading
	high := 7
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := n.(*ast.Heading); ok && entering {
			hs = append(hs, h)
			high = min(high, h.Level)
		}
		return ast.WalkContinue, nil
	})
	if high >= top {
		return
	}
	for _, h := range hs {
		h.Level = min(h.Level+top-high, 6)
	}
}

// kindSym is the node kind of a symbol link after resolution.
var kindSym = ast.NewNodeKind("SymLink")

type symNode struct {
	ast.BaseInline
	Sym      string
	Href     string
	Resolved bool
}

func (n *symNode) Kind() ast.NodeKind { return kindSym }

func (n *symNode) Dump(source []byte, level int) {
	ast.DumpHelper(n, source, level, map[string]string{"Sym": n.Sym, "Href": n.Href, "Resolved": strconv.FormatBool(n.Resolved)}, nil)
}

type symRenderer struct{}

func (symRenderer) RegisterFuncs(reg renderer.NodeRendererFuncRegisterer) {
	reg.Register(kindSym, func(w util.BufWriter, _ []byte, node ast.Node, entering bool) (ast.WalkStatus, error) {
		n := node.(*symNode)
		switch {
		case entering && n.Resolved:
			fmt.Fprintf(w, `<a href="%s" class="sym" title="%s">`, html.EscapeString(n.Href), html.EscapeString(n.Sym))
		case entering:
			fmt.Fprintf(w, `<span class="sym-unresolved" title="%s">`, html.EscapeString(n.Sym+" does not resolve at this tag"))
		case n.Resolved:
			_, _ = w.WriteString("</a>")
		default:
			_, _ = w.WriteString("</span>")
		}
		return ast.WalkContinue, nil
	})
}

// ids makes heading ids like goldmark's own, with a prefix.
type ids struct {
	prefix string
	used   map[string]bool
}

func newIDs(prefix string) *ids { return &ids{prefix: prefix, used: map[string]bool{}} }

func (s *ids) Generate(value []byte, kind ast.NodeKind) []byte {
	var b strings.Builder
	for _, r := range strings.TrimSpace(string(value)) {
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r + 'a' - 'A')
		case r == ' ' || r == '-' || r == '_':
			b.WriteByte('-')
		}
	}
	base := b.String()
	if base == "" {
		base = "heading"
	}
	id := s.prefix + base
	for i := 1; s.used[id]; i++ {
		id = fmt.Sprintf("%s%s-%d", s.prefix, base, i)
	}
	s.used[id] = true
	return []byte(id)
}

func (s *ids) Put(value []byte) { s.used[string(value)] = true }

// readingLinks points each reading: link at what resolve makes of it, or
// replaces it by its text.
func readingLinks(doc ast.Node, resolve func(string) (string, bool)) {
	var links []*ast.Link
	_ = ast.Walk(doc, func(node ast.Node, entering bool) (ast.WalkStatus, error) {
		if l, ok := node.(*ast.Link); ok && entering && strings.HasPrefix(string(l.Destination), ReadingScheme) {
			links = append(links, l)
		}
		return ast.WalkContinue, nil
	})
	for _, l := range links {
		if resolve != nil {
			if href, ok := resolve(string(l.Destination)); ok && strings.HasPrefix(href, "/") && !gmhtml.IsDangerousURL([]byte(href)) {
				l.Destination = []byte(href)
				continue
			}
		}
		parent := l.Parent()
		for c := l.FirstChild(); c != nil; {
			next := c.NextSibling()
			parent.InsertBefore(parent, l, c)
			c = next
		}
		parent.RemoveChild(parent, l)
	}
}
