package extractor

// flow.go is the syntactic index the writer derivation (writers.go) runs on:
// functions as contexts, a light type inference for receivers and values
// (enough to tell whose field kl.pleg is, or which type podCfg has), callers
// of a function, and the module's implementations of an interface. It reads
// only the module's own packages and never type-checks: a name it cannot
// resolve (a third-party type, a generic) is left unknown, never guessed.

import (
	"go/ast"
	"go/token"
	"go/types"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// flowScope are the trees searched for callers and implementations: the
// kubelet's own packages. A type or function is still resolved wherever in
// the module it is declared; only the searches "who calls F" and "who
// implements I" are bounded, which keeps the derivation to the ~4 MB of
// source the kubelet is written in rather than the module's ~100 MB.
//
// pkg/util is in it because the kubelet's config mux lived there until
// v1.2x (pkg/util/config), calling podStorage.Merge through an interface.
var flowScope = []string{"pkg/kubelet", "cmd/kubelet", "pkg/util"}

// Func is one function declaration: where a name used in it is resolved.
type Func struct {
	f    *File
	dir  string
	decl *ast.FuncDecl
}

// Named is a Named type of the module: its package dir and name. The zero
// value is a type that could not be told.
type Named struct{ dir, Name string }

func (n Named) ok() bool { return n.Name != "" }

// symbolName is the function's name as the notes write symbols:
// "pkg/kubelet/config.(*podStorage).Merge", "pkg/kubelet.NewMainKubelet".
func (c *Func) symbolName() string {
	return funcSymbol(c.dir, c.decl)
}

func funcSymbol(dir string, fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return dir + "." + fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if _, ok := t.(*ast.StarExpr); ok {
		return dir + ".(*" + baseTypeName(t) + ")." + fd.Name.Name
	}
	return dir + "." + baseTypeName(t) + "." + fd.Name.Name
}

// id identifies the function (a file name breaks ties between build-tagged
// twins such as containerManagerImpl.Updates in _linux.go and _windows.go).
func (c *Func) id() string { return c.f.path + ":" + c.decl.Name.Name + ":" + recvName(c.decl) }

// recvIdent is the receiver's name, "" for a function.
func (c *Func) recvIdent() string {
	if c.decl.Recv == nil || len(c.decl.Recv.List) == 0 || len(c.decl.Recv.List[0].Names) == 0 {
		return ""
	}
	return c.decl.Recv.List[0].Names[0].Name
}

// scopeDirs lists every directory with Go files under flowScope, once.
func (x *extraction) scopeDirs() []string {
	if x.scope != nil {
		return x.scope
	}
	x.scope = []string{}
	for _, root := range flowScope {
		fs.WalkDir(x.fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if isTestDouble(p) {
					return fs.SkipDir
				}
				x.scope = append(x.scope, p)
			}
			return nil
		})
	}
	return x.scope
}

// isTestDouble reports whether a directory holds test doubles (fakes,
// mocks, testing helpers): non-test files, but not what the kubelet runs.
func isTestDouble(dir string) bool {
	for el := range strings.SplitSeq(dir, "/") {
		if el == "testing" || el == "testdata" || strings.HasPrefix(el, "fake") || strings.HasPrefix(el, "mock") {
			return true
		}
	}
	return false
}

func isTestDoubleType(name string) bool {
	for _, p := range []string{"Fake", "fake", "Mock", "mock", "Stub", "stub"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// funcsIn yields the function declarations with bodies of files of dir that
// mention want.
func (x *extraction) funcsIn(dir, want string) []*Func {
	p := x.pkg(dir)
	if p == nil {
		return nil
	}
	var out []*Func
	for _, f := range x.filesWith(p, want) {
		for _, d := range f.file.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				out = append(out, &Func{f: f, dir: dir, decl: fd})
			}
		}
	}
	return out
}

// methods returns the declarations of method m on type t (several when
// build-tagged files declare it more than once).
func (x *extraction) methods(t Named, m string) []*Func {
	var out []*Func
	for _, c := range x.funcsIn(t.dir, m) {
		if c.decl.Name.Name == m && recvName(c.decl) == t.Name {
			out = append(out, c)
		}
	}
	return out
}

