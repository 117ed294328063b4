package flow

// origins.go is the backward half of the derivation (writers.go): from the channel a case receives from, back through
// variables, fields, parameters and call results to where it is made.

import (
	"go/ast"
	"go/token"
	"strings"

	"github.com/syncloop/syncloop/extractor/index"
)

// budget counts one step of the walk and reports whether maxFlow allows it.
func (fl *flow) budget() bool {
	fl.steps++
	return fl.steps <= maxFlow
}

// origins walks e (a channel value in c) back to where it is made.
func (fl *flow) origins(e ast.Expr, c *index.Func, note string, depth int) []origin {
	if depth > 14 || !fl.budget() {
		return nil
	}
	x := fl.x
	switch t := ast.Unparen(e).(type) {
	case *ast.Ident:
		return fl.identOrigins(t.Name, c, note, depth)
	case *ast.SelectorExpr:
		if id, ok := t.X.(*ast.Ident); ok && x.IsPackageName(c, id.Name) {
			return nil // a package-level variable: not followed
		}
		if rt := x.TypeOf(t.X, c); rt.OK() {
			if out := fl.fieldOrigins(loc{Dir: rt.Dir, typ: rt.Name, Name: t.Sel.Name}, note, depth); len(out) > 0 || t.Sel.Name != "C" {
				return out
			}
		}
		if t.Sel.Name == "C" { // a ticker's or timer's channel
			return fl.origins(t.X, c, note, depth+1)
		}
	case *ast.UnaryExpr:
		if t.Op == token.AND {
			return fl.origins(t.X, c, note, depth+1)
		}
	case *ast.IndexExpr:
		return fl.origins(t.X, c, note, depth+1)
	case *ast.TypeAssertExpr:
		return fl.origins(t.X, c, note, depth+1)
	case *ast.CallExpr:
		return fl.callOrigins(t, c, note, depth)
	case *ast.CompositeLit:
		// a map or slice of channels counts as one of them: its elements'
		// origins (map[string]<-chan T{"deviceManager": cm.deviceManager.Updates()})
		var out []origin
		for _, el := range t.Elts {
			if kv, ok := el.(*ast.KeyValueExpr); ok {
				el = kv.Value
			}
			out = append(out, fl.origins(el, c, note, depth+1)...)
		}
		return out
	}
	return nil
}

var tickerFuncs = map[string]bool{"NewTicker": true, "NewTimer": true, "Tick": true, "After": true, "NewFakeTicker": false}

func (fl *flow) callOrigins(ce *ast.CallExpr, c *index.Func, note string, depth int) []origin {
	x := fl.x
	switch fun := ast.Unparen(ce.Fun).(type) {
	case *ast.Ident:
		if fun.Name == "make" && len(ce.Args) > 0 {
			if _, ok := ce.Args[0].(*ast.ChanType); ok {
				return []origin{{c: c, expr: ce, note: note}}
			}
			return nil
		}
	case *ast.SelectorExpr:
		if tickerFuncs[fun.Sel.Name] {
			return []origin{{c: c, expr: ce, ticker: true, note: note}}
		}
	case *ast.ParenExpr, *ast.ChanType, *ast.ArrayType:
		if len(ce.Args) == 1 { // a conversion
			return fl.origins(ce.Args[0], c, note, depth+1)
		}
	}
	key := "call:" + c.F.Path + ":" + itoa(int(ce.Pos())) + ":" + note
	if fl.visited[key] {
		return nil
	}
	fl.visited[key] = true
	var out []origin
	for _, cal := range x.Callees(ce, c) {
		n := note
		if cal.Via != "" {
			via := "via " + cal.Via
			if bn := buildNote(cal.F); bn != "" {
				via += " (" + bn + ")"
			}
			n = joinNote(note, via)
		}
		for _, r := range returns(cal.Decl) {
			if len(r.Results) > 0 {
				out = append(out, fl.origins(r.Results[0], cal.Func, n, depth+1)...)
			}
		}
	}
	if len(out) == 0 {
		if sel, ok := ast.Unparen(ce.Fun).(*ast.SelectorExpr); ok && sel.Sel.Name == "C" && len(ce.Args) == 0 {
			return fl.origins(sel.X, c, note, depth+1) // clock.Ticker's C()
		}
	}
	return out
}

func joinNote(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "" || strings.Contains(a, b):
		return a
	}
	return a + "; " + b
}

// returns are the return statements of fd's own body (not of its literals).
func returns(fd *ast.FuncDecl) []*ast.ReturnStmt {
	var out []*ast.ReturnStmt
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			return false
		case *ast.ReturnStmt:
			out = append(out, n)
		}
		return true
	})
	return out
}

