// Package flow is the flow engine: from a channel expression read in a
// function it derives, syntactically, where the channel is made and who
// sends on it. The walk back (origins.go) goes through parameters up the
// callers (syncLoopIteration ← syncLoop ← Run ← the kubelet's start-up),
// method results such as Updates() returning a field, through interfaces to
// the module's implementations, struct fields and assignments, to where the
// channel is made; the walk forward (writers.go) from each make goes through
// assignments, struct fields, arguments into parameters and returns into
// callers, to every send on it. What feeds the writers and the go statements
// that run them is goroutines.go; cases sharing one writer, told apart by a
// value, select.go. It runs on the syntactic index (package index): no
// type-check, no go command. Each rule has a fixture of its own
// (extractor/testdata/rules, TestRule*).
package flow

import (
	"go/ast"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/syncloop/syncloop/extractor/index"
)

// Site is one place in the source a channel passes: where it is made,
// a send on it, the go statement running a writer, a call feeding a writer.
type Site struct {
	Func     string `json:"func"` // the enclosing function, "pkg/kubelet/config.(*podStorage).Merge"
	File     string `json:"file"`
	Line     int    `json:"line"`
	Upstream string `json:"upstream"`
	Code     string `json:"code"`           // the statement or expression, one line
	Note     string `json:"note,omitempty"` // "feature gate EventedPLEG", "linux", "via SyncHandler implemented by …"
}

// maxFlow bounds the locations one case's walk visits, so a pathological
// tree cannot make extraction run away.
const maxFlow = 400

// origin is one place a channel is made.
type origin struct {
	c      *index.Func
	expr   ast.Expr // the make(chan …) or ticker call
	ticker bool
	note   string
}

// loc is a place that holds a channel: a variable of a function, or a
// struct field of a module type.
type loc struct {
	fn             string // fnCtx id for a variable, "" for a field
	Dir, typ, Name string
}

type flow struct {
	x       *index.Index
	visited map[string]bool // backward: locations and calls resolved
	locs    map[loc]string  // forward: locations reached, with the note (gate) that reached them
	fns     map[loc]*index.Func
	steps   int
	writers []Site
	sends   []sendAt // the writers' send statements, for upstream
	seen    map[string]bool
	// when records, in a walk of a value rather than a channel
	// (selectors), the fields it is stored into under a switch case; sel is
	// what that walk found for the case, which upstream and goroutines
	// hold the case's callers and go statements to (select.go).
	when map[loc]when
	sel  map[loc]when
}

type sendAt struct {
	c     *index.Func
	send  *ast.SendStmt
	Path  []ast.Node
	key   string
	paths []string // the notes of the paths that reached it
	site  Site
}

// Result is what Derive finds for one channel.
type Result struct {
	Made      []Site // where the channel is made
	Writers   []Site // the sends on it
	Upstream  []Site // one level up: what feeds the writers
	Goroutine []Site // the go statements that run the writers
}

// Derive follows the channel expression ch, read in the function loop, back
// to where it is made and forward to every send on it.
func Derive(x *index.Index, loop *index.Func, ch ast.Expr) Result {
	fl := &flow{x: x, visited: map[string]bool{}, locs: map[loc]string{}, fns: map[loc]*index.Func{}, seen: map[string]bool{}}
	origins := fl.origins(ch, loop, "", 0)
	r := Result{Made: []Site{}}
	// One make reached along several paths (the GenericPLEG and the
	// EventedPLEG both return eventChannel) is one Site, its note what
	// every path shares.
	notes := map[ast.Expr][]string{}
	var uniq []origin
	for _, o := range origins {
		if _, ok := notes[o.expr]; !ok {
			uniq = append(uniq, o)
		}
		notes[o.expr] = append(notes[o.expr], o.note)
	}
	for _, o := range uniq {
		s := site(x, o.c, o.expr, pathNote(notes[o.expr]))
		if o.ticker {
			s.Note = joinNote(s.Note, "ticker: written by the Go runtime every period")
		}
		r.Made = append(r.Made, s)
		if !o.ticker {
			fl.forwardFrom(o, strings.Join(notes[o.expr], "; "))
		}
	}
	fl.finishWriters()
	fl.sel = fl.selectors(ch, loop)
	r.Writers = append([]Site{}, fl.writers...)
	r.Upstream = fl.upstream()
	r.Goroutine = fl.goroutines()
	sortSites(r.Made)
	sortSites(r.Writers)
	return r
}