// funcDecl returns package-level function name of dir.
func (x *extraction) funcDecl(dir, name string) []*Func {
	var out []*Func
	for _, c := range x.funcsIn(dir, name) {
		if c.decl.Recv == nil && c.decl.Name.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// typeSpecsOf returns every declaration of type t (build-tagged twins).
func (x *extraction) typeSpecsOf(t Named) []FileSpec {
	p := x.pkg(t.dir)
	if p == nil {
		return nil
	}
	var out []FileSpec
	for _, f := range x.parsedFiles(p, func(src []byte) bool { return mayDeclareType(src, t.Name) }) {
		if ts := typeSpecIn(f.file, t.Name); ts != nil {
			out = append(out, FileSpec{f, ts})
		}
	}
	return out
}

type FileSpec struct {
	f  *File
	ts *ast.TypeSpec
}

// resolveType names the type written as e in file f of package dir:
// pointers and parentheses stripped, a local or imported module type.
func (x *extraction) resolveType(e ast.Expr, f *File, dir string) Named {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
			continue
		case *ast.ParenExpr:
			e = t.X
			continue
		case *ast.IndexExpr:
			e = t.X
			continue
		}
		break
	}
	switch t := e.(type) {
	case *ast.Ident:
		if types.Universe.Lookup(t.Name) != nil {
			return Named{}
		}
		return Named{dir, t.Name}
	case *ast.SelectorExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			if d, ok := x.importedDir(f, id.Name); ok {
				return Named{d, t.Sel.Name}
			}
		}
	}
	return Named{}
}

// fieldType is the declared type of field name of struct t, resolved, and
// the expression as written (for a func or chan field).
func (x *extraction) fieldType(t Named, name string) Named {
	for _, sp := range x.typeSpecsOf(t) {
		st, ok := sp.ts.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, fl := range st.Fields.List {
			for _, n := range fl.Names {
				if n.Name == name {
					return x.resolveType(fl.Type, sp.f, t.dir)
				}
			}
			if len(fl.Names) == 0 { // an embedded field's fields are promoted
				if e := x.resolveType(fl.Type, sp.f, t.dir); e.ok() && baseTypeName(fl.Type) == name {
					return e
				}
			}
		}
	}
	return Named{}
}

// typeOf infers the named type of the value e in c, or the zero named.
func (x *extraction) typeOf(e ast.Expr, c *Func) Named {
	return x.typeOfDepth(e, c, 0)
}

func (x *extraction) typeOfDepth(e ast.Expr, c *Func, depth int) Named {
	if depth > 6 {
		return Named{}
	}
	switch t := ast.Unparen(e).(type) {
	case *ast.Ident:
		if t.Name == c.recvIdent() && t.Name != "" {
			return Named{c.dir, recvName(c.decl)}
		}
		if pt := paramType(c.decl.Type, t.Name); pt != nil {
			return x.resolveType(pt, c.f, c.dir)
		}
		var out Named
		ast.Inspect(c.decl.Body, func(n ast.Node) bool {
			if out.ok() {
				return false
			}
			switch s := n.(type) {
			case *ast.FuncLit:
				if pt := paramType(s.Type, t.Name); pt != nil {
					out = x.resolveType(pt, c.f, c.dir)
				}
			case *ast.AssignStmt:
				for i, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == t.Name && s.Tok == token.DEFINE {
						if len(s.Rhs) == len(s.Lhs) {
							out = x.typeOfDepth(s.Rhs[i], c, depth+1)
						} else if len(s.Rhs) == 1 {
							out = x.resultType(s.Rhs[0], c, i, depth+1)
						}
					}
				}
			case *ast.ValueSpec:
				for i, id := range s.Names {
					if id.Name != t.Name {
						continue
					}
					if s.Type != nil {
						out = x.resolveType(s.Type, c.f, c.dir)
					} else if i < len(s.Values) {
						out = x.typeOfDepth(s.Values[i], c, depth+1)
					}
				}
			}
			return true
		})
		return out
	case *ast.CompositeLit:
		if t.Type != nil {
			return x.resolveType(t.Type, c.f, c.dir)
		}
	case *ast.UnaryExpr:
		if t.Op == token.AND {
			return x.typeOfDepth(t.X, c, depth+1)
		}
	case *ast.StarExpr:
		return x.typeOfDepth(t.X, c, depth+1)
	case *ast.SelectorExpr:
		if id, ok := t.X.(*ast.Ident); ok && x.isPackageName(c, id.Name) {
			return Named{}
		}
		if rt := x.typeOfDepth(t.X, c, depth+1); rt.ok() {
			return x.fieldType(rt, t.Sel.Name)
		}
	case *ast.CallExpr:
		return x.resultType(t, c, 0, depth+1)
	}
	return Named{}
}

