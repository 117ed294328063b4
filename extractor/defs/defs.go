// Package defs builds the definitions index the page opens in place: every
// function, method and type the loop reaches (through calls and type
// references, a few levels deep), with its source, the module symbols its
// body refers to (line and column, for the page's controls) and, for an
// interface method, the module's implementations. It runs on the same
// syntactic index as the flow engine (package index).
package defs

import (
	"go/ast"
	"go/token"
	"slices"
	"strings"

	"github.com/syncloop/syncloop/extractor/index"
)

// Defs is the definitions index of one tag. It is cached beside the
// Reading (its own file: it is several times the Reading's size and
// reading.json does not serve it).
type Defs struct {
	Schema int    `json:"schema"`
	Tag    string `json:"tag"`
	// Loop are the references in the function's text and its helpers'
	// (Function.Text from DocStart, Helper.Text from its DocStart).
	Loop  []Ref            `json:"loop"`
	Decls map[string]*Decl `json:"decls"` // by symbol
	// Declared is every function, method and type symbol declared in the
	// kubelet's packages at the tag (FlowScope), indexed or not: whether a
	// name a reader writes exists at this tag at all.
	Declared []string `json:"declared"`
}

// Decl is one declaration: a function or method (its doc comment and
// body), a type, or an interface method (its line in the interface, and
// the module's implementations).
type Decl struct {
	Sym   string   `json:"sym"`
	Kind  string   `json:"kind"` // "func", "method", "type", "interface method"
	File  string   `json:"file"`
	Start int      `json:"start"` // first line of Text (the doc comment's, when there is one)
	End   int      `json:"end"`
	Text  string   `json:"text"`
	Refs  []Ref    `json:"refs,omitempty"`
	Impls []string `json:"impls,omitempty"` // an interface method's implementations, by symbol
}

// Ref is one identifier in a text that names a symbol of the module.
type Ref struct {
	Line int    `json:"line"` // file line number
	Col  int    `json:"col"`  // byte offset of the identifier in its line
	Len  int    `json:"len"`
	Sym  string `json:"sym"`
}

// HasDecl reports whether sym is declared in the kubelet's packages at the
// tag (Declared is sorted).
func (d *Defs) HasDecl(sym string) bool {
	_, ok := slices.BinarySearch(d.Declared, sym)
	return ok
}

// defsDepth is how many calls deep from the loop the index goes:
// HandlePodAdditions (1) → podWorkers.UpdatePod (2) → podWorkerLoop (3),
// and one more so that what the third opens is there too.
const defsDepth = 4

// maxDecls bounds the index, so that a widely fanned-out tag cannot make
// extraction run away; what is left out stays plain text on the page.
const maxDecls = 3000

type defsBuilder struct {
	x    *index.Index
	defs *Defs
	fns  map[string][]*index.Func // symbol → its declaration(s), for functions and methods
}

// Build builds the index from the loop function and the helpers it calls
// (declared in its file), and from roots (the derived writers' functions,
// which the margin opens). schema is the Reading's, which the Defs carry.
func Build(x *index.Index, schema int, loop *index.Func, helpers []*ast.FuncDecl, roots []string) *Defs {
	b := &defsBuilder{x: x, defs: &Defs{Schema: schema, Tag: x.Tag, Decls: map[string]*Decl{}}, fns: map[string][]*index.Func{}}
	b.defs.Loop = b.refs(loop, loop.Decl)
	for _, d := range helpers {
		b.defs.Loop = append(b.defs.Loop, b.refs(&index.Func{F: loop.F, Dir: loop.Dir, Decl: d}, d)...)
	}
	level := append(uniqSyms(b.defs.Loop), roots...)
	for depth := 1; depth <= defsDepth && len(level) > 0; depth++ {
		var next []string
		// An interface method's implementations are opened with it: they
		// join the level it is on (level grows while it is walked).
		for i := 0; i < len(level); i++ {
			sym := level[i]
			if _, done := b.defs.Decls[sym]; done || len(b.defs.Decls) >= maxDecls {
				continue
			}
			d := b.decl(sym, depth < defsDepth)
			if d == nil {
				continue
			}
			b.defs.Decls[sym] = d
			next = append(next, uniqSyms(d.Refs)...)
			level = append(level, d.Impls...)
		}
		level = next
	}
	// Impls at the last level get their declarations too: an interface
	// method opens on its implementations.
	for _, d := range b.defs.Decls {
		for _, s := range d.Impls {
			if _, ok := b.defs.Decls[s]; !ok && len(b.defs.Decls) < maxDecls {
				if id := b.decl(s, false); id != nil {
					b.defs.Decls[s] = id
				}
			}
		}
	}
	// A reference to what the index does not hold stays plain text.
	keep := func(refs []Ref) []Ref {
		return slices.DeleteFunc(refs, func(r Ref) bool { _, ok := b.defs.Decls[r.Sym]; return !ok })
	}
	b.defs.Loop = keep(b.defs.Loop)
	for _, d := range b.defs.Decls {
		d.Refs = keep(d.Refs)
	}
	b.defs.Declared = declared(x)
	return b.defs
}