func sortSites(s []Site) {
	slices.SortStableFunc(s, func(a, b Site) int {
		if a.File != b.File {
			return strings.Compare(a.File, b.File)
		}
		return a.Line - b.Line
	})
}

// site describes node n of function c.
func site(x *index.Index, c *index.Func, n ast.Node, note string) Site {
	line := c.F.Line(n.Pos())
	code := strings.TrimSpace(c.F.Lines(line, line))
	if bn := buildNote(c.F); bn != "" && !strings.Contains(note, "code "+bn) {
		note = strings.TrimPrefix(note+"; "+bn, "; ")
	}
	return Site{Func: c.SymbolName(), File: c.F.Path, Line: line, Upstream: index.UpstreamURL(x.Tag, c.F.Path, line, line), Code: code, Note: note}
}

var goBuildRE = regexp.MustCompile(`(?m)^//go:build (.+)$`)

// buildNote names the platform a file is built for: its //go:build line,
// else its _GOOS.go suffix.
func buildNote(f *index.File) string {
	head := f.Src
	if i := strings.Index(string(head), "\npackage "); i >= 0 {
		head = head[:i]
	}
	if m := goBuildRE.FindSubmatch(head); m != nil {
		return "built for " + strings.TrimSpace(string(m[1]))
	}
	base := strings.TrimSuffix(path.Base(f.Path), ".go")
	for _, goos := range []string{"linux", "windows", "darwin", "freebsd", "unsupported", "others"} {
		if strings.HasSuffix(base, "_"+goos) {
			return "built for " + goos
		}
	}
	return ""
}

// featureGateRE finds the gate of utilfeature.DefaultFeatureGate.Enabled(features.X).
var featureGateRE = regexp.MustCompile(`Enabled\(\s*[A-Za-z0-9_]*\.?([A-Z][A-Za-z0-9_]*)\s*\)`)

// gateOf says under which feature gate node n (inside path p) runs: the
// condition of an enclosing if that tests a gate, "feature gate X" in its
// body, "feature gate X off" in its else.
func gateOf(p []ast.Node, n ast.Node) string {
	var notes []string
	child := n
	for i := len(p) - 1; i >= 0; i-- {
		if is, ok := p[i].(*ast.IfStmt); ok {
			if b, ok := is.Cond.(ast.Node); ok {
				if m := featureGateRE.FindStringSubmatch(nodeText(b)); m != nil {
					switch child {
					case is.Body:
						notes = append(notes, "feature gate "+m[1])
					case is.Else:
						notes = append(notes, "feature gate "+m[1]+" off")
					}
				}
			}
		}
		child = p[i]
	}
	return strings.Join(notes, "; ")
}

// nodeText renders a (small) expression back to Go source.
func nodeText(n ast.Node) string {
	var b strings.Builder
	var write func(n ast.Node)
	write = func(n ast.Node) {
		switch t := n.(type) {
		case *ast.Ident:
			b.WriteString(t.Name)
		case *ast.SelectorExpr:
			write(t.X)
			b.WriteString("." + t.Sel.Name)
		case *ast.CallExpr:
			write(t.Fun)
			b.WriteString("(")
			for i, a := range t.Args {
				if i > 0 {
					b.WriteString(", ")
				}
				write(a)
			}
			b.WriteString(")")
		case *ast.BinaryExpr:
			write(t.X)
			b.WriteString(" " + t.Op.String() + " ")
			write(t.Y)
		case *ast.UnaryExpr:
			b.WriteString(t.Op.String())
			write(t.X)
		case *ast.ParenExpr:
			b.WriteString("(")
			write(t.X)
			b.WriteString(")")
		}
	}
	write(n)
	return b.String()
}

var viaPlatformRE = regexp.MustCompile(`\(built for ([^)]+)\)`)

// forwardFrom follows the channel made at o to every send on it. When the
// loop reaches the make only through files of one platform (at v1.37.2 the
// device manager's channel is the loop's only on Windows), its sends say so.
func (fl *flow) forwardFrom(o origin, paths string) {
	note := ""
	platforms := map[string]bool{}
	for _, m := range viaPlatformRE.FindAllStringSubmatch(paths, -1) {
		platforms[m[1]] = true
	}
	if len(platforms) == 1 {
		for p := range platforms {
			note = "the loop reads it only through code built for " + p
		}
	}
	index.WalkPath(o.c.Decl.Body, func(n ast.Node, p []ast.Node) {
		if n == o.expr {
			fl.flowsInto(o.expr, p, o.c, note)
		}
	})
}

