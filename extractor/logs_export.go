package extractor

import "go/ast"

// LogCall classifies call as a logging call as the Reading's log sites are
// (klog printf, klog structured, contextual logr; see logs.go), for other
// readings (extractor/volume). It returns the site's Verbosity (0 when
// V's argument is not an integer literal), Severity and Style, and the
// index of the argument holding the message.
func LogCall(call *ast.CallExpr, klogs map[string]bool) (site LogSite, msgArg int, ok bool) {
	ls, ok := logCall(call, klogs)
	return ls.LogSite, ls.msgArg, ok
}

// KlogNames is the set of names k8s.io/klog is imported as in f ("klog"
// when it is not imported).
func KlogNames(f *ast.File) map[string]bool { return klogNames(f) }
