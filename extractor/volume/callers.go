package volume

// callers.go finds the call sites of the two sets' methods: a call
// x.M(…) is one when x's type, as far as the syntax tells it, is the set's
// interface, an interface it embeds, or its implementation, and M is in
// that type's method set. x's type is told from the function's receiver
// and parameters (closures' included), its explicitly typed variables,
// the variables it defines from a composite literal or from a call of a
// function or method whose single result is declared, and struct fields
// down a selector chain. Shadowing is ignored (one name, one type per
// function); calls inside the implementation's own methods are not
// counted (they are the set's insides, not its users).

import (
	"go/ast"
	"sort"
	"strings"
)

// scanCallers fills every set's Writers and Readers from the tree's files.
func (t *tree) scanCallers(sets []*setInfo) {
	type key struct {
		set    *setInfo
		writer bool
		fn     string
	}
	callers := map[key]*Caller{}
	for _, dir := range t.dirs() {
		for _, f := range t.pkgs[dir].files {
			for _, d := range f.ast.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil {
					continue
				}
				fn := funcName(f.dir, fd)
				env := t.env(f, fd)
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok {
						return true
					}
					sel, ok := call.Fun.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					typ := t.exprType(f, sel.X, env)
					for _, s := range sets {
						ms, ok := s.through[typ]
						if !ok || !ms[sel.Sel.Name] || (fd.Recv != nil && f.dir+"."+recvType(fd) == s.impl) {
							continue
						}
						k := key{s, s.mutating[sel.Sel.Name], fn}
						c := callers[k]
						if c == nil {
							c = &Caller{Func: fn, File: f.path, Line: t.line(fd.Pos())}
							callers[k] = c
						}
						line := t.line(call.Pos())
						c.Calls = append(c.Calls, Call{Method: sel.Sel.Name, Line: line, Through: short(typ),
							Upstream: upstream(t.tag, f.path, line, 0)})
					}
					return true
				})
			}
		}
	}
	for k, c := range callers {
		if k.writer {
			k.set.Writers = append(k.set.Writers, *c)
		} else {
			k.set.Readers = append(k.set.Readers, *c)
		}
	}
	for _, s := range sets {
		sortCallers(s.Writers)
		sortCallers(s.Readers)
		if s.Writers == nil {
			s.Writers = []Caller{}
		}
		if s.Readers == nil {
			s.Readers = []Caller{}
		}
	}
}

func sortCallers(cs []Caller) {
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].File != cs[j].File {
			return cs[i].File < cs[j].File
		}
		return cs[i].Line < cs[j].Line
	})
}

// dirs are the tree's package directories, sorted.
func (t *tree) dirs() []string {
	var out []string
	for d := range t.pkgs {
		out = append(out, d)
	}
	sort.Strings(out)
	return out
}

// funcName is "DIR.(*T).M", "DIR.T.M" or "DIR.F".
func funcName(dir string, fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return dir + "." + fd.Name.Name
	}
	if _, ptr := fd.Recv.List[0].Type.(*ast.StarExpr); ptr {
		return dir + ".(*" + recvType(fd) + ")." + fd.Name.Name
	}
	return dir + "." + recvType(fd) + "." + fd.Name.Name
}

// env maps the names fd declares to their types, in source order.
func (t *tree) env(f *file, fd *ast.FuncDecl) map[string]string {
	env := map[string]string{}
	if fd.Recv != nil && len(fd.Recv.List) > 0 {
		for _, n := range fd.Recv.List[0].Names {
			env[n.Name] = f.dir + "." + recvType(fd)
		}
	}
	addFields := func(fl *ast.FieldList) {
		if fl == nil {
			return
		}
		for _, p := range fl.List {
			if q := f.typeName(p.Type); q != "" {
				for _, n := range p.Names {
					env[n.Name] = q
				}
			}
		}
	}
	addFields(fd.Type.Params)
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.FuncLit:
			addFields(s.Type.Params)
		case *ast.ValueSpec:
			if s.Type != nil {
				if q := f.typeName(s.Type); q != "" {
					for _, n := range s.Names {
						env[n.Name] = q
					}
				}
			}
		case *ast.AssignStmt:
			if len(s.Lhs) == len(s.Rhs) {
				for i, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name != "_" {
						if q := t.exprType(f, s.Rhs[i], env); q != "" {
							env[id.Name] = q
						}
					}
				}
			}
		}
		return true
	})
	return env
}

// exprType is the type of e as far as the syntax tells it, "" when not.
func (t *tree) exprType(f *file, e ast.Expr, env map[string]string) string {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		return env[x.Name]
	case *ast.StarExpr:
		return t.exprType(f, x.X, env)
	case *ast.UnaryExpr:
		return t.exprType(f, x.X, env)
	case *ast.CompositeLit:
		return f.typeName(x.Type)
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && env[id.Name] == "" {
			return "" // a package's member, or a name not known
		}
		if q := t.exprType(f, x.X, env); q != "" {
			return t.fieldType(q, x.Sel.Name)
		}
	case *ast.CallExpr:
		return t.resultType(f, x.Fun, env)
	}
	return ""
}

// resultType is the single declared result type of the function fun
// names: a function of f's package or an imported one, or a method.
func (t *tree) resultType(f *file, fun ast.Expr, env map[string]string) string {
	var fd *funcDecl
	switch x := fun.(type) {
	case *ast.Ident:
		if pk := t.pkgs[f.dir]; pk != nil {
			fd = pk.funcs[x.Name]
		}
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok && env[id.Name] == "" {
			if dir, ok := f.imports[id.Name]; ok && t.pkgs[dir] != nil {
				fd = t.pkgs[dir].funcs[x.Sel.Name]
			}
		} else if q := t.exprType(f, x.X, env); q != "" {
			fd = t.method(q, x.Sel.Name)
		}
	}
	if fd == nil || fd.decl.Type.Results == nil || len(fd.decl.Type.Results.List) != 1 || len(fd.decl.Type.Results.List[0].Names) > 1 {
		return ""
	}
	q := fd.file.typeName(fd.decl.Type.Results.List[0].Type)
	if strings.HasSuffix(q, ".error") {
		return ""
	}
	return q
}