func uniqSyms(refs []Ref) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range refs {
		if !seen[r.Sym] {
			seen[r.Sym] = true
			out = append(out, r.Sym)
		}
	}
	return out
}

// decl finds sym's declaration; withRefs says whether to resolve the
// references in its body (not at the index's last level).
func (b *defsBuilder) decl(sym string, withRefs bool) *Decl {
	x := b.x
	dir, recv, name, ok := index.SplitSymbol(sym)
	if !ok {
		return nil
	}
	if _, ok := b.fns[sym]; !ok {
		// a root named by symbol only: a function or a concrete method
		if recv == "" {
			b.fns[sym] = x.FuncDecl(dir, name)
		} else {
			b.fns[sym] = x.Methods(index.Named{Dir: dir, Name: recv}, name)
		}
	}
	if cs, ok := b.fns[sym]; ok && len(cs) > 0 {
		c := cs[0]
		d := b.funcDecl(sym, c)
		if withRefs {
			d.Refs = b.refs(c, c.Decl)
		}
		return d
	}
	if recv != "" {
		// an interface method
		t := index.Named{Dir: dir, Name: recv}
		specs := x.TypeSpecsOf(t)
		if len(specs) == 0 {
			return nil
		}
		it, ok := specs[0].TS.Type.(*ast.InterfaceType)
		if !ok {
			return nil
		}
		for _, m := range it.Methods.List {
			for _, n := range m.Names {
				if n.Name != name {
					continue
				}
				f := specs[0].F
				start := f.Line(m.Pos())
				if m.Doc != nil {
					start = f.Line(m.Doc.Pos())
				}
				d := &Decl{Sym: sym, Kind: "interface method", File: f.Path, Start: start, End: f.EndLine(m)}
				d.Text = f.Lines(d.Start, d.End)
				for _, impl := range x.Implementations(t) {
					for _, c := range x.Methods(impl, name) {
						s := index.FuncSymbol(c.Dir, c.Decl)
						b.fns[s] = append(b.fns[s], c)
						if !slices.Contains(d.Impls, s) {
							d.Impls = append(d.Impls, s)
						}
					}
				}
				return d
			}
		}
		return nil
	}
	// a type
	t := index.Named{Dir: dir, Name: name}
	specs := x.TypeSpecsOf(t)
	if len(specs) == 0 {
		return nil
	}
	f, ts := specs[0].F, specs[0].TS
	start, end := f.Line(ts.Pos()), f.EndLine(ts)
	if gd := genDeclOf(f.AST, ts); gd != nil && len(gd.Specs) == 1 {
		start = f.Line(gd.Pos())
		if gd.Doc != nil {
			start = f.Line(gd.Doc.Pos())
		}
	} else if ts.Doc != nil {
		start = f.Line(ts.Doc.Pos())
	}
	start = docAbove(f, start)
	return &Decl{Sym: sym, Kind: "type", File: f.Path, Start: start, End: end, Text: f.Lines(start, end)}
}

// docAbove is the first line of the // comment block right above line
// (line itself when there is none). Most package files are parsed without
// their comments, so the doc comment is found by its lines.
func docAbove(f *index.File, line int) int {
	for line > 1 && strings.HasPrefix(strings.TrimSpace(f.Lines(line-1, line-1)), "//") {
		line--
	}
	return line
}

func genDeclOf(f *ast.File, ts *ast.TypeSpec) *ast.GenDecl {
	for gd, s := range index.TypeSpecs(f) {
		if s == ts {
			return gd
		}
	}
	return nil
}

func (b *defsBuilder) funcDecl(sym string, c *index.Func) *Decl {
	f, fd := c.F, c.Decl
	start := f.Line(fd.Pos())
	if fd.Doc != nil {
		start = f.Line(fd.Doc.Pos())
	} else {
		start = docAbove(f, start)
	}
	end := f.EndLine(fd)
	kind := "func"
	if fd.Recv != nil {
		kind = "method"
	}
	return &Decl{Sym: sym, Kind: kind, File: f.Path, Start: start, End: end, Text: f.Lines(start, end)}
}

