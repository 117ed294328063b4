package volume

// entry.go finds the function that runs one reconcile pass: from
// (*reconciler).Run, through a feature-gate branch resolved by the gate's
// default at the tag (gate.go), and through methods that return the loop's
// function, to the function wait.Until is given.

import (
	"fmt"
	"go/ast"
	"strings"
)

const (
	reconcilerDir  = "pkg/kubelet/volumemanager/reconciler"
	reconcilerType = reconcilerDir + ".reconciler"
)

// entryFinder walks from Run to the reconcile pass.
type entryFinder struct {
	t     *tree
	gates gateTable
	entry Entry
	fn    *funcDecl // the entry, once found
}

func (t *tree) findEntry(gates gateTable) (Entry, *funcDecl, error) {
	run := t.method(reconcilerType, "Run")
	if run == nil {
		return Entry{}, nil, fmt.Errorf("no (*reconciler).Run in %s: the volume manager's reconciler is not where this reading looks", reconcilerDir)
	}
	ef := &entryFinder{t: t, gates: gates}
	if err := ef.follow(run, 0); err != nil {
		return Entry{}, nil, err
	}
	d := ef.fn.decl
	ef.entry.File = ef.fn.file.path
	ef.entry.Line = t.line(d.Pos())
	ef.entry.End = t.line(d.End())
	ef.entry.Upstream = upstream(t.tag, ef.entry.File, ef.entry.Line, ef.entry.End)
	ef.entry.Text = ef.fn.file.text(t, d)
	return ef.entry, ef.fn, nil
}

// follow looks for the loop in fn: a wait.Until-like call, else a gated
// branch, else a method of the reconciler that (transitively) has one.
func (ef *entryFinder) follow(fn *funcDecl, depth int) error {
	if depth > 6 {
		return fmt.Errorf("no wait.Until reached from (*reconciler).Run within 6 calls")
	}
	ef.entry.Path = append(ef.entry.Path, fn.decl.Name.Name)
	if call := findUntil(fn.decl.Body); call != nil {
		return ef.loop(fn, call)
	}
	if next, ok := ef.gated(fn); ok {
		return ef.follow(next, depth+1)
	}
	for _, name := range recvCalls(fn.decl.Body, recvName(fn.decl)) {
		m := ef.t.method(reconcilerType, name)
		if m != nil && ef.reaches(m, depth+1) {
			return ef.follow(m, depth+1)
		}
	}
	return fmt.Errorf("(*reconciler).%s at %s reaches no wait.Until", fn.decl.Name.Name, fn.file.path)
}

// reaches says whether fn calls wait.Until, directly or through the
// reconciler's methods.
func (ef *entryFinder) reaches(fn *funcDecl, depth int) bool {
	if depth > 6 {
		return false
	}
	if findUntil(fn.decl.Body) != nil {
		return true
	}
	for _, name := range recvCalls(fn.decl.Body, recvName(fn.decl)) {
		if m := ef.t.method(reconcilerType, name); m != nil && m != fn && ef.reaches(m, depth+1) {
			return true
		}
	}
	return false
}

// gated resolves an if on a feature gate in fn: the branch the gate's
// default takes, recorded with the gate.
func (ef *entryFinder) gated(fn *funcDecl) (*funcDecl, bool) {
	recv := recvName(fn.decl)
	for i, st := range fn.decl.Body.List {
		is, ok := st.(*ast.IfStmt)
		if !ok {
			continue
		}
		gate := gateIn(is.Cond, fn.file)
		if gate == "" {
			continue
		}
		on := firstRecvCall(is.Body, recv)
		var off string
		if is.Else != nil {
			off = firstRecvCall(is.Else, recv)
		} else {
			off = firstRecvCall(&ast.BlockStmt{List: fn.decl.Body.List[i+1:]}, recv)
		}
		spec := ef.gates.lookup(gate, ef.t.tag)
		ef.entry.Gate = gate
		ef.entry.PreRelease, ef.entry.GateFile, ef.entry.GateLine = spec.preRelease, spec.file, spec.line
		chosen, other := off, on
		if spec.found {
			d := spec.def
			ef.entry.Default = &d
			if d {
				chosen, other = on, off
			}
		}
		ef.entry.Other = other
		if m := ef.t.method(reconcilerType, chosen); m != nil {
			return m, true
		}
	}
	return nil, false
}

