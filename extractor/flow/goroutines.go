package flow

// goroutines.go is the last steps of the derivation (writers.go): what feeds the writers one level up (a fan-in's senders, or
// the callers of the sending function) and the go statement that runs each.

import (
	"go/ast"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/syncloop/syncloop/extractor/index"
)

// upstream is one level of what feeds the writers: for a send that
// forwards a value received from another channel (a fan-in), the sends on
// that channel; otherwise the calls of the function that sends, and when a
// call hands on a value received from a channel (the config mux's listen
// passing each update to Merge), the sends on that channel too: the
// sources that feed the fan-in.
func (fl *flow) upstream() []Site {
	out := []Site{}
	seen := map[string]bool{}
	add := func(s Site) {
		k := s.File + ":" + itoa(s.Line)
		if !seen[k] {
			seen[k] = true
			out = append(out, s)
		}
	}
	for _, sa := range fl.sends {
		if src := receivedFrom(sa.send.Value, sa.Path); src != nil {
			for _, w := range fl.sendsOn(src, sa.c) {
				w.Note = joinNote("feeds the fan-in at "+path.Base(sa.site.File)+":"+itoa(sa.site.Line), w.Note)
				add(w)
			}
			continue
		}
		if inLiteral(sa.Path) {
			continue
		}
		for _, cs := range fl.x.CallersOf(sa.c) {
			if w, ok := fl.selected(cs.Call, cs.C); ok && !taken(append(slices.Clone(cs.Path), cs.Call), w) {
				continue // a branch the case's worker never takes
			}
			s := site(fl.x, cs.C, cs.Call, gateOf(cs.Path, cs.Call))
			s.Note = joinNote("calls "+shortFunc(sa.site.Func), s.Note)
			add(s)
			for _, arg := range cs.Call.Args {
				src := receivedFrom(arg, cs.Path)
				if src == nil {
					continue
				}
				for _, w := range fl.sendsOn(src, cs.C) {
					w.Note = joinNote("feeds "+shortFunc(cs.C.SymbolName())+" at "+path.Base(s.File)+":"+itoa(s.Line), w.Note)
					add(w)
				}
			}
		}
	}
	sortSites(out)
	return out
}

// sendsOn derives, in a walk of its own, the sends on the channel src of c.
func (fl *flow) sendsOn(src ast.Expr, c *index.Func) []Site {
	sub := &flow{x: fl.x, visited: map[string]bool{}, locs: map[loc]string{}, fns: map[loc]*index.Func{}, seen: map[string]bool{}}
	for _, o := range sub.origins(src, c, "", 0) {
		if !o.ticker {
			sub.forwardFrom(o, o.note)
		}
	}
	sub.finishWriters()
	return sub.writers
}

// receivedFrom is the channel the value e (inside path p) was received
// from, when e is a variable bound by `for v := range ch` or `v := <-ch`.
func receivedFrom(e ast.Expr, p []ast.Node) ast.Expr {
	id, ok := e.(*ast.Ident)
	if !ok {
		return nil
	}
	for i := len(p) - 1; i >= 0; i-- {
		switch s := p[i].(type) {
		case *ast.RangeStmt:
			if k, ok := s.Key.(*ast.Ident); ok && k.Name == id.Name {
				return s.X
			}
		case *ast.BlockStmt:
			for _, st := range s.List {
				as, ok := st.(*ast.AssignStmt)
				if !ok || len(as.Rhs) != 1 {
					continue
				}
				if l, ok := as.Lhs[0].(*ast.Ident); ok && l.Name == id.Name {
					if ch := index.RecvChan(as.Rhs[0]); ch != nil {
						return ch
					}
				}
			}
		case *ast.FuncLit, *ast.FuncDecl:
			return nil
		}
	}
	return nil
}

// shortFunc drops the package path: "(*podStorage).Merge".
func shortFunc(s string) string {
	if i := strings.LastIndex(s, "/"); i >= 0 {
		s = s[i+1:]
	}
	if _, rest, ok := strings.Cut(s, "."); ok {
		return rest
	}
	return s
}

