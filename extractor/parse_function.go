package extractor

// parse_function.go reads (*Kubelet).syncLoopIteration: the function, every
// clause of its top-level select, and the same-file helpers the clauses call.

import (
	"go/ast"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/syncloop/syncloop/extractor/flow"

	"github.com/syncloop/syncloop/extractor/index"
)

func (x *extraction) function() (*Function, error) {
	f, err := x.ReadParse(kubeletFile)
	if err != nil {
		return nil, x.notKubernetes(kubeletFile, err)
	}
	fd := findMethod(f.AST, "Kubelet", loopFunc)
	if fd == nil || fd.Body == nil {
		return nil, x.unsupported("no func (kl *Kubelet) %s", loopFunc)
	}
	var sel *ast.SelectStmt
	for _, st := range fd.Body.List {
		if s, ok := st.(*ast.SelectStmt); ok {
			sel = s
			break
		}
	}
	if sel == nil {
		return nil, x.unsupported("%s has no top-level select", loopFunc)
	}

	fn := &Function{
		Name:       loopFunc,
		File:       kubeletFile,
		FileSHA256: f.SHA256(),
		Start:      f.Line(fd.Pos()),
		End:        f.Line(fd.Body.Rbrace),
		Doc:        index.DocVerbatim(fd.Doc),
		Cases:      []Case{},
		Helpers:    []Helper{},
	}
	fn.DocStart = fn.Start
	if fd.Doc != nil {
		fn.DocStart = f.Line(fd.Doc.Pos())
	}
	fn.Text = f.Lines(fn.DocStart, fn.End)
	fn.Upstream = UpstreamURL(x.Tag, kubeletFile, fn.DocStart, fn.End)

	lf := x.newLoopFile(f, fd)
	x.loop = lf
	keys := map[string]int{}
	helperIdx := map[string]int{}
	for _, st := range sel.Body.List {
		cc, ok := st.(*ast.CommClause)
		if !ok {
			continue
		}
		c := lf.clause(cc)
		// Keys are unique within a function even if two clauses read the
		// same channel: the second gets "-2".
		if n := keys[c.Key]; n > 0 {
			keys[c.Key] = n + 1
			c.Key = c.Key + "-" + strconv.Itoa(n+1)
		} else {
			keys[c.Key] = 1
		}
		for _, name := range lf.helpersOf(cc.Body) {
			i, seen := helperIdx[name]
			if !seen {
				i = len(fn.Helpers)
				helperIdx[name] = i
				fn.Helpers = append(fn.Helpers, lf.helper(name))
			}
			if !slices.Contains(fn.Helpers[i].Cases, c.Key) {
				fn.Helpers[i].Cases = append(fn.Helpers[i].Cases, c.Key)
			}
		}
		fn.Cases = append(fn.Cases, c)
	}
	return fn, nil
}

// findMethod finds func (r *recv) name or func (r recv) name in f.
func findMethod(f *ast.File, recv, name string) *ast.FuncDecl {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if ok && fd.Name.Name == name && index.RecvName(fd) == recv {
			return fd
		}
	}
	return nil
}

// loopFile is kubelet.go seen from syncLoopIteration: what its parameters
// carry, what its receiver and handler are called, and which package-level
// functions the file declares (the candidate helpers).
type loopFile struct {
	x        *extraction
	F        *index.File
	fd       *ast.FuncDecl
	recv     string            // "kl"
	roots    map[string]bool   // identifiers whose calls are listed: the receiver and the handler
	chanElem map[string]string // parameter name → element type source, for channel parameters
	funcs    map[string]*ast.FuncDecl
	klog     map[string]bool // names klog is imported as
}

func (x *extraction) newLoopFile(f *index.File, fd *ast.FuncDecl) *loopFile {
	lf := &loopFile{x: x, F: f, fd: fd, roots: map[string]bool{}, chanElem: map[string]string{},
		funcs: map[string]*ast.FuncDecl{}, klog: klogNames(f.AST)}
	if fd.Recv != nil && len(fd.Recv.List[0].Names) > 0 {
		lf.recv = fd.Recv.List[0].Names[0].Name
		lf.roots[lf.recv] = true
	}
	for _, p := range fd.Type.Params.List {
		switch t := p.Type.(type) {
		case *ast.ChanType:
			for _, n := range p.Names {
				lf.chanElem[n.Name] = f.Text(t.Value)
			}
		case *ast.Ident:
			if strings.HasSuffix(t.Name, "Handler") {
				for _, n := range p.Names {
					lf.roots[n.Name] = true
				}
			}
		}
	}
	for _, d := range f.AST.Decls {
		if d, ok := d.(*ast.FuncDecl); ok && d.Recv == nil && d.Body != nil {
			lf.funcs[d.Name.Name] = d
		}
	}
	return lf
}

// clause reads one communication clause of the select.
func (lf *loopFile) clause(cc *ast.CommClause) Case {
	f := lf.F
	c := Case{Start: f.Line(cc.Case), Logs: []LogSite{}, Calls: []string{}}
	c.End = c.Start
	if n := len(cc.Body); n > 0 {
		c.End = f.EndLine(cc.Body[n-1])
	}
	var ch ast.Expr
	switch s := cc.Comm.(type) {
	case nil:
		c.Key = "default"
	case *ast.SendStmt:
		ch = s.Chan
	case *ast.ExprStmt:
		ch = index.RecvChan(s.X)
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			ch = index.RecvChan(s.Rhs[0])
		}
	}
	if cc.Comm != nil {
		c.Comm = f.Text(cc.Comm)
	}
	if ch != nil {
		c.Channel = f.Text(ch)
		c.Key = lf.caseKey(ch)
		c.Type = lf.chanType(ch)
		lf.derive(&c, ch)
	} else {
		c.Made, c.Writers, c.Upstream, c.Goroutine = []Site{}, []Site{}, []Site{}, []Site{}
	}

	for _, st := range cc.Body {
		c.Logs = append(c.Logs, lf.logsIn(st, loopFunc)...)
	}
	for _, name := range lf.helpersOf(cc.Body) {
		c.Logs = append(c.Logs, lf.logsIn(lf.funcs[name].Body, name)...)
	}
	c.Calls = lf.calls(cc.Body)
	return c
}

