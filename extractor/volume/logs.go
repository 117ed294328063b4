package volume

// logs.go lists the logging calls of the reconciler, the populator and the
// operation generator, recognised as the first reading's are
// (extractor.LogCall), with the message resolved to its literal: a string
// literal or format as written, or the literal prefix a message helper is
// given (volumeToMount.GenerateMsgDetailed("MountVolume.SetUp succeeded",
// detail), err's GenerateErrorDetailed(…).Error()), through fmt.Sprintf. A
// verbosity held in a variable (klog.V(verbosity)) is recorded by name.

import (
	"go/ast"
	"go/token"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/syncloop/syncloop/extractor"
)

const (
	populatorDir         = "pkg/kubelet/volumemanager/populator"
	operationExecutorDir = "pkg/volume/util/operationexecutor"
	operationGenerator   = operationExecutorDir + "/operation_generator.go"
	volumeManagerFile    = "pkg/kubelet/volumemanager/volume_manager.go"
)

// logFile says whether the reading's log sites include path's.
func logFile(p string) bool {
	d := path.Dir(p)
	return d == reconcilerDir || d == populatorDir || p == operationGenerator || p == volumeManagerFile
}

func (t *tree) logSites() []LogSite {
	out := []LogSite{}
	for _, dir := range []string{reconcilerDir, populatorDir, operationExecutorDir, path.Dir(volumeManagerFile)} {
		pk := t.pkgs[dir]
		if pk == nil {
			continue
		}
		for _, f := range pk.files {
			if !logFile(f.path) {
				continue
			}
			klogs := extractor.KlogNames(f.ast)
			for _, d := range f.ast.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Body != nil {
					out = append(out, t.logsIn(f, fd, klogs)...)
				}
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out
}

func (t *tree) logsIn(f *file, fd *ast.FuncDecl, klogs map[string]bool) []LogSite {
	var out []LogSite
	name := strings.TrimPrefix(funcName(f.dir, fd), f.dir+".")
	vals := assigned(fd.Body)
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		site, arg, ok := extractor.LogCall(call, klogs)
		if !ok {
			return true
		}
		ls := LogSite{File: f.path, Line: t.line(call.Pos()), Func: name,
			Verbosity: site.Verbosity, Severity: site.Severity, Style: site.Style}
		ls.VerbosityVar = verbosityVar(call)
		for _, v := range vals[ls.VerbosityVar] {
			if n, ok := levelOf(v); ok && !slices.Contains(ls.VerbosityValues, n) {
				ls.VerbosityValues = append(ls.VerbosityValues, n)
			}
		}
		slices.Sort(ls.VerbosityValues)
		msg := call.Args[arg]
		if id, ok := msg.(*ast.Ident); ok {
			// detailedMsg := volumeToMount.GenerateMsgDetailed(…): the
			// nearest assignment before the call.
			for _, v := range vals[id.Name] {
				if v.Pos() < call.Pos() {
					msg, ls.Via = v, id.Name
				}
			}
		}
		ls.Literal, ls.Helper = literalOf(msg)
		if ls.Literal == "" {
			ls.Literal = f.text(t, call.Args[arg])
			ls.Helper = "expr"
		}
		out = append(out, ls)
		return true
	})
	return out
}

// assigned maps each name assigned under body to the values, in source
// order (x := e; x = e2; a, b := call() gives both the call).
func assigned(body *ast.BlockStmt) map[string][]ast.Expr {
	vals := map[string][]ast.Expr{}
	ast.Inspect(body, func(n ast.Node) bool {
		as, ok := n.(*ast.AssignStmt)
		if !ok || (len(as.Lhs) != len(as.Rhs) && len(as.Rhs) != 1) {
			return true
		}
		for i, l := range as.Lhs {
			rhs := as.Rhs[0] // simpleMsg, detailedMsg := v.GenerateMsg(…): both from the call
			if len(as.Lhs) == len(as.Rhs) {
				rhs = as.Rhs[i]
			}
			if id, ok := l.(*ast.Ident); ok {
				vals[id.Name] = append(vals[id.Name], rhs)
			}
		}
		return true
	})
	return vals
}

// levelOf is n in n, klog.Level(n) or any T(n) conversion of a literal.
func levelOf(e ast.Expr) (int, bool) {
	if call, ok := ast.Unparen(e).(*ast.CallExpr); ok && len(call.Args) == 1 {
		e = call.Args[0]
	}
	if lit, ok := ast.Unparen(e).(*ast.BasicLit); ok && lit.Kind == token.INT {
		n, err := strconv.Atoi(lit.Value)
		return n, err == nil
	}
	return 0, false
}

// verbosityVar is the name V's argument is held in, "" for a literal or
// no V.
func verbosityVar(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	v, ok := sel.X.(*ast.CallExpr)
	if !ok || len(v.Args) != 1 {
		return ""
	}
	if vs, ok := v.Fun.(*ast.SelectorExpr); !ok || vs.Sel.Name != "V" {
		return ""
	}
	if id, ok := ast.Unparen(v.Args[0]).(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// literalOf is the literal a message is built from, and the helper that
// builds it ("" for a literal as is, "fmt.Sprintf", "GenerateMsgDetailed",
// …); "" when the message is no literal.
func literalOf(e ast.Expr) (lit, helper string) {
	switch x := ast.Unparen(e).(type) {
	case *ast.BasicLit, *ast.BinaryExpr:
		s, ok := constString(x)
		if ok {
			return s, ""
		}
	case *ast.CallExpr:
		name := ""
		switch fn := x.Fun.(type) {
		case *ast.SelectorExpr:
			name = fn.Sel.Name
			if name == "Error" && len(x.Args) == 0 { // GenerateErrorDetailed(…).Error()
				return literalOf(fn.X)
			}
			if id, ok := fn.X.(*ast.Ident); ok && id.Name == "fmt" {
				name = "fmt." + name
			}
		case *ast.Ident:
			name = fn.Name
		}
		if len(x.Args) == 0 || !(strings.HasPrefix(name, "Generate") || name == "fmt.Sprintf" || name == "fmt.Errorf") {
			return "", ""
		}
		lit, inner := literalOf(x.Args[0])
		if lit == "" {
			return "", ""
		}
		if inner != "" && name != inner {
			return lit, name + "+" + inner
		}
		return lit, name
	}
	return "", ""
}

func constString(e ast.Expr) (string, bool) {
	switch x := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		if x.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(x.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if x.Op != token.ADD {
			return "", false
		}
		a, ok1 := constString(x.X)
		b, ok2 := constString(x.Y)
		return a + b, ok1 && ok2
	}
	return "", false
}