// isPackageName reports whether name is an import of c's file (and not
// shadowed by a parameter, which is the common collision).
func (x *extraction) isPackageName(c *Func, name string) bool {
	if paramType(c.decl.Type, name) != nil || name == c.recvIdent() {
		return false
	}
	for _, im := range c.f.file.Imports {
		p := strings.Trim(im.Path.Value, `"`)
		if im.Name != nil {
			if im.Name.Name == name {
				return true
			}
			continue
		}
		if path.Base(p) == name {
			return true
		}
	}
	_, ok := x.importedDir(c.f, name)
	return ok
}

// paramType is the type of parameter name of ft, or nil.
func paramType(ft *ast.FuncType, name string) ast.Expr {
	if ft == nil || ft.Params == nil {
		return nil
	}
	for _, p := range ft.Params.List {
		for _, n := range p.Names {
			if n.Name == name {
				return p.Type
			}
		}
	}
	return nil
}

// paramIndex is the position of parameter name in ft, -1 when none.
func paramIndex(ft *ast.FuncType, name string) int {
	i := 0
	for _, p := range ft.Params.List {
		if len(p.Names) == 0 {
			i++
			continue
		}
		for _, n := range p.Names {
			if n.Name == name {
				return i
			}
			i++
		}
	}
	return -1
}

// paramAt is the name of the i-th parameter of ft, "" when unnamed or none.
func paramAt(ft *ast.FuncType, i int) string {
	j := 0
	for _, p := range ft.Params.List {
		if len(p.Names) == 0 {
			j++
			continue
		}
		for _, n := range p.Names {
			if j == i {
				return n.Name
			}
			j++
		}
	}
	return ""
}

// resultType is the type of the idx-th result of the call.
func (x *extraction) resultType(call ast.Expr, c *Func, idx, depth int) Named {
	ce, ok := ast.Unparen(call).(*ast.CallExpr)
	if !ok {
		return x.typeOfDepth(call, c, depth)
	}
	for _, cal := range x.callees(ce, c) {
		res := cal.decl.Type.Results
		if res == nil {
			continue
		}
		i := 0
		for _, fl := range res.List {
			n := max(1, len(fl.Names))
			if idx < i+n {
				if t := x.resolveType(fl.Type, cal.f, cal.dir); t.ok() {
					return t
				}
				break
			}
			i += n
		}
	}
	return Named{}
}

// Callee is one function a call may run, and how it was reached: through
// an interface, which implementation.
type Callee struct {
	*Func
	Via string // "SyncHandler implemented by (*Kubelet)" when through an interface
}

// callees resolves the function(s) a call may run: a package function, a
// method of a concrete type, or every module implementation's method when
// the receiver is an interface.
func (x *extraction) callees(ce *ast.CallExpr, c *Func) []Callee {
	var out []Callee
	switch fun := ast.Unparen(ce.Fun).(type) {
	case *ast.Ident:
		for _, d := range x.funcDecl(c.dir, fun.Name) {
			out = append(out, Callee{Func: d})
		}
	case *ast.SelectorExpr:
		if id, ok := fun.X.(*ast.Ident); ok && x.isPackageName(c, id.Name) {
			if d, ok := x.importedDir(c.f, id.Name); ok {
				for _, d := range x.funcDecl(d, fun.Sel.Name) {
					out = append(out, Callee{Func: d})
				}
			}
			return out
		}
		rt := x.typeOf(fun.X, c)
		if !rt.ok() {
			return nil
		}
		return x.methodCallees(rt, fun.Sel.Name)
	}
	return out
}

// methodCallees are the declarations a call of method m on a value of type
// t may run.
func (x *extraction) methodCallees(t Named, m string) []Callee {
	var out []Callee
	if _, iface := x.interfaceMethods(t, 0); iface {
		for _, impl := range x.implementations(t) {
			for _, d := range x.methods(impl, m) {
				out = append(out, Callee{Func: d, Via: t.Name + " implemented by " + implName(impl, d)})
			}
		}
		return out
	}
	for _, d := range x.methods(t, m) {
		out = append(out, Callee{Func: d})
	}
	return out
}

func implName(t Named, d *Func) string {
	if _, ok := d.decl.Recv.List[0].Type.(*ast.StarExpr); ok {
		return t.dir + ".(*" + t.Name + ")"
	}
	return t.dir + "." + t.Name
}

// CallSite is one call of a function found in flowScope.
type CallSite struct {
	C    *Func
	Call *ast.CallExpr
	Path []ast.Node // ancestors of call inside c.decl.Body, outermost first
}