// identOrigins resolves a variable of c: its assignments in c, its
// parameter's arguments at every caller, a function literal's arguments.
func (fl *flow) identOrigins(name string, c *index.Func, note string, depth int) []origin {
	key := "var:" + c.ID() + ":" + name + ":" + note
	if fl.visited[key] {
		return nil
	}
	fl.visited[key] = true
	var out []origin
	if i := index.ParamIndex(c.Decl.Type, name); i >= 0 {
		for _, cs := range fl.x.CallersOf(c) {
			if i < len(cs.Call.Args) {
				out = append(out, fl.origins(cs.Call.Args[i], cs.C, joinNote(note, gateOf(cs.Path, cs.Call)), depth+1)...)
			}
		}
	}
	index.WalkPath(c.Decl.Body, func(n ast.Node, p []ast.Node) {
		switch s := n.(type) {
		case *ast.FuncLit:
			if i := index.ParamIndex(s.Type, name); i >= 0 && len(p) > 0 {
				if call, ok := p[len(p)-1].(*ast.CallExpr); ok && call.Fun == s && i < len(call.Args) {
					out = append(out, fl.origins(call.Args[i], c, note, depth+1)...)
				}
			}
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				if identOrIndexOf(l) != name {
					continue
				}
				if len(s.Rhs) == len(s.Lhs) {
					out = append(out, fl.origins(s.Rhs[i], c, note, depth+1)...)
				} else if len(s.Rhs) == 1 {
					out = append(out, fl.nthOrigins(s.Rhs[0], i, c, note, depth+1)...)
				}
			}
		case *ast.ValueSpec:
			for i, id := range s.Names {
				if id.Name == name && i < len(s.Values) {
					out = append(out, fl.origins(s.Values[i], c, note, depth+1)...)
				}
			}
		case *ast.RangeStmt:
			if v, ok := s.Value.(*ast.Ident); ok && v.Name == name {
				out = append(out, fl.origins(s.X, c, note, depth+1)...)
			}
		}
	})
	return out
}

// identOrIndexOf is the variable an assignment's left side writes: x for
// x and for x[k] (a map or slice of channels counts as one of them).
func identOrIndexOf(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		if id, ok := t.X.(*ast.Ident); ok {
			return id.Name
		}
	}
	return ""
}

// nthOrigins follows the i-th result of a multi-value call.
func (fl *flow) nthOrigins(e ast.Expr, i int, c *index.Func, note string, depth int) []origin {
	ce, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return nil
	}
	var out []origin
	for _, cal := range fl.x.Callees(ce, c) {
		for _, r := range returns(cal.Decl) {
			if i < len(r.Results) {
				out = append(out, fl.origins(r.Results[i], cal.Func, joinNote(note, viaNote(cal.Via)), depth+1)...)
			}
		}
	}
	return out
}

func viaNote(via string) string {
	if via == "" {
		return ""
	}
	return "via " + via
}

// fieldOrigins resolves a struct field: its assignments and composite
// literals in the type's package (and in FlowScope for an exported field).
func (fl *flow) fieldOrigins(l loc, note string, depth int) []origin {
	key := "field:" + l.Dir + "." + l.typ + "." + l.Name + ":" + note
	if fl.visited[key] {
		return nil
	}
	fl.visited[key] = true
	x := fl.x
	t := index.Named{Dir: l.Dir, Name: l.typ}
	var out []origin
	for _, c := range fl.fieldFuncs(l) {
		index.WalkPath(c.Decl.Body, func(n ast.Node, p []ast.Node) {
			switch s := n.(type) {
			case *ast.AssignStmt:
				for i, lhs := range s.Lhs {
					sel, ok := lhs.(*ast.SelectorExpr)
					if !ok || sel.Sel.Name != l.Name || x.TypeOf(sel.X, c) != t {
						continue
					}
					if len(s.Rhs) == len(s.Lhs) {
						out = append(out, fl.origins(s.Rhs[i], c, joinNote(note, gateOf(p, s)), depth+1)...)
					} else if len(s.Rhs) == 1 {
						out = append(out, fl.nthOrigins(s.Rhs[0], i, c, joinNote(note, gateOf(p, s)), depth+1)...)
					}
				}
			case *ast.CompositeLit:
				if s.Type == nil || x.ResolveType(s.Type, c.F, c.Dir) != t {
					return
				}
				for _, el := range s.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == l.Name {
							out = append(out, fl.origins(kv.Value, c, joinNote(note, gateOf(p, s)), depth+1)...)
						}
					}
				}
			}
		})
	}
	return out
}

// fieldFuncs are the functions that may mention field l.
func (fl *flow) fieldFuncs(l loc) []*index.Func {
	out := fl.x.FuncsIn(l.Dir, l.Name)
	if token.IsExported(l.Name) {
		for _, d := range fl.x.ScopeDirs() {
			if d != l.Dir {
				out = append(out, fl.x.FuncsIn(d, "."+l.Name)...)
			}
		}
	}
	return out
}
