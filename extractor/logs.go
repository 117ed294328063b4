package extractor

// logs.go recognises the kubelet's logging calls in every style it has used
// since v1.20: klog printf (klog.V(2).Infof, klog.Errorf, klog.Warningf),
// klog structured (klog.V(2).InfoS, klog.ErrorS(err, msg)) and contextual
// logr (logger.V(2).Info(msg), logger.Error(err, msg)), by syntax alone.

import (
	"go/ast"
	"go/token"
	"strconv"
	"strings"

	"github.com/syncloop/syncloop/extractor/index"
)

// klogNames is the set of names k8s.io/klog is imported as in f.
func klogNames(f *ast.File) map[string]bool {
	names := map[string]bool{}
	for _, im := range f.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil || (p != "k8s.io/klog" && !strings.HasPrefix(p, "k8s.io/klog/v")) {
			continue
		}
		switch {
		case im.Name == nil:
			names["klog"] = true
		case im.Name.Name != "_" && im.Name.Name != ".":
			names[im.Name.Name] = true
		}
	}
	if len(names) == 0 {
		names["klog"] = true
	}
	return names
}

// logsIn lists the logging calls under n (closures included), in source
// order, as made by the function called funcName.
func (lf *loopFile) logsIn(n ast.Node, funcName string) []LogSite {
	var out []LogSite
	ast.Inspect(n, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return true
		}
		if ls, ok := logCall(call, lf.klog); ok {
			ls.File = lf.F.Path
			ls.Line = lf.F.Line(call.Pos())
			ls.Func = funcName
			ls.Message = messageText(lf.F, call.Args[ls.msgArg])
			out = append(out, ls.LogSite)
		}
		return true
	})
	return out
}

// logSite is a LogSite before its position is known, with the index of the
// argument that holds the message.
type logSite struct {
	LogSite
	msgArg int
}

// logCall classifies call as a logging call. The receiver is klog (under
// any of klogs), a call of klog (klog.FromContext(ctx).Info), or any other
// identifier, taken for a logr.Logger (logger.Info, log.Error); each through
// an optional V(n).
func logCall(call *ast.CallExpr, klogs map[string]bool) (logSite, bool) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return logSite{}, false
	}
	method := sel.Sel.Name
	recv := sel.X
	var ls logSite
	if v, ok := recv.(*ast.CallExpr); ok {
		if vs, ok := v.Fun.(*ast.SelectorExpr); ok && vs.Sel.Name == "V" && len(v.Args) == 1 {
			ls.Verbosity = verbosity(v.Args[0])
			recv = vs.X
		}
	}
	isKlog := false
	switch r := recv.(type) {
	case *ast.Ident:
		isKlog = klogs[r.Name]
	case *ast.CallExpr:
		// klog.FromContext(ctx), klog.Background(), klog.LoggerWithName(…)
		s, ok := r.Fun.(*ast.SelectorExpr)
		if !ok {
			return logSite{}, false
		}
		if id, ok := s.X.(*ast.Ident); !ok || !klogs[id.Name] {
			return logSite{}, false
		}
	default:
		return logSite{}, false
	}

	if !isKlog {
		// A logr.Logger: Info(msg, kv…) and Error(err, msg, kv…).
		ls.Style = "contextual"
		switch method {
		case "Info":
			ls.Severity, ls.msgArg = "info", 0
		case "Error":
			ls.Severity, ls.msgArg = "error", 1
		default:
			return logSite{}, false
		}
		return ls, len(call.Args) > ls.msgArg
	}

	// klog: <Severity><Kind>[Depth], Kind one of "", "ln", "f", "S".
	rest := method
	switch {
	case strings.HasPrefix(rest, "Info"):
		ls.Severity, rest = "info", rest[len("Info"):]
	case strings.HasPrefix(rest, "Warning"):
		ls.Severity, rest = "warning", rest[len("Warning"):]
	case strings.HasPrefix(rest, "Error"):
		ls.Severity, rest = "error", rest[len("Error"):]
	case strings.HasPrefix(rest, "Fatal"):
		ls.Severity, rest = "fatal", rest[len("Fatal"):]
	case strings.HasPrefix(rest, "Exit"):
		ls.Severity, rest = "fatal", rest[len("Exit"):]
	default:
		return logSite{}, false
	}
	if r, ok := strings.CutSuffix(rest, "Depth"); ok {
		ls.msgArg++ // the depth comes first
		rest = r
	}
	switch rest {
	case "", "ln", "f":
		ls.Style = "printf"
	case "S":
		ls.Style = "structured"
		if ls.Severity == "error" {
			ls.msgArg++ // ErrorS(err, msg, …)
		}
	default:
		return logSite{}, false
	}
	return ls, len(call.Args) > ls.msgArg
}

// verbosity is n in V(n) when n is an integer literal, else 0.
func verbosity(e ast.Expr) int {
	if lit, ok := ast.Unparen(e).(*ast.BasicLit); ok && lit.Kind == token.INT {
		if n, err := strconv.Atoi(lit.Value); err == nil {
			return n
		}
	}
	return 0
}

// messageText is a string literal (or a + of them) unquoted; any other
// expression as its source text.
func messageText(f *index.File, e ast.Expr) string {
	if s, ok := constString(e); ok {
		return s
	}
	return f.Text(e)
}

func constString(e ast.Expr) (string, bool) {
	switch t := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		if t.Kind != token.STRING {
			return "", false
		}
		s, err := strconv.Unquote(t.Value)
		return s, err == nil
	case *ast.BinaryExpr:
		if t.Op != token.ADD {
			return "", false
		}
		a, ok1 := constString(t.X)
		b, ok2 := constString(t.Y)
		return a + b, ok1 && ok2
	}
	return "", false
}
