package index

// funcs.go: functions as contexts (Func), the light type inference for
// receivers and values (TypeOf: enough to tell whose field kl.pleg is, or
// which type podCfg has), and the calls that may run a function
// (CallersOf, RefsTo).

import (
	"go/ast"
	"go/token"
	"go/types"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// FlowScope are the trees searched for callers and implementations: the
// kubelet's own packages. A type or function is still resolved wherever in
// the module it is declared; only the searches "who calls F" and "who
// implements I" are bounded, which keeps the derivation to the ~4 MB of
// source the kubelet is written in rather than the module's ~100 MB.
//
// pkg/util is in it because the kubelet's config mux lived there until
// v1.2x (pkg/util/config), calling podStorage.Merge through an interface.
var FlowScope = []string{"pkg/kubelet", "cmd/kubelet", "pkg/util"}

// Func is one function declaration: where a name used in it is resolved.
type Func struct {
	F    *File
	Dir  string
	Decl *ast.FuncDecl
}

// Named is a Named type of the module: its package dir and name. The zero
// value is a type that could not be told.
type Named struct{ Dir, Name string }

func (n Named) OK() bool { return n.Name != "" }

// symbolName is the function's name as the notes write symbols:
// "pkg/kubelet/config.(*podStorage).Merge", "pkg/kubelet.NewMainKubelet".
func (c *Func) SymbolName() string {
	return FuncSymbol(c.Dir, c.Decl)
}

func FuncSymbol(dir string, fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return dir + "." + fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	if _, ok := t.(*ast.StarExpr); ok {
		return dir + ".(*" + BaseTypeName(t) + ")." + fd.Name.Name
	}
	return dir + "." + BaseTypeName(t) + "." + fd.Name.Name
}

// id identifies the function (a file name breaks ties between build-tagged
// twins such as containerManagerImpl.Updates in _linux.go and _windows.go).
func (c *Func) ID() string { return c.F.Path + ":" + c.Decl.Name.Name + ":" + RecvName(c.Decl) }

// recvIdent is the receiver's name, "" for a function.
func (c *Func) RecvIdent() string {
	if c.Decl.Recv == nil || len(c.Decl.Recv.List) == 0 || len(c.Decl.Recv.List[0].Names) == 0 {
		return ""
	}
	return c.Decl.Recv.List[0].Names[0].Name
}

// scopeDirs lists every directory with Go files under FlowScope, once.
func (x *Index) ScopeDirs() []string {
	if x.scope != nil {
		return x.scope
	}
	x.scope = []string{}
	for _, root := range FlowScope {
		fs.WalkDir(x.FS, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if d.IsDir() {
				if IsTestDouble(p) {
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
func IsTestDouble(dir string) bool {
	for el := range strings.SplitSeq(dir, "/") {
		if el == "testing" || el == "testdata" || strings.HasPrefix(el, "fake") || strings.HasPrefix(el, "mock") {
			return true
		}
	}
	return false
}

func IsTestDoubleType(name string) bool {
	for _, p := range []string{"Fake", "fake", "Mock", "mock", "Stub", "stub"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// funcsIn yields the function declarations with bodies of files of dir that
// mention want.
func (x *Index) FuncsIn(dir, want string) []*Func {
	p := x.Pkg(dir)
	if p == nil {
		return nil
	}
	var out []*Func
	for _, f := range x.FilesWith(p, want) {
		for _, d := range f.AST.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
				out = append(out, &Func{F: f, Dir: dir, Decl: fd})
			}
		}
	}
	return out
}

// methods returns the declarations of method m on type t (several when
// build-tagged files declare it more than once).
func (x *Index) Methods(t Named, m string) []*Func {
	var out []*Func
	for _, c := range x.FuncsIn(t.Dir, m) {
		if c.Decl.Name.Name == m && RecvName(c.Decl) == t.Name {
			out = append(out, c)
		}
	}
	return out
}

// funcDecl returns package-level function name of dir.
func (x *Index) FuncDecl(dir, name string) []*Func {
	var out []*Func
	for _, c := range x.FuncsIn(dir, name) {
		if c.Decl.Recv == nil && c.Decl.Name.Name == name {
			out = append(out, c)
		}
	}
	return out
}

// typeSpecsOf returns every declaration of type t (build-tagged twins).
func (x *Index) TypeSpecsOf(t Named) []FileSpec {
	p := x.Pkg(t.Dir)
	if p == nil {
		return nil
	}
	var out []FileSpec
	for _, f := range x.ParsedFiles(p, func(src []byte) bool { return MayDeclareType(src, t.Name) }) {
		if ts := TypeSpecIn(f.AST, t.Name); ts != nil {
			out = append(out, FileSpec{f, ts})
		}
	}
	return out
}

type FileSpec struct {
	F  *File
	TS *ast.TypeSpec
}

// resolveType names the type written as e in file f of package dir:
// pointers and parentheses stripped, a local or imported module type.
func (x *Index) ResolveType(e ast.Expr, f *File, dir string) Named {
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
			if d, ok := x.ImportedDir(f, id.Name); ok {
				return Named{d, t.Sel.Name}
			}
		}
	}
	return Named{}
}

// fieldType is the declared type of field name of struct t, resolved, and
// the expression as written (for a func or chan field).
func (x *Index) FieldType(t Named, name string) Named {
	for _, sp := range x.TypeSpecsOf(t) {
		st, ok := sp.TS.Type.(*ast.StructType)
		if !ok {
			continue
		}
		for _, fl := range st.Fields.List {
			for _, n := range fl.Names {
				if n.Name == name {
					return x.ResolveType(fl.Type, sp.F, t.Dir)
				}
			}
			if len(fl.Names) == 0 { // an embedded field's fields are promoted
				if e := x.ResolveType(fl.Type, sp.F, t.Dir); e.OK() && BaseTypeName(fl.Type) == name {
					return e
				}
			}
		}
	}
	return Named{}
}

// typeOf infers the named type of the value e in c, or the zero named.
func (x *Index) TypeOf(e ast.Expr, c *Func) Named {
	return x.TypeOfDepth(e, c, 0)
}

func (x *Index) TypeOfDepth(e ast.Expr, c *Func, depth int) Named {
	if depth > 6 {
		return Named{}
	}
	switch t := ast.Unparen(e).(type) {
	case *ast.Ident:
		if t.Name == c.RecvIdent() && t.Name != "" {
			return Named{c.Dir, RecvName(c.Decl)}
		}
		if pt := ParamType(c.Decl.Type, t.Name); pt != nil {
			return x.ResolveType(pt, c.F, c.Dir)
		}
		var out Named
		ast.Inspect(c.Decl.Body, func(n ast.Node) bool {
			if out.OK() {
				return false
			}
			switch s := n.(type) {
			case *ast.FuncLit:
				if pt := ParamType(s.Type, t.Name); pt != nil {
					out = x.ResolveType(pt, c.F, c.Dir)
				}
			case *ast.AssignStmt:
				for i, l := range s.Lhs {
					if id, ok := l.(*ast.Ident); ok && id.Name == t.Name && s.Tok == token.DEFINE {
						if len(s.Rhs) == len(s.Lhs) {
							out = x.TypeOfDepth(s.Rhs[i], c, depth+1)
						} else if len(s.Rhs) == 1 {
							out = x.ResultType(s.Rhs[0], c, i, depth+1)
						}
					}
				}
			case *ast.ValueSpec:
				for i, id := range s.Names {
					if id.Name != t.Name {
						continue
					}
					if s.Type != nil {
						out = x.ResolveType(s.Type, c.F, c.Dir)
					} else if i < len(s.Values) {
						out = x.TypeOfDepth(s.Values[i], c, depth+1)
					}
				}
			}
			return true
		})
		return out
	case *ast.CompositeLit:
		if t.Type != nil {
			return x.ResolveType(t.Type, c.F, c.Dir)
		}
	case *ast.UnaryExpr:
		if t.Op == token.AND {
			return x.TypeOfDepth(t.X, c, depth+1)
		}
	case *ast.StarExpr:
		return x.TypeOfDepth(t.X, c, depth+1)
	case *ast.SelectorExpr:
		if id, ok := t.X.(*ast.Ident); ok && x.IsPackageName(c, id.Name) {
			return Named{}
		}
		if rt := x.TypeOfDepth(t.X, c, depth+1); rt.OK() {
			return x.FieldType(rt, t.Sel.Name)
		}
	case *ast.CallExpr:
		return x.ResultType(t, c, 0, depth+1)
	}
	return Named{}
}

// isPackageName reports whether name is an import of c's file (and not
// shadowed by a parameter, which is the common collision).
func (x *Index) IsPackageName(c *Func, name string) bool {
	if ParamType(c.Decl.Type, name) != nil || name == c.RecvIdent() {
		return false
	}
	for _, im := range c.F.AST.Imports {
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
	_, ok := x.ImportedDir(c.F, name)
	return ok
}

// paramType is the type of parameter name of ft, or nil.
func ParamType(ft *ast.FuncType, name string) ast.Expr {
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
func ParamIndex(ft *ast.FuncType, name string) int {
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
func ParamAt(ft *ast.FuncType, i int) string {
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
func (x *Index) ResultType(call ast.Expr, c *Func, idx, depth int) Named {
	ce, ok := ast.Unparen(call).(*ast.CallExpr)
	if !ok {
		return x.TypeOfDepth(call, c, depth)
	}
	for _, cal := range x.Callees(ce, c) {
		res := cal.Decl.Type.Results
		if res == nil {
			continue
		}
		i := 0
		for _, fl := range res.List {
			n := max(1, len(fl.Names))
			if idx < i+n {
				if t := x.ResolveType(fl.Type, cal.F, cal.Dir); t.OK() {
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
func (x *Index) Callees(ce *ast.CallExpr, c *Func) []Callee {
	var out []Callee
	switch fun := ast.Unparen(ce.Fun).(type) {
	case *ast.Ident:
		for _, d := range x.FuncDecl(c.Dir, fun.Name) {
			out = append(out, Callee{Func: d})
		}
	case *ast.SelectorExpr:
		if id, ok := fun.X.(*ast.Ident); ok && x.IsPackageName(c, id.Name) {
			if d, ok := x.ImportedDir(c.F, id.Name); ok {
				for _, d := range x.FuncDecl(d, fun.Sel.Name) {
					out = append(out, Callee{Func: d})
				}
			}
			return out
		}
		rt := x.TypeOf(fun.X, c)
		if !rt.OK() {
			return nil
		}
		return x.MethodCallees(rt, fun.Sel.Name)
	}
	return out
}

// methodCallees are the declarations a call of method m on a value of type
// t may run.
func (x *Index) MethodCallees(t Named, m string) []Callee {
	var out []Callee
	if _, iface := x.InterfaceMethods(t, 0); iface {
		for _, impl := range x.Implementations(t) {
			for _, d := range x.Methods(impl, m) {
				out = append(out, Callee{Func: d, Via: t.Name + " implemented by " + ImplName(impl, d)})
			}
		}
		return out
	}
	for _, d := range x.Methods(t, m) {
		out = append(out, Callee{Func: d})
	}
	return out
}

func ImplName(t Named, d *Func) string {
	if _, ok := d.Decl.Recv.List[0].Type.(*ast.StarExpr); ok {
		return t.Dir + ".(*" + t.Name + ")"
	}
	return t.Dir + "." + t.Name
}

// CallSite is one call of a function found in FlowScope.
type CallSite struct {
	C    *Func
	Call *ast.CallExpr
	Path []ast.Node // ancestors of call inside c.Decl.Body, outermost first
}

// callersOf finds the calls in FlowScope (and in the function's own package)
// that may run target: by name, with the receiver's type, when it can be
// inferred, the target's type or an interface the target's type implements.
func (x *Index) CallersOf(target *Func) []CallSite {
	if cs, ok := x.callers[target.ID()]; ok {
		return cs
	}
	name := target.Decl.Name.Name
	recv := RecvName(target.Decl)
	var out []CallSite
	dirs := append([]string{target.Dir}, x.ScopeDirs()...)
	seenDir := map[string]bool{}
	for _, d := range dirs {
		if seenDir[d] {
			continue
		}
		seenDir[d] = true
		for _, c := range x.FuncsIn(d, name+"(") {
			WalkPath(c.Decl.Body, func(n ast.Node, path []ast.Node) {
				ce, ok := n.(*ast.CallExpr)
				if !ok || len(ce.Args) != NumParams(target.Decl.Type) && !Variadic(target.Decl.Type) {
					return
				}
				if x.MayCall(ce, c, target, name, recv) {
					out = append(out, CallSite{C: c, Call: ce, Path: slices.Clone(path)})
				}
			})
		}
	}
	x.callers[target.ID()] = out
	return out
}

// mayCall reports whether the call ce in c may run target.
func (x *Index) MayCall(ce *ast.CallExpr, c *Func, target *Func, name, recv string) bool {
	switch fun := ast.Unparen(ce.Fun).(type) {
	case *ast.Ident:
		return recv == "" && fun.Name == name && c.Dir == target.Dir
	case *ast.SelectorExpr:
		if fun.Sel.Name != name {
			return false
		}
		if id, ok := fun.X.(*ast.Ident); ok && x.IsPackageName(c, id.Name) {
			d, ok := x.ImportedDir(c.F, id.Name)
			return recv == "" && ok && d == target.Dir
		}
		if recv == "" {
			return false
		}
		rt := x.TypeOf(fun.X, c)
		if !rt.OK() {
			return false
		}
		if rt == (Named{target.Dir, recv}) {
			return true
		}
		if _, iface := x.InterfaceMethods(rt, 0); iface {
			return slices.Contains(x.Implementations(rt), Named{target.Dir, recv})
		}
	}
	return false
}

func NumParams(ft *ast.FuncType) int {
	n := 0
	for _, p := range ft.Params.List {
		n += max(1, len(p.Names))
	}
	return n
}

func Variadic(ft *ast.FuncType) bool {
	l := ft.Params.List
	if len(l) == 0 {
		return false
	}
	_, ok := l[len(l)-1].Type.(*ast.Ellipsis)
	return ok
}

// walkPath visits every node under root with its ancestors (root first).
func WalkPath(root ast.Node, visit func(n ast.Node, path []ast.Node)) {
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
// (x.Relist passed to wait.Until), in FlowScope.
func (x *Index) RefsTo(fn *Func) []CallSite {
	key := "refs:" + fn.ID()
	if cs, ok := x.callers[key]; ok {
		return cs
	}
	name := fn.Decl.Name.Name
	recv := RecvName(fn.Decl)
	var out []CallSite
	out = append(out, x.CallersOf(fn)...)
	dirs := append([]string{fn.Dir}, x.ScopeDirs()...)
	seenDir := map[string]bool{}
	for _, d := range dirs {
		if seenDir[d] {
			continue
		}
		seenDir[d] = true
		for _, c := range x.FuncsIn(d, name) {
			WalkPath(c.Decl.Body, func(n ast.Node, p []ast.Node) {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != name || recv == "" || len(p) == 0 {
					return
				}
				if call, ok := p[len(p)-1].(*ast.CallExpr); ok && call.Fun == sel {
					return // a call: callersOf has it
				}
				rt := x.TypeOf(sel.X, c)
				if rt != (Named{fn.Dir, recv}) {
					if _, iface := x.InterfaceMethods(rt, 0); !rt.OK() || !iface || !slices.Contains(x.Implementations(rt), Named{fn.Dir, recv}) {
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