// refs lists the identifiers in fd (of c) that name module functions,
// methods, interface methods and types, and remembers the functions'
// declarations.
func (b *defsBuilder) refs(c *index.Func, fd *ast.FuncDecl) []Ref {
	x := b.x
	var out []Ref
	add := func(id *ast.Ident, sym string, decls []*index.Func) {
		pos := c.F.TF.Position(id.Pos())
		lineStart := c.F.TF.Offset(c.F.TF.LineStart(pos.Line))
		out = append(out, Ref{Line: pos.Line, Col: c.F.TF.Offset(id.Pos()) - lineStart, Len: len(id.Name), Sym: sym})
		if len(decls) > 0 {
			if _, ok := b.fns[sym]; !ok {
				b.fns[sym] = decls
			}
		}
	}
	// Types in the signature, then the body.
	ast.Inspect(fd, func(n ast.Node) bool {
		switch e := n.(type) {
		case *ast.CallExpr:
			switch fun := ast.Unparen(e.Fun).(type) {
			case *ast.Ident:
				if ds := x.FuncDecl(c.Dir, fun.Name); len(ds) > 0 && index.ParamType(fd.Type, fun.Name) == nil {
					add(fun, index.FuncSymbol(c.Dir, ds[0].Decl), ds)
				}
			case *ast.SelectorExpr:
				b.selectorRef(c, fun, add)
			}
		case *ast.SelectorExpr:
			// a type written pkg.T (a composite literal's, a conversion's,
			// a declaration's), not a call
			if id, ok := e.X.(*ast.Ident); ok && token.IsExported(e.Sel.Name) && x.IsPackageName(c, id.Name) {
				if d, ok := x.ImportedDir(c.F, id.Name); ok && len(x.TypeSpecsOf(index.Named{Dir: d, Name: e.Sel.Name})) > 0 {
					add(e.Sel, d+"."+e.Sel.Name, nil)
				}
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b Ref) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
	return slices.CompactFunc(out, func(a, b Ref) bool { return a.Line == b.Line && a.Col == b.Col })
}

// selectorRef resolves pkg.F(…) and x.M(…).
func (b *defsBuilder) selectorRef(c *index.Func, fun *ast.SelectorExpr, add func(*ast.Ident, string, []*index.Func)) {
	x := b.x
	if id, ok := fun.X.(*ast.Ident); ok && x.IsPackageName(c, id.Name) {
		if d, ok := x.ImportedDir(c.F, id.Name); ok {
			if ds := x.FuncDecl(d, fun.Sel.Name); len(ds) > 0 {
				add(fun.Sel, index.FuncSymbol(d, ds[0].Decl), ds)
			}
		}
		return
	}
	t := x.TypeOf(fun.X, c)
	if !t.OK() {
		return
	}
	if ms, iface := x.InterfaceMethods(t, 0); iface {
		if !slices.Contains(ms, fun.Sel.Name) {
			return
		}
		// The method may be declared in an embedded interface: name the
		// interface that declares it.
		owner := declaringInterface(x, t, fun.Sel.Name, 0)
		if owner.OK() {
			add(fun.Sel, owner.Dir+"."+owner.Name+"."+fun.Sel.Name, nil)
		}
		return
	}
	if ds := x.Methods(t, fun.Sel.Name); len(ds) > 0 {
		add(fun.Sel, index.FuncSymbol(t.Dir, ds[0].Decl), ds)
	}
}

// declaringInterface is the interface, t or one it embeds, that declares
// method m.
func declaringInterface(x *index.Index, t index.Named, m string, depth int) index.Named {
	specs := x.TypeSpecsOf(t)
	if len(specs) == 0 || depth > 6 {
		return index.Named{}
	}
	it, ok := specs[0].TS.Type.(*ast.InterfaceType)
	if !ok {
		return index.Named{}
	}
	for _, f := range it.Methods.List {
		for _, n := range f.Names {
			if n.Name == m {
				return t
			}
		}
	}
	for _, f := range it.Methods.List {
		if len(f.Names) == 0 {
			if emb := x.ResolveType(f.Type, specs[0].F, t.Dir); emb.OK() {
				if o := declaringInterface(x, emb, m, depth+1); o.OK() {
					return o
				}
			}
		}
	}
	return index.Named{}
}

// declared lists every function, method and type symbol declared in the
// non-test files of FlowScope, sorted.
func declared(x *index.Index) []string {
	var out []string
	for _, d := range x.ScopeDirs() {
		p := x.Pkg(d)
		if p == nil {
			continue
		}
		for _, f := range x.ParsedFiles(p, func([]byte) bool { return true }) {
			for _, decl := range f.AST.Decls {
				switch dd := decl.(type) {
				case *ast.FuncDecl:
					out = append(out, index.FuncSymbol(d, dd))
				case *ast.GenDecl:
					if dd.Tok != token.TYPE {
						continue
					}
					for _, s := range dd.Specs {
						ts := s.(*ast.TypeSpec)
						out = append(out, d+"."+ts.Name.Name)
						if it, ok := ts.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									out = append(out, d+"."+ts.Name.Name+"."+n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ShortSymbol is the symbol without its package path:
// "(*Kubelet).HandlePodAdditions".
func ShortSymbol(sym string) string {
	slash := strings.LastIndex(sym, "/")
	dot := strings.Index(sym[slash+1:], ".")
	if dot < 0 {
		return sym
	}
	return sym[slash+1+dot+1:]
}