// flowsInto follows the value of e (inside path p of c) one step: into the
// variable or field it is assigned to, the parameter it is passed as, or
// the send that writes on it.
func (fl *flow) flowsInto(e ast.Node, p []ast.Node, c *index.Func, note string) {
	if len(p) == 0 || !fl.budget() {
		return
	}
	x := fl.x
	parent := p[len(p)-1]
	switch s := parent.(type) {
	case *ast.ParenExpr:
		fl.flowsInto(s, p[:len(p)-1], c, note)
	case *ast.SendStmt:
		if s.Chan == e {
			fl.addWriter(c, s, p, note)
		}
	case *ast.AssignStmt:
		for i, r := range s.Rhs {
			if r == e && i < len(s.Lhs) && len(s.Lhs) == len(s.Rhs) {
				t := fl.target(s.Lhs[i], c)
				if w, ok := switchCase(p); ok && fl.when != nil && t.fn == "" {
					fl.when[t] = w
				}
				fl.reach(t, c, joinNote(note, gateOf(p, s)))
			}
		}
	case *ast.ValueSpec:
		for i, v := range s.Values {
			if v == e && i < len(s.Names) {
				fl.reach(loc{fn: c.ID(), Name: s.Names[i].Name}, c, note)
			}
		}
	case *ast.KeyValueExpr:
		if s.Value != e || len(p) < 2 {
			return
		}
		cl, ok := p[len(p)-2].(*ast.CompositeLit)
		if !ok {
			return
		}
		if k, ok := s.Key.(*ast.Ident); ok && cl.Type != nil {
			if t := x.ResolveType(cl.Type, c.F, c.Dir); t.OK() && len(x.TypeSpecsOf(t)) > 0 {
				if _, isStruct := x.TypeSpecsOf(t)[0].TS.Type.(*ast.StructType); isStruct {
					fl.reach(loc{Dir: t.Dir, typ: t.Name, Name: k.Name}, c, joinNote(note, gateOf(p, cl)))
					return
				}
			}
		}
		fl.flowsInto(cl, p[:len(p)-2], c, note) // a map literal's value
	case *ast.CompositeLit:
		fl.flowsInto(s, p[:len(p)-1], c, note) // a slice literal's element
	case *ast.ReturnStmt:
		fl.returned(s, p, c, note)
	case *ast.CallExpr:
		i := slices.Index(s.Args, e.(ast.Expr))
		if i < 0 {
			return
		}
		if id, ok := ast.Unparen(s.Fun).(*ast.Ident); ok && id.Name == "append" {
			fl.flowsInto(s, p[:len(p)-1], c, note)
			return
		}
		if lit, ok := ast.Unparen(s.Fun).(*ast.FuncLit); ok {
			if name := index.ParamAt(lit.Type, i); name != "" {
				fl.reach(loc{fn: c.ID(), Name: name}, c, note)
			}
			return
		}
		g := gateOf(p, s)
		for _, cal := range x.Callees(s, c) {
			if name := index.ParamAt(cal.Decl.Type, i); name != "" {
				fl.reach(loc{fn: cal.ID(), Name: name}, cal.Func, joinNote(joinNote(note, g), viaNote(cal.Via)))
			}
		}
	}
}

// returned follows a value the function c returns (in return statement r,
// inside path p) into each call of c: the config mux's ChannelWithContext
// makes a source's channel and returns it, and the caller hands it to the
// source that sends on it. A return inside a function literal returns from
// the literal, which is not followed.
func (fl *flow) returned(r *ast.ReturnStmt, p []ast.Node, c *index.Func, note string) {
	if inLiteral(p) || len(r.Results) != 1 || fl.seen["return:"+c.ID()] {
		return
	}
	fl.seen["return:"+c.ID()] = true
	for _, cs := range fl.x.CallersOf(c) {
		fl.flowsInto(cs.Call, cs.Path, cs.C, joinNote(note, gateOf(cs.Path, cs.Call)))
	}
}

// target is the location an assignment's left side writes.
func (fl *flow) target(lhs ast.Expr, c *index.Func) loc {
	switch t := lhs.(type) {
	case *ast.Ident:
		return loc{fn: c.ID(), Name: t.Name}
	case *ast.IndexExpr:
		return fl.target(t.X, c)
	case *ast.SelectorExpr:
		if rt := fl.x.TypeOf(t.X, c); rt.OK() {
			return loc{Dir: rt.Dir, typ: rt.Name, Name: t.Sel.Name}
		}
	}
	return loc{}
}

