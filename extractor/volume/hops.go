package volume

// hops.go follows what a phase starts: its calls (and those of the
// reconciler's methods it calls) on a field of interface type whose
// implementation the module's constructor names (rc.operationExecutor is
// an OperationExecutor; NewOperationExecutor returns &operationExecutor{}),
// into that implementation's method, and from there the same way into the
// generator's functions it calls (oe.operationGenerator.GenerateMountVolumeFunc),
// whose writes of the sets, and those of the generator's own methods they
// call, are the writes the phase's operation makes, on the goroutine that
// runs it (the call of a field's Run, when there is one).

import (
	"go/ast"
	"path"
	"slices"
	"sort"
)

// implOf is the implementation of interface q: the type New<Name> in q's
// package returns a pointer to; "" when there is none.
func (t *tree) implOf(q string) string {
	dir, name := splitType(q)
	pk := t.pkgs[dir]
	if pk == nil || pk.ifaces[name] == nil {
		return ""
	}
	return t.constructed(pk, name)
}

// fieldCall is a call recv.field.Method(…) on a field of interface type,
// resolved to the implementation's method.
type fieldCall struct {
	call   *ast.CallExpr
	method string
	impl   *funcDecl
	implQ  string
}

// fieldCalls lists the calls under n on recv's fields (recv of type recvQ)
// that resolve to an implementation.
func (t *tree) fieldCalls(n ast.Node, recv, recvQ string) []fieldCall {
	var out []fieldCall
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		fld, ok := sel.X.(*ast.SelectorExpr)
		if !ok || !isIdent(fld.X, recv) {
			return true
		}
		impl := t.implOf(t.fieldType(recvQ, fld.Sel.Name))
		if m := t.method(impl, sel.Sel.Name); m != nil {
			out = append(out, fieldCall{call: call, method: sel.Sel.Name, impl: m, implQ: impl})
		}
		return true
	})
	return out
}

// findStarts lists what phase m starts, and the writes each makes.
func (t *tree) findStarts(m *funcDecl, writes map[string][]string) []Start {
	var out []Start
	for _, fn := range t.phaseMethods(m) {
		for _, fc := range t.fieldCalls(fn.decl.Body, recvName(fn.decl), reconcilerType) {
			s := t.start(fc, writes)
			if len(s.Generators) == 0 {
				continue // IsOperationPending and the like: nothing started
			}
			s.File, s.Line, s.In = fn.file.path, t.line(fc.call.Pos()), fn.decl.Name.Name
			out = append(out, s)
		}
	}
	return out
}

// phaseMethods is m and the reconciler's methods it calls, one level.
func (t *tree) phaseMethods(m *funcDecl) []*funcDecl {
	out := []*funcDecl{m}
	for _, name := range recvCalls(m.decl.Body, recvName(m.decl)) {
		if c := t.method(reconcilerType, name); c != nil && c != m {
			out = append(out, c)
		}
	}
	return out
}

// start follows one operation executor call into its implementation and
// the generator functions that calls.
func (t *tree) start(fc fieldCall, writes map[string][]string) Start {
	d := fc.impl.decl
	s := Start{Call: fc.method, Impl: funcName(fc.impl.file.dir, d), ImplFile: fc.impl.file.path, ImplLine: t.line(d.Pos())}
	recv := recvName(d)
	var ws []string
	for _, gc := range t.fieldCalls(d.Body, recv, fc.implQ) {
		gd := gc.impl.decl
		if gd.Name.Name == "Run" || len(writes[funcName(gc.impl.file.dir, gd)]) == 0 && !hasHelperWrites(t, gc.impl, writes) {
			continue
		}
		if !slices.Contains(s.Generators, gc.method) {
			s.Generators = append(s.Generators, gc.method)
		}
		ws = append(ws, writes[funcName(gc.impl.file.dir, gd)]...)
		for _, h := range recvCalls(gd.Body, recvName(gd)) {
			if hm := t.method(gc.implQ, h); hm != nil {
				ws = append(ws, writes[funcName(hm.file.dir, hm.decl)]...)
			}
		}
	}
	ast.Inspect(d.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok && s.RunBy == "" {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Run" {
				if fld, ok := sel.X.(*ast.SelectorExpr); ok && isIdent(fld.X, recv) {
					s.RunBy = fc.impl.file.text(t, sel)
				}
			}
		}
		return s.RunBy == ""
	})
	sort.Strings(ws)
	s.Writes = slices.Compact(ws)
	return s
}

// hasHelperWrites says whether fn's receiver methods that fn calls write a
// set.
func hasHelperWrites(t *tree, fn *funcDecl, writes map[string][]string) bool {
	for _, h := range recvCalls(fn.decl.Body, recvName(fn.decl)) {
		if hm := t.method(fn.file.dir+"."+recvType(fn.decl), h); hm != nil && len(writes[funcName(hm.file.dir, hm.decl)]) > 0 {
			return true
		}
	}
	return false
}

// writesByFunc maps each writer function to the mutating methods it calls,
// "Set.Method".
func writesByFunc(sets []*setInfo) map[string][]string {
	out := map[string][]string{}
	for _, s := range sets {
		for _, w := range s.Writers {
			for _, c := range w.Calls {
				out[w.Func] = append(out[w.Func], s.Name+"."+c.Method)
			}
		}
	}
	return out
}

// findGoroutines lists the go statements of the volume manager's package
// that run a method of a module type: the reconciler's Run, the
// populator's Run, each on a goroutine of its own. A receiver of
// interface type is resolved to its implementation as fieldCalls does.
func (t *tree) findGoroutines() []Goroutine {
	out := []Goroutine{}
	pk := t.pkgs[path.Dir(volumeManagerFile)]
	if pk == nil {
		return out
	}
	for _, f := range pk.files {
		for _, d := range f.ast.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			env := t.env(f, fd)
			ast.Inspect(fd.Body, func(n ast.Node) bool {
				gs, ok := n.(*ast.GoStmt)
				if !ok {
					return true
				}
				sel, ok := gs.Call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				q := t.exprType(f, sel.X, env)
				if impl := t.implOf(q); impl != "" {
					q = impl
				}
				if m := t.method(q, sel.Sel.Name); m != nil {
					line := t.line(gs.Pos())
					out = append(out, Goroutine{Runs: funcName(m.file.dir, m.decl), File: f.path, Line: line,
						Text: f.text(t, gs), Upstream: upstream(t.tag, f.path, line, 0)})
				}
				return true
			})
		}
	}
	return out
}
