package flow

// select.go: a writer shared by several cases, told apart by a
// value. The three probe cases share one results manager type, one Set and
// one worker type; what makes a worker the liveness one is the constant its
// constructor is given (newWorker(m, liveness, …)), which a switch on it
// turns into the field the worker writes through (case liveness:
// w.resultsManager = m.livenessManager). Followed forward from the case's
// own manager, that switch says which value the case's worker holds; then a
// go statement starting a worker made with another value is not the case's
// goroutine, and a call the worker makes only under another value (readiness
// never takes `if w.probeType == liveness || w.probeType == startup`) is not
// claimed. Values are matched by name (the switch's tag, the constructor's
// parameter and the field compared share the name probeType): syntax, not
// types, as the rest of the derivation.

import (
	"go/ast"
	"go/token"
	"slices"

	"github.com/syncloop/syncloop/extractor/index"
)

// when is a value a location holds only under: key (the switch tag's last
// name, "probeType") is val (the case's constant, "liveness").
type when struct{ key, val string }

// selectors follows the case's receiver value (kl.livenessManager in
// kl.livenessManager.Updates()) forward and returns the fields it is stored
// into under a switch case, with the value each holds it under.
func (fl *flow) selectors(ch ast.Expr, loop *index.Func) map[loc]when {
	call, ok := ast.Unparen(ch).(*ast.CallExpr)
	if !ok {
		return nil
	}
	fun, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	field, ok := fun.X.(*ast.SelectorExpr)
	if !ok {
		return nil
	}
	rt := fl.x.TypeOf(field.X, loop)
	if !rt.OK() {
		return nil
	}
	vf := &flow{x: fl.x, visited: map[string]bool{}, locs: map[loc]string{}, fns: map[loc]*index.Func{}, seen: map[string]bool{}, when: map[loc]when{}}
	vf.reach(loc{Dir: rt.Dir, typ: rt.Name, Name: field.Sel.Name}, loop, "")
	return vf.when
}

// switchCase is the value the statement at the end of path p runs under,
// when it is in a switch's case of one constant: switch probeType { case
// liveness: … }.
func switchCase(p []ast.Node) (when, bool) {
	for i := len(p) - 1; i >= 2; i-- {
		switch n := p[i].(type) {
		case *ast.FuncLit:
			return when{}, false
		case *ast.CaseClause:
			sw, ok := p[i-2].(*ast.SwitchStmt)
			if !ok || sw.Tag == nil || len(n.List) != 1 {
				return when{}, false
			}
			key, val := lastName(sw.Tag), lastName(n.List[0])
			return when{key, val}, key != "" && val != ""
		}
	}
	return when{}, false
}

// lastName is the name an identifier or selector ends with.
func lastName(e ast.Expr) string {
	switch t := ast.Unparen(e).(type) {
	case *ast.Ident:
		return t.Name
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}

// selected is the value the receiver of call holds only under, when it is a
// field the case's value was stored into under a switch (w.resultsManager).
func (fl *flow) selected(call *ast.CallExpr, c *index.Func) (when, bool) {
	fun, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return when{}, false
	}
	recv, ok := fun.X.(*ast.SelectorExpr)
	if !ok {
		return when{}, false
	}
	for l, w := range fl.sel {
		if l.Name == recv.Sel.Name && fl.x.TypeOf(recv.X, c) == (index.Named{Dir: l.Dir, Name: l.typ}) {
			return w, true
		}
	}
	return when{}, false
}

// taken reports whether the node at the end of path p may run when w holds:
// false when an enclosing if's condition is false under w and the node is in
// its body (or true, and the node in its else), or an enclosing switch on
// w.key has a case for other values only.
func taken(p []ast.Node, w when) bool {
	for i := len(p) - 2; i >= 0; i-- {
		child := p[i+1]
		switch s := p[i].(type) {
		case *ast.FuncLit:
			return true
		case *ast.IfStmt:
			v, known := evalWhen(s.Cond, w)
			if known && (child == s.Body && !v || child == s.Else && v) {
				return false
			}
		case *ast.CaseClause:
			if i >= 2 {
				if sw, ok := p[i-2].(*ast.SwitchStmt); ok && sw.Tag != nil && lastName(sw.Tag) == w.key && s.List != nil &&
					!slices.ContainsFunc(s.List, func(e ast.Expr) bool { return lastName(e) == w.val }) {
					return false
				}
			}
		}
	}
	return true
}

// evalWhen evaluates a condition under w, as far as it is told by w alone:
// x.key == v and != v, joined by &&, || and !, in parentheses. known is false
// for anything else.
func evalWhen(e ast.Expr, w when) (v, known bool) {
	switch t := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		if t.Op == token.NOT {
			v, known = evalWhen(t.X, w)
			return !v, known
		}
	case *ast.BinaryExpr:
		switch t.Op {
		case token.EQL, token.NEQ:
			a, b := lastName(t.X), lastName(t.Y)
			if b == w.key {
				a, b = b, a
			}
			if a != w.key || b == "" {
				return false, false
			}
			return (b == w.val) == (t.Op == token.EQL), true
		case token.LAND, token.LOR:
			x, xk := evalWhen(t.X, w)
			y, yk := evalWhen(t.Y, w)
			and := t.Op == token.LAND
			switch {
			case xk && yk:
				if and {
					return x && y, true
				}
				return x || y, true
			case xk && x != and: // false && …, true || …
				return x, true
			case yk && y != and:
				return y, true
			}
		}
	}
	return false, false
}

// madeWith is the value a go statement's worker was made with: in go
// w.run(…), the argument w's constructor was given for its parameter named
// key (w := newWorker(m, liveness, pod, c)), found in the go statement's
// block. ok is false when that cannot be told.
func (fl *flow) madeWith(g *ast.GoStmt, p []ast.Node, c *index.Func, key string) (string, bool) {
	fun, ok := g.Call.Fun.(*ast.SelectorExpr)
	if !ok || len(p) == 0 {
		return "", false
	}
	w, ok := fun.X.(*ast.Ident)
	block, isBlock := p[len(p)-1].(*ast.BlockStmt)
	if !ok || !isBlock {
		return "", false
	}
	for _, st := range block.List {
		as, ok := st.(*ast.AssignStmt)
		if !ok || len(as.Lhs) != 1 || len(as.Rhs) != 1 || lastName(as.Lhs[0]) != w.Name {
			continue
		}
		call, ok := as.Rhs[0].(*ast.CallExpr)
		if !ok {
			continue
		}
		for _, cal := range fl.x.Callees(call, c) {
			if i := index.ParamIndex(cal.Decl.Type, key); i >= 0 && i < len(call.Args) {
				return lastName(call.Args[i]), true
			}
		}
	}
	return "", false
}