// loop records what the wait.Until call runs.
func (ef *entryFinder) loop(fn *funcDecl, call *ast.CallExpr) error {
	recv := recvName(fn.decl)
	for i, arg := range call.Args {
		name, ok := ef.loopFunc(fn, arg, recv)
		if !ok {
			continue
		}
		if i+1 < len(call.Args) {
			ef.entry.Interval = fn.file.text(ef.t, call.Args[i+1])
		}
		m := ef.t.method(reconcilerType, name)
		if m == nil {
			return fmt.Errorf("wait.Until in (*reconciler).%s runs %s, which is not a method of the reconciler", fn.decl.Name.Name, name)
		}
		ef.entry.Func = name
		ef.fn = m
		return nil
	}
	return fmt.Errorf("cannot tell what wait.Until runs at %s:%d", fn.file.path, ef.t.line(call.Pos()))
}

// loopFunc is the reconciler method a wait.Until argument runs: a method
// value (rc.reconcile), a closure's first method call, or the closure a
// method returns (rc.reconciliationLoopFunc()).
func (ef *entryFinder) loopFunc(fn *funcDecl, arg ast.Expr, recv string) (string, bool) {
	switch a := ast.Unparen(arg).(type) {
	case *ast.SelectorExpr:
		if isIdent(a.X, recv) {
			return a.Sel.Name, true
		}
	case *ast.FuncLit:
		if name := firstRecvCall(a.Body, recv); name != "" {
			return name, true
		}
	case *ast.CallExpr:
		sel, ok := a.Fun.(*ast.SelectorExpr)
		if !ok || !isIdent(sel.X, recv) {
			return "", false
		}
		m := ef.t.method(reconcilerType, sel.Sel.Name)
		if m == nil {
			return "", false
		}
		ef.entry.Path = append(ef.entry.Path, sel.Sel.Name)
		for _, st := range m.decl.Body.List {
			if rs, ok := st.(*ast.ReturnStmt); ok && len(rs.Results) == 1 {
				return ef.loopFunc(m, rs.Results[0], recvName(m.decl))
			}
		}
	}
	return "", false
}

// findUntil is the first call of wait.Until, wait.UntilWithContext,
// wait.JitterUntil… under n.
func findUntil(n ast.Node) *ast.CallExpr {
	var found *ast.CallExpr
	ast.Inspect(n, func(n ast.Node) bool {
		if found != nil {
			return false
		}
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isIdent(sel.X, "wait") && strings.Contains(sel.Sel.Name, "Until") {
				found = call
				return false
			}
		}
		return true
	})
	return found
}

// gateIn is the feature named in a DefaultFeatureGate.Enabled(features.X)
// call in cond, "" when there is none.
func gateIn(cond ast.Expr, f *file) string {
	gate := ""
	ast.Inspect(cond, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 1 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Enabled" {
			return true
		}
		if a, ok := call.Args[0].(*ast.SelectorExpr); ok {
			if id, ok := a.X.(*ast.Ident); ok && f.imports[id.Name] == featuresDir {
				gate = a.Sel.Name
			}
		}
		return gate == ""
	})
	return gate
}

// recvName is the name of a method's receiver.
func recvName(d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 || len(d.Recv.List[0].Names) == 0 {
		return ""
	}
	return d.Recv.List[0].Names[0].Name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && name != "" && id.Name == name
}

// recvCalls are the names of the receiver's methods called under n, in
// order, each once.
func recvCalls(n ast.Node, recv string) []string {
	var out []string
	seen := map[string]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && isIdent(sel.X, recv) && !seen[sel.Sel.Name] {
				seen[sel.Sel.Name] = true
				out = append(out, sel.Sel.Name)
			}
		}
		return true
	})
	return out
}

func firstRecvCall(n ast.Node, recv string) string {
	if calls := recvCalls(n, recv); len(calls) > 0 {
		return calls[0]
	}
	return ""
}