// goroutines finds, for each writer, the go statement that runs it: the
// go func(){…}() the send is in, else a go statement that calls the
// sending function (or passes it as a value, as wait.Until(g.Relist, …)
// does), searched up to three callers up.
func (fl *flow) goroutines() []Site {
	out := []Site{}
	seen := map[string]bool{}
	for _, sa := range fl.sends {
		var found *Site
		for i := len(sa.Path) - 1; i >= 0 && found == nil; i-- {
			if g, ok := sa.Path[i].(*ast.GoStmt); ok {
				s := site(fl.x, sa.c, g, "")
				found = &s
			}
		}
		starts := []Site{}
		if found != nil {
			starts = append(starts, *found)
		} else {
			starts = fl.goStmtsFor(sa.c)
		}
		for _, s := range starts {
			s.Note = joinNote("runs "+shortFunc(sa.site.Func)+" ("+path.Base(sa.site.File)+":"+itoa(sa.site.Line)+")", s.Note)
			k := s.File + ":" + itoa(s.Line)
			if !seen[k] {
				seen[k] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// goStmtsFor searches breadth-first up the callers of w for the go
// statement that starts it: the first found, or, for a case told apart by a
// value (fl.sel), every go statement at that depth whose worker is not made
// with another value (madeWith).
func (fl *flow) goStmtsFor(w *index.Func) []Site {
	// One value tells the case's workers apart; fields stored under
	// different values (none in the kubelet) tell nothing.
	var sel *when
	for _, s := range fl.sel {
		if sel != nil && *sel != s {
			sel = nil
			break
		}
		sel = &s
	}
	level := []*index.Func{w}
	done := map[string]bool{}
	for depth := 0; depth < 4 && len(level) > 0; depth++ {
		var next []*index.Func
		var found []Site
		for _, fn := range level {
			if done[fn.ID()] {
				continue
			}
			done[fn.ID()] = true
			for _, g := range fl.goStmtsStarting(fn) {
				if sel == nil {
					return []Site{g.site}
				}
				if v, ok := fl.madeWith(g.stmt, g.Path, g.c, sel.key); !ok || v == sel.val {
					found = append(found, g.site)
				}
			}
			for _, r := range fl.x.RefsTo(fn) {
				next = append(next, r.C)
			}
		}
		if len(found) > 0 {
			return found
		}
		level = next
	}
	return nil
}

// goAt is a go statement, with the function and path it is in.
type goAt struct {
	c    *index.Func
	stmt *ast.GoStmt
	Path []ast.Node
	site Site
}

// goStmtsStarting finds the go statements that call fn, pass it as a
// function value, or run a literal that calls it.
func (fl *flow) goStmtsStarting(fn *index.Func) []goAt {
	var out []goAt
	for _, r := range fl.x.RefsTo(fn) {
		for i := len(r.Path) - 1; i >= 0; i-- {
			if g, ok := r.Path[i].(*ast.GoStmt); ok {
				out = append(out, goAt{r.C, g, r.Path[:i], site(fl.x, r.C, g, "")})
				break
			}
			if _, ok := r.Path[i].(*ast.FuncLit); ok {
				// A literal counts only when a go statement runs it: go
				// func(){…}(), or go wait.Until(func(){…}, …).
				if i > 1 {
					if _, ok := r.Path[i-1].(*ast.CallExpr); ok {
						if g, ok := r.Path[i-2].(*ast.GoStmt); ok {
							out = append(out, goAt{r.C, g, r.Path[:i-2], site(fl.x, r.C, g, "")})
						}
					}
				}
				break
			}
		}
	}
	return out
}

// maxReach bounds the functions unreachable visits walking up from one.
const maxReach = 64

// unreachable walks up from fn through everything that calls it or uses it
// as a value (refsTo, which reads no _test.go file) and, when the walk ends
// with no go statement, no function literal and no main or init, only at
// functions nothing calls (at v1.31.0 podStorage.sync, called only by
// PodConfig.Sync, which only tests call), names those functions. It
// returns "" when fn may run: a caller chain reaches a start, or the walk
// is cut short by maxReach.
func (fl *flow) unreachable(fn *index.Func) string {
	var roots []string
	done := map[string]bool{}
	level := []*index.Func{fn}
	for len(level) > 0 {
		var next []*index.Func
		for _, f := range level {
			if done[f.ID()] {
				continue
			}
			if done[f.ID()] = true; len(done) > maxReach {
				return ""
			}
			if name := f.Decl.Name.Name; f.Decl.Recv == nil && (name == "main" || name == "init") {
				return ""
			}
			refs := fl.x.RefsTo(f)
			if len(refs) == 0 {
				roots = append(roots, shortFunc(f.SymbolName()))
			}
			for _, r := range refs {
				if slices.ContainsFunc(r.Path, func(n ast.Node) bool {
					_, lit := n.(*ast.FuncLit)
					_, goStmt := n.(*ast.GoStmt)
					return lit || goStmt
				}) {
					return ""
				}
				next = append(next, r.C)
			}
		}
		level = next
	}
	slices.Sort(roots)
	return strings.Join(slices.Compact(roots), ", ")
}

func itoa(n int) string { return strconv.Itoa(n) }
