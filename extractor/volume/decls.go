package volume

// decls.go builds the reading's definitions index, the one the page opens
// in place (its peeks) and resolves the notes' sym: links against: every
// function, method, struct and interface of the packages read in whole
// (the reconciler, the populator, the two sets' cache, the operation
// executor, the volume manager), each interface method with the module's
// implementations of it, and in every function's text the calls and
// selectors that name one of them (line and column, as extractor.Ref).
// Names are resolved as the writers are (env, exprType): from the syntax,
// through the receiver's fields and the interfaces they embed.

import (
	"go/ast"
	"go/token"
	"slices"
	"sort"

	"github.com/syncloop/syncloop/extractor"
)

// decls indexes the declarations of the packages read in whole.
func (t *tree) decls() map[string]*extractor.Decl {
	out := map[string]*extractor.Decl{}
	var fns []*funcDecl
	for _, dir := range t.dirs() {
		if !whole[dir] || dir == featuresDir {
			continue
		}
		pk := t.pkgs[dir]
		for _, f := range pk.files {
			for _, d := range f.ast.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					kind := "func"
					if d.Recv != nil {
						kind = "method"
					}
					out[funcName(dir, d)] = t.decl(f, funcName(dir, d), kind, d.Doc, d)
					fns = append(fns, &funcDecl{decl: d, file: f})
				case *ast.GenDecl:
					t.typeDecls(out, f, d)
				}
			}
		}
	}
	t.implsOf(out)
	for _, fn := range fns {
		d := out[funcName(fn.file.dir, fn.decl)]
		d.Refs = t.refs(fn, out)
	}
	return out
}

// decl is n's declaration, its doc comment (when it has one) first.
func (t *tree) decl(f *file, sym, kind string, doc *ast.CommentGroup, n ast.Node) *extractor.Decl {
	from := n.Pos()
	if doc != nil {
		from = doc.Pos()
	}
	// From the start of its first line, so that every line keeps its
	// indentation (an interface method's, a type in a group).
	tf := t.fset.File(n.Pos())
	a, b := tf.Offset(tf.LineStart(t.line(from))), tf.Offset(n.End())
	text := ""
	if a >= 0 && b <= len(f.src) && a <= b {
		text = string(f.src[a:b])
	}
	return &extractor.Decl{Sym: sym, Kind: kind, File: f.path, Start: t.line(from), End: t.line(n.End()), Text: text}
}

// typeDecls adds d's struct and interface types, and each interface's
// methods as written in it.
func (t *tree) typeDecls(out map[string]*extractor.Decl, f *file, d *ast.GenDecl) {
	if d.Tok != token.TYPE {
		return
	}
	for _, s := range d.Specs {
		ts := s.(*ast.TypeSpec)
		doc := ts.Doc
		var n ast.Node = ts
		if len(d.Specs) == 1 {
			doc, n = d.Doc, d
		}
		sym := f.dir + "." + ts.Name.Name
		out[sym] = t.decl(f, sym, "type", doc, n)
		it, ok := ts.Type.(*ast.InterfaceType)
		if !ok {
			continue
		}
		for _, m := range it.Methods.List {
			for _, name := range m.Names {
				ms := sym + "." + name.Name
				out[ms] = t.decl(f, ms, "interface method", m.Doc, m)
			}
		}
	}
}

// implsOf lists, on each interface method, the methods of the types the
// module's constructors return for the interfaces that have it (itself
// or by embedding it): cache.actualStateOfWorld's MarkVolumeAsMounted for
// operationexecutor.ActualStateOfWorldMounterUpdater.MarkVolumeAsMounted.
func (t *tree) implsOf(out map[string]*extractor.Decl) {
	for _, dir := range t.dirs() {
		for name := range t.pkgs[dir].ifaces {
			q := dir + "." + name
			impl := t.implOf(q)
			if impl == "" {
				continue
			}
			through := map[string]map[string]bool{}
			t.ifaceMethods(q, through, 0)
			for iq, methods := range through {
				for m := range methods {
					d, fn := out[iq+"."+m], t.method(impl, m)
					if d == nil || fn == nil {
						continue
					}
					is := funcName(fn.file.dir, fn.decl)
					if out[is] != nil && !slices.Contains(d.Impls, is) {
						d.Impls = append(d.Impls, is)
						sort.Strings(d.Impls)
					}
				}
			}
		}
	}
}