// reach records that l holds the channel and follows its uses.
func (fl *flow) reach(l loc, c *index.Func, note string) {
	if l.Name == "" || l.Name == "_" {
		return
	}
	if old, ok := fl.locs[l]; ok && (old == "" || old == note) {
		return
	}
	fl.locs[l] = note
	if l.fn != "" {
		fl.varUses(l, c, note)
		return
	}
	fl.fieldUses(l, note)
}

// varUses follows every use of variable l.Name in c.
func (fl *flow) varUses(l loc, c *index.Func, note string) {
	index.WalkPath(c.Decl.Body, func(n ast.Node, p []ast.Node) {
		id, ok := n.(*ast.Ident)
		if !ok || id.Name != l.Name || len(p) == 0 {
			return
		}
		switch par := p[len(p)-1].(type) {
		case *ast.SelectorExpr:
			if par.Sel == id {
				return
			}
		case *ast.KeyValueExpr:
			if par.Key == id {
				return
			}
		case *ast.AssignStmt:
			if slices.Contains(par.Lhs, ast.Expr(id)) {
				return
			}
		case *ast.RangeStmt:
			if par.X == id {
				if v, ok := par.Value.(*ast.Ident); ok {
					fl.reach(loc{fn: c.ID(), Name: v.Name}, c, note)
				}
			}
			return
		}
		fl.flowsInto(id, p, c, note)
	})
}

// fieldUses follows every use of field l on a value of its type.
func (fl *flow) fieldUses(l loc, note string) {
	t := index.Named{Dir: l.Dir, Name: l.typ}
	for _, c := range fl.fieldFuncs(l) {
		index.WalkPath(c.Decl.Body, func(n ast.Node, p []ast.Node) {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok || sel.Sel.Name != l.Name || len(p) == 0 {
				return
			}
			if as, ok := p[len(p)-1].(*ast.AssignStmt); ok && slices.Contains(as.Lhs, ast.Expr(sel)) {
				return
			}
			if fl.x.TypeOf(sel.X, c) != t {
				return
			}
			fl.flowsInto(sel, p, c, note)
		})
	}
}

// addWriter records a send on the channel, reached along a path whose
// feature gates and interface steps note says.
func (fl *flow) addWriter(c *index.Func, s *ast.SendStmt, p []ast.Node, note string) {
	key := c.F.Path + ":" + itoa(c.F.Line(s.Pos()))
	note = joinNote(note, gateOf(p, s))
	if fl.seen[key] {
		for i := range fl.sends {
			if fl.sends[i].key == key {
				fl.sends[i].paths = append(fl.sends[i].paths, note)
			}
		}
		return
	}
	fl.seen[key] = true
	fl.sends = append(fl.sends, sendAt{c: c, send: s, Path: slices.Clone(p), key: key, paths: []string{note}})
}

// finishWriters turns the sends found into Sites. A send reached along
// several paths is gated only if every path is, by the same gate: reached
// both with a gate on and with it off, it runs either way.
func (fl *flow) finishWriters() {
	for i := range fl.sends {
		sa := &fl.sends[i]
		note := ""
		if inLiteral(sa.Path) {
			note = "in a function literal"
		} else if roots := fl.unreachable(sa.c); roots != "" {
			note = "unreachable: no caller outside tests (" + roots + ")"
		}
		sa.site = site(fl.x, sa.c, sa.send, joinNote(note, pathNote(sa.paths)))
		fl.writers = append(fl.writers, sa.site)
	}
}

// pathNote merges the notes of the paths that reach one site.
func pathNote(paths []string) string {
	count := map[string]int{}
	var order []string
	for _, p := range paths {
		parts := map[string]bool{}
		for part := range strings.SplitSeq(p, "; ") {
			if part != "" && !parts[part] {
				parts[part] = true
				if count[part] == 0 {
					order = append(order, part)
				}
				count[part]++
			}
		}
	}
	var out []string
	for _, part := range order {
		if count[part] < len(paths) && !strings.HasPrefix(part, "via ") {
			continue // a gate not on every path; an interface step on any counts
		}
		if g, ok := strings.CutSuffix(part, " off"); ok && count[g] > 0 {
			continue
		}
		if count[part+" off"] > 0 {
			continue
		}
		out = append(out, part)
	}
	return strings.Join(out, "; ")
}

func inLiteral(p []ast.Node) bool {
	return slices.ContainsFunc(p, func(n ast.Node) bool { _, ok := n.(*ast.FuncLit); return ok })
}