// caseKey names a case by its channel, stably across tags: configCh →
// config, kl.livenessManager.Updates() → liveness; anything else gets a
// slug of its source text.
func (lf *loopFile) caseKey(ch ast.Expr) string {
	switch e := ast.Unparen(ch).(type) {
	case *ast.Ident:
		if k, ok := strings.CutSuffix(e.Name, "Ch"); ok && k != "" {
			return k
		}
		return slug(e.Name)
	case *ast.CallExpr:
		// kl.<x>Manager.Updates()
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && len(e.Args) == 0 {
			if field, ok := sel.X.(*ast.SelectorExpr); ok && isIdent(field.X, lf.recv) {
				if k, ok := strings.CutSuffix(field.Sel.Name, "Manager"); ok && k != "" && sel.Sel.Name == "Updates" {
					return k
				}
			}
		}
	}
	return slug(lf.F.Text(ch))
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && name != "" && id.Name == name
}

// slug lower-cases s and joins its runs of letters and digits with "-":
// "kl.foo.Events()" → "kl-foo-events".
func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
		case r >= 'A' && r <= 'Z':
			r += 'a' - 'A'
		default:
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "case"
	}
	return b.String()
}

// chanType is the element type of the channel a case reads, as Go source
// valid in kubelet.go, or "" when it cannot be told from the source.
func (lf *loopFile) chanType(ch ast.Expr) string {
	switch e := ast.Unparen(ch).(type) {
	case *ast.Ident:
		return lf.chanElem[e.Name]
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok || len(e.Args) != 0 {
			return ""
		}
		field, ok := sel.X.(*ast.SelectorExpr)
		if !ok || !isIdent(field.X, lf.recv) {
			return ""
		}
		return lf.x.FieldMethodElem(lf.F, index.RecvName(lf.fd), field.Sel.Name, sel.Sel.Name)
	}
	return ""
}

// helpersOf lists the same-file package-level functions that stmts call,
// directly or through one another, in the order first called.
func (lf *loopFile) helpersOf(stmts []ast.Stmt) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(n ast.Node)
	visit = func(n ast.Node) {
		ast.Inspect(n, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			id, ok := call.Fun.(*ast.Ident)
			if !ok || seen[id.Name] {
				return true
			}
			d, ok := lf.funcs[id.Name]
			if !ok || d == lf.fd {
				return true
			}
			seen[id.Name] = true
			out = append(out, id.Name)
			visit(d.Body)
			return true
		})
	}
	for _, st := range stmts {
		visit(st)
	}
	return out
}

// calls lists what the clause calls on the receiver and the handler
// (handler.HandlePodAdditions, kl.cleanUpContainersInPod,
// kl.statusManager.SetContainerReadiness) and the same-file helpers it calls
// directly (handleProbeSync), deduplicated, in source order.
func (lf *loopFile) calls(stmts []ast.Stmt) []string {
	out := []string{}
	seen := map[string]bool{}
	add := func(s string) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, st := range stmts {
		ast.Inspect(st, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			switch fun := call.Fun.(type) {
			case *ast.Ident:
				if d, ok := lf.funcs[fun.Name]; ok && d != lf.fd {
					add(fun.Name)
				}
			case *ast.SelectorExpr:
				if root, ok := selectorRoot(fun); ok && lf.roots[root] {
					add(lf.F.Text(fun))
				}
			}
			return true
		})
	}
	return out
}

// selectorRoot is a in a.b.c when the chain is identifiers only.
func selectorRoot(e ast.Expr) (string, bool) {
	for {
		switch t := e.(type) {
		case *ast.SelectorExpr:
			e = t.X
		case *ast.Ident:
			return t.Name, true
		default:
			return "", false
		}
	}
}

// helper describes one same-file function a case calls.
func (lf *loopFile) helper(name string) Helper {
	d := lf.funcs[name]
	f := lf.F
	h := Helper{Name: name, Start: f.Line(d.Pos()), End: f.Line(d.Body.Rbrace), Cases: []string{}}
	h.DocStart = h.Start
	if d.Doc != nil {
		h.DocStart = f.Line(d.Doc.Pos())
	}
	h.Text = f.Lines(h.DocStart, h.End)
	h.Upstream = UpstreamURL(lf.x.Tag, f.Path, h.DocStart, h.End)
	return h
}

// derive fills the case's Made, Writers, Upstream and Goroutine from the
// channel expression ch of the loop function lf.fd (flow.Derive).
func (lf *loopFile) derive(c *Case, ch ast.Expr) {
	r := flow.Derive(lf.x.Index, &index.Func{F: lf.F, Dir: path.Dir(lf.F.Path), Decl: lf.fd}, ch)
	c.Made, c.Writers, c.Upstream, c.Goroutine = r.Made, r.Writers, r.Upstream, r.Goroutine
}
