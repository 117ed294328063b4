package extractor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"testing"

	"github.com/syncloop/syncloop/extractor/index"
)

func TestUpstreamURL(t *testing.T) {
	tests := []struct {
		tag, file string
		from, to  int
		want      string
	}{
		{"v1.37.2", "pkg/kubelet/kubelet.go", 2714, 2866, "https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/kubelet.go#L2714-L2866"},
		{"v1.20.0", "pkg/kubelet/kubelet.go", 1885, 1885, "https://github.com/kubernetes/kubernetes/blob/v1.20.0/pkg/kubelet/kubelet.go#L1885"},
		{"v1.20.0", "pkg/kubelet/kubelet.go", 12, 3, "https://github.com/kubernetes/kubernetes/blob/v1.20.0/pkg/kubelet/kubelet.go#L12"},
		{"v1.31.0-rc.1", "/pkg/kubelet/pod_workers.go", 0, 0, "https://github.com/kubernetes/kubernetes/blob/v1.31.0-rc.1/pkg/kubelet/pod_workers.go"},
		{"", "pkg/kubelet/kubelet.go", 7, 9, "https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/kubelet.go#L7-L9"},
		{"dir", "pkg/kubelet/kubelet.go", 7, 7, "https://github.com/kubernetes/kubernetes/blob/master/pkg/kubelet/kubelet.go#L7"},
	}
	for _, tt := range tests {
		if got := UpstreamURL(tt.tag, tt.file, tt.from, tt.to); got != tt.want {
			t.Errorf("UpstreamURL(%q, %q, %d, %d) = %q, want %q", tt.tag, tt.file, tt.from, tt.to, got, tt.want)
		}
	}
}

func TestSlug(t *testing.T) {
	tests := map[string]string{
		"kl.eventedPleg.Watch()": "kl-eventedpleg-watch",
		"ctx.Done()":             "ctx-done",
		"<-x[3]":                 "x-3",
		"__":                     "case",
		"podCh2":                 "podch2",
	}
	for in, want := range tests {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestLogCall classifies one call expression in each style the kubelet has
// used, and calls that look like logging but are not.
func TestLogCall(t *testing.T) {
	tests := []struct {
		expr                 string
		ok                   bool
		style, severity, msg string
		verbosity            int
	}{
		{`klog.V(2).Infof("SyncLoop (ADD, %q): %q", u.Source, pods)`, true, "printf", "info", "SyncLoop (ADD, %q): %q", 2},
		{`klog.Infof("plain %s", x)`, true, "printf", "info", "plain %s", 0},
		{`klog.Errorf("Failed cleaning pods: %v", err)`, true, "printf", "error", "Failed cleaning pods: %v", 0},
		{`klog.Warningf("Kubelet does not support snapshot update")`, true, "printf", "warning", "Kubelet does not support snapshot update", 0},
		{`klog.Fatalf("boom")`, true, "printf", "fatal", "boom", 0},
		{`klog.Exit("bye")`, true, "printf", "fatal", "bye", 0},
		{`klog.V(4).Info("SyncLoop (housekeeping)")`, true, "printf", "info", "SyncLoop (housekeeping)", 4},
		{`klog.Infoln("a", b)`, true, "printf", "info", "a", 0},
		{`klog.InfoDepth(1, "deep")`, true, "printf", "info", "deep", 0},
		{`klog.V(2).InfoS("SyncLoop ADD", "source", u.Source)`, true, "structured", "info", "SyncLoop ADD", 2},
		{`klog.InfoS("a " + "b")`, true, "structured", "info", "a b", 0},
		{`klog.ErrorS(err, "Failed cleaning pods")`, true, "structured", "error", "Failed cleaning pods", 0},
		{`klog.ErrorSDepth(1, err, "deep error")`, true, "structured", "error", "deep error", 0},
		{`klog.V(5).ErrorS(nil, "verbose error")`, true, "structured", "error", "verbose error", 5},
		{`logger.V(2).Info("SyncLoop ADD", "source", u.Source)`, true, "contextual", "info", "SyncLoop ADD", 2},
		{`logger.Info(msg)`, true, "contextual", "info", "msg", 0},
		{`logger.Error(nil, "Update channel is closed")`, true, "contextual", "error", "Update channel is closed", 0},
		{`log.Error(err, fmt.Sprintf("x %d", 1))`, true, "contextual", "error", `fmt.Sprintf("x %d", 1)`, 0},
		{`klog.FromContext(ctx).V(1).Info("SyncLoop (probe)")`, true, "contextual", "info", "SyncLoop (probe)", 1},
		{`klog.V(level).InfoS("not a literal level")`, true, "structured", "info", "not a literal level", 0},
		{`err.Error()`, false, "", "", "", 0},
		{`logger.Error(err)`, false, "", "", "", 0},
		{`logger.Info()`, false, "", "", "", 0},
		{`klog.KObj(pod)`, false, "", "", "", 0},
		{`klog.V(2).Enabled()`, false, "", "", "", 0},
		{`kl.recorder.Eventf(pod, "Warning", "x")`, false, "", "", "", 0},
		{`handler.HandlePodSyncs(pods)`, false, "", "", "", 0},
		{`fmt.Errorf("housekeeping took too long")`, false, "", "", "", 0},
		{`info("x")`, false, "", "", "", 0},
		{`pods[0].Info("x")`, false, "", "", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			f, call := parseCallFixture(t, tt.expr)
			ls, ok := logCall(call, map[string]bool{"klog": true})
			if ok != tt.ok {
				t.Fatalf("logCall ok = %v, want %v", ok, tt.ok)
			}
			if !ok {
				return
			}
			msg := messageText(f, call.Args[ls.msgArg])
			if ls.Style != tt.style || ls.Severity != tt.severity || ls.Verbosity != tt.verbosity || msg != tt.msg {
				t.Errorf("got style=%s severity=%s v=%d msg=%q; want %s %s %d %q",
					ls.Style, ls.Severity, ls.Verbosity, msg, tt.style, tt.severity, tt.verbosity, tt.msg)
			}
		})
	}
}

// parseCallFixture parses expr as the only statement of a function.
func parseCallFixture(t *testing.T, expr string) (*index.File, *ast.CallExpr) {
	t.Helper()
	src := "package p\nfunc f() {\n\t" + expr + "\n}\n"
	x := newExtraction(nil, "")
	f, err := x.ParseSource("p.go", []byte(src), false)
	if err != nil {
		t.Fatal(err)
	}
	fd := f.AST.Decls[0].(*ast.FuncDecl)
	call, ok := fd.Body.List[0].(*ast.ExprStmt).X.(*ast.CallExpr)
	if !ok {
		t.Fatalf("%s is not a call", expr)
	}
	return f, call
}

func TestKlogNames(t *testing.T) {
	tests := []struct {
		imports string
		want    []string
	}{
		{`import "k8s.io/klog/v2"`, []string{"klog"}},
		{`import "k8s.io/klog"`, []string{"klog"}},
		{`import klogv2 "k8s.io/klog/v2"`, []string{"klogv2"}},
		{`import "fmt"`, []string{"klog"}},
	}
	for _, tt := range tests {
		f, err := parser.ParseFile(token.NewFileSet(), "p.go", "package p\n"+tt.imports+"\n", parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		got := klogNames(f)
		if len(got) != len(tt.want) {
			t.Errorf("%s: klogNames = %v, want %v", tt.imports, got, tt.want)
		}
		for _, n := range tt.want {
			if !got[n] {
				t.Errorf("%s: klogNames = %v, want %v", tt.imports, got, tt.want)
			}
		}
	}
}