// callersOf finds the calls in flowScope (and in the function's own package)
// that may run target: by name, with the receiver's type, when it can be
// inferred, the target's type or an interface the target's type implements.
func (x *extraction) callersOf(target *Func) []CallSite {
	if cs, ok := x.callers[target.id()]; ok {
		return cs
	}
	name := target.decl.Name.Name
	recv := recvName(target.decl)
	var out []CallSite
	dirs := append([]string{target.dir}, x.scopeDirs()...)
	seenDir := map[string]bool{}
	for _, d := range dirs {
		if seenDir[d] {
			continue
		}
		seenDir[d] = true
		for _, c := range x.funcsIn(d, name+"(") {
			walkPath(c.decl.Body, func(n ast.Node, path []ast.Node) {
				ce, ok := n.(*ast.CallExpr)
				if !ok || len(ce.Args) != numParams(target.decl.Type) && !variadic(target.decl.Type) {
					return
				}
				if x.mayCall(ce, c, target, name, recv) {
					out = append(out, CallSite{C: c, Call: ce, Path: slices.Clone(path)})
				}
			})
		}
	}
	x.callers[target.id()] = out
	return out
}

// mayCall reports whether the call ce in c may run target.
func (x *extraction) mayCall(ce *ast.CallExpr, c *Func, target *Func, name, recv string) bool {
	switch fun := ast.Unparen(ce.Fun).(type) {
	case *ast.Ident:
		return recv == "" && fun.Name == name && c.dir == target.dir
	case *ast.SelectorExpr:
		if fun.Sel.Name != name {
			return false
		}
		if id, ok := fun.X.(*ast.Ident); ok && x.isPackageName(c, id.Name) {
			d, ok := x.importedDir(c.f, id.Name)
			return recv == "" && ok && d == target.dir
		}
		if recv == "" {
			return false
		}
		rt := x.typeOf(fun.X, c)
		if !rt.ok() {
			return false
		}
		if rt == (Named{target.dir, recv}) {
			return true
		}
		if _, iface := x.interfaceMethods(rt, 0); iface {
			return slices.Contains(x.implementations(rt), Named{target.dir, recv})
		}
	}
	return false
}

func numParams(ft *ast.FuncType) int {
	n := 0
	for _, p := range ft.Params.List {
		n += max(1, len(p.Names))
	}
	return n
}

func variadic(ft *ast.FuncType) bool {
	l := ft.Params.List
	if len(l) == 0 {
		return false
	}
	_, ok := l[len(l)-1].Type.(*ast.Ellipsis)
	return ok
}

// walkPath visits every node under root with its ancestors (root first).
func walkPath(root ast.Node, visit func(n ast.Node, path []ast.Node)) {
	var stack []ast.Node
	ast.Inspect(root, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return false
		}
		visit(n, stack)
		stack = append(stack, n)
		return true
	})
}

// refsTo are the calls of fn and the places fn is used as a function value
// (x.Relist passed to wait.Until), in flowScope.
func (x *extraction) refsTo(fn *Func) []CallSite {
	key := "refs:" + fn.id()
	if cs, ok := x.callers[key]; ok {
		return cs
	}
	name := fn.decl.Name.Name
	recv := recvName(fn.decl)
	var out []CallSite
	out = append(out, x.callersOf(fn)...)
	dirs := append([]string{fn.dir}, x.scopeDirs()...)
	seenDir := map[string]bool{}
	for _, d := range dirs {
		if seenDir[d] {
			continue
		}
		seenDir[d] = true
		for _, c := range x.funcsIn(d, name) {
			walkPath(c.decl.Body, func(n ast.Node, p []ast.Node) {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != name || recv == "" || len(p) == 0 {
					return
				}
				if call, ok := p[len(p)-1].(*ast.CallExpr); ok && call.Fun == sel {
					return // a call: callersOf has it
				}
				rt := x.typeOf(sel.X, c)
				if rt != (Named{fn.dir, recv}) {
					if _, iface := x.interfaceMethods(rt, 0); !rt.ok() || !iface || !slices.Contains(x.implementations(rt), Named{fn.dir, recv}) {
						return
					}
				}
				if call, ok := p[len(p)-1].(*ast.CallExpr); ok {
					out = append(out, CallSite{C: c, Call: call, Path: slices.Clone(p[:len(p)-1])})
				}
			})
		}
	}
	x.callers[key] = out
	return out
}