// refs are the identifiers in fn's text (its doc comment's lines aside)
// that name a declaration of out.
func (t *tree) refs(fn *funcDecl, out map[string]*extractor.Decl) []extractor.Ref {
	f, env := fn.file, t.env(fn.file, fn.decl)
	var refs []extractor.Ref
	add := func(id *ast.Ident, sym string) {
		if out[sym] == nil {
			return
		}
		p := t.fset.Position(id.Pos())
		refs = append(refs, extractor.Ref{Line: p.Line, Col: p.Column - 1, Len: len(id.Name), Sym: sym})
	}
	ast.Inspect(fn.decl, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.SelectorExpr:
			if sym := t.selectorSym(f, x, env); sym != "" {
				add(x.Sel, sym)
			}
		case *ast.CallExpr:
			if id, ok := x.Fun.(*ast.Ident); ok && env[id.Name] == "" {
				add(id, f.dir+"."+id.Name)
			}
		case *ast.Ident:
			if x.Obj == nil && env[x.Name] == "" && x != fn.decl.Name {
				if d := out[f.dir+"."+x.Name]; d != nil && d.Kind == "type" {
					add(x, d.Sym)
				}
			}
		}
		return true
	})
	sort.Slice(refs, func(i, j int) bool {
		return refs[i].Line < refs[j].Line || refs[i].Line == refs[j].Line && refs[i].Col < refs[j].Col
	})
	return dedupRefs(refs)
}

// selectorSym is the declaration x.Sel names: a package's function or
// type (pkg.Name), a method of x's type, or the interface method x's
// interface type has (declared in it or in one it embeds).
func (t *tree) selectorSym(f *file, x *ast.SelectorExpr, env map[string]string) string {
	if id, ok := x.X.(*ast.Ident); ok && env[id.Name] == "" {
		if dir, ok := f.imports[id.Name]; ok {
			return dir + "." + x.Sel.Name
		}
		return ""
	}
	q := t.exprType(f, x.X, env)
	if q == "" {
		return ""
	}
	if m := t.method(q, x.Sel.Name); m != nil {
		return funcName(m.file.dir, m.decl)
	}
	dir, name := splitType(q)
	if pk := t.pkgs[dir]; pk == nil || pk.ifaces[name] == nil {
		return ""
	}
	through := map[string]map[string]bool{}
	t.ifaceMethods(q, through, 0)
	var found []string
	for iq, methods := range through {
		if methods[x.Sel.Name] && t.declares(iq, x.Sel.Name) {
			found = append(found, iq+"."+x.Sel.Name)
		}
	}
	sort.Strings(found)
	if len(found) == 0 {
		return ""
	}
	return found[0]
}

// declares reports whether interface q lists method m itself.
func (t *tree) declares(q, m string) bool {
	dir, name := splitType(q)
	pk := t.pkgs[dir]
	if pk == nil || pk.ifaces[name] == nil {
		return false
	}
	for _, fl := range pk.ifaces[name].typ.Methods.List {
		for _, n := range fl.Names {
			if n.Name == m {
				return true
			}
		}
	}
	return false
}

func dedupRefs(refs []extractor.Ref) []extractor.Ref {
	var out []extractor.Ref
	for i, r := range refs {
		if i > 0 && r.Line == refs[i-1].Line && r.Col == refs[i-1].Col {
			continue
		}
		out = append(out, r)
	}
	return out
}

// DeclOf is the declaration a sym: link names, when the index has it.
func (r *Reading) DeclOf(sym string) (*extractor.Decl, bool) {
	d, ok := r.Decls[sym]
	return d, ok
}
