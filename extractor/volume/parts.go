package volume

// parts.go lists the phases the entry calls, in order: every statement
// that calls one of the reconciler's own methods, with the if it is under.
// A phase's direction is derived from its first range loop: over the
// desired state (add-missing); over the actual state, testing the desired
// (remove-extra); over anything else (what reconstruction found on disk),
// by the set the loop tests: the desired (remove-extra: what it lacks goes)
// or only the actual (add-missing).

import (
	"go/ast"
	"sort"
)

// partFinder carries what the walk of the entry needs.
type partFinder struct {
	t        *tree
	entry    *funcDecl
	recv     string
	setField map[string]*setInfo // reconciler field → the set it holds
	ready    map[string]bool     // names assigned from recv.readyToUnmount()
	writes   map[string][]string // writer function → the writes it makes
	parts    []Part
}

func (t *tree) findParts(entry *funcDecl, sets []*setInfo) []Part {
	pf := &partFinder{t: t, entry: entry, recv: recvName(entry.decl), setField: map[string]*setInfo{}, ready: map[string]bool{}, writes: writesByFunc(sets)}
	for _, s := range sets {
		dir, name := splitType(reconcilerType)
		if st := t.pkgs[dir].structs[name]; st != nil {
			f := t.pkgs[dir].fileOf(st)
			for _, fld := range st.Fields.List {
				if f.typeName(fld.Type) == s.iface {
					for _, n := range fld.Names {
						pf.setField[n.Name] = s
					}
				}
			}
		}
	}
	pf.walk(entry.decl.Body.List, nil)
	if pf.parts == nil {
		pf.parts = []Part{}
	}
	return pf.parts
}

// walk visits statements in order; guard is the innermost if around them.
func (pf *partFinder) walk(list []ast.Stmt, guard ast.Expr) {
	for _, st := range list {
		switch s := st.(type) {
		case *ast.AssignStmt:
			if len(s.Lhs) == 1 && len(s.Rhs) == 1 && pf.isReadyCall(s.Rhs[0]) {
				if id, ok := s.Lhs[0].(*ast.Ident); ok {
					pf.ready[id.Name] = true
				}
			}
		case *ast.IfStmt:
			pf.walk(s.Body.List, s.Cond)
			if blk, ok := s.Else.(*ast.BlockStmt); ok {
				pf.walk(blk.List, s.Cond)
			}
		case *ast.ExprStmt:
			if call, ok := s.X.(*ast.CallExpr); ok {
				pf.call(call, guard)
			}
		}
	}
}

func (pf *partFinder) isReadyCall(e ast.Expr) bool {
	call, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	return ok && isIdent(sel.X, pf.recv) && sel.Sel.Name == "readyToUnmount"
}

// call records a call of a reconciler method as a part.
func (pf *partFinder) call(call *ast.CallExpr, guard ast.Expr) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || !isIdent(sel.X, pf.recv) {
		return
	}
	m := pf.t.method(reconcilerType, sel.Sel.Name)
	if m == nil {
		return
	}
	t := pf.t
	p := Part{
		Key: sel.Sel.Name, Func: "(*reconciler)." + sel.Sel.Name, File: m.file.path,
		Line: t.line(m.decl.Pos()), End: t.line(m.decl.End()), CallLine: t.line(call.Pos()),
	}
	p.Upstream = upstream(t.tag, p.File, p.Line, p.End)
	if guard != nil {
		p.Guard = pf.entry.file.text(t, guard)
		id, isID := guard.(*ast.Ident)
		p.ReadyToUnmount = (isID && pf.ready[id.Name]) || pf.isReadyCall(guard)
	}
	pf.direction(&p, m)
	p.Starts = t.findStarts(m, pf.writes)
	p.Text = m.file.text(t, m.decl)
	pf.parts = append(pf.parts, p)
}

// direction reads the phase's first range loop.
func (pf *partFinder) direction(p *Part, m *funcDecl) {
	var loop *ast.RangeStmt
	ast.Inspect(m.decl.Body, func(n ast.Node) bool {
		if r, ok := n.(*ast.RangeStmt); ok && loop == nil {
			loop = r
		}
		return loop == nil
	})
	if loop == nil {
		return
	}
	recv := recvName(m.decl)
	p.Ranges = m.file.text(pf.t, loop.X)
	if s := pf.setOf(loop.X, recv); s != nil {
		p.RangesSet = s.Name
	}
	tested := map[string]bool{}
	ast.Inspect(loop.Body, func(n ast.Node) bool {
		if call, ok := n.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
				if s := pf.setOf(sel.X, recv); s != nil && !s.mutating[sel.Sel.Name] {
					tested[s.Name] = true
				}
			}
		}
		return true
	})
	for name := range tested {
		p.Tests = append(p.Tests, name)
	}
	sort.Strings(p.Tests)
	switch {
	case p.RangesSet == "DesiredStateOfWorld":
		p.Direction = AddMissing
	case p.RangesSet == "ActualStateOfWorld" && tested["DesiredStateOfWorld"]:
		p.Direction = RemoveExtra
	case p.RangesSet == "" && tested["DesiredStateOfWorld"]:
		p.Direction = RemoveExtra
	case p.RangesSet == "" && tested["ActualStateOfWorld"]:
		p.Direction = AddMissing
	}
}

// setOf is the set e is a method call on or a field of: recv.field or
// recv.field.Method(…).
func (pf *partFinder) setOf(e ast.Expr, recv string) *setInfo {
	if call, ok := e.(*ast.CallExpr); ok {
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
			e = sel.X
		}
	}
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || !isIdent(sel.X, recv) {
		return nil
	}
	return pf.setField[sel.Sel.Name]
}
