package extractor

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
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
func parseCallFixture(t *testing.T, expr string) (*File, *ast.CallExpr) {
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

// TestDocVerbatim keeps what gofmt would rewrite: the pre-1.19 bullets and
// alignment of old tags, tabs of diagrams, and block comments.
func TestDocVerbatim(t *testing.T) {
	tests := []struct {
		name, comment, want string
	}{
		{"old bullets", "// * configCh: dispatch\n//             handler callback\n// * plegCh: update", "* configCh: dispatch\n            handler callback\n* plegCh: update"},
		{"diagram tabs", "// states:\n//\n//\tpending --> syncing\n//\t   |", "states:\n\n\tpending --> syncing\n\t   |"},
		{"no space after marker", "//x\n//  two", "x\n two"},
		{"block", "/*\nA block.\n\n\tindented\n*/", "\nA block.\n\n\tindented\n"},
		{"directive kept", "// T is a type.\n//go:generate stringer", "T is a type.\ngo:generate stringer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "package p\n\n" + tt.comment + "\ntype T int\n"
			f, err := parser.ParseFile(token.NewFileSet(), "p.go", src, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if got := DocVerbatim(f.Decls[0].(*ast.GenDecl).Doc); got != tt.want {
				t.Errorf("docVerbatim = %q, want %q", got, tt.want)
			}
		})
	}
	if got := DocVerbatim(nil); got != "" {
		t.Errorf("DocVerbatim(nil) = %q", got)
	}
}

func TestSplitSymbol(t *testing.T) {
	tests := []struct {
		in              string
		dir, recv, name string
		ok              bool
	}{
		{"pkg/kubelet/prober/results.(*manager).Set", "pkg/kubelet/prober/results", "manager", "Set", true},
		{"pkg/kubelet.(*Kubelet).syncLoop", "pkg/kubelet", "Kubelet", "syncLoop", true},
		{"pkg/kubelet.(Kubelet).syncLoop", "pkg/kubelet", "Kubelet", "syncLoop", true},
		{"pkg/kubelet/pleg.PodLifecycleEvent", "pkg/kubelet/pleg", "", "PodLifecycleEvent", true},
		{"pkg/kubelet.PodWorkers.UpdatePod", "pkg/kubelet", "PodWorkers", "UpdatePod", true},
		{"pkg/kubelet", "", "", "", false},
		{"pkg/kubelet.(*Kubelet", "", "", "", false},
		{"pkg/kubelet.a.b.c", "", "", "", false},
		{"pkg/kubelet.", "", "", "", false},
	}
	for _, tt := range tests {
		dir, recv, name, ok := SplitSymbol(tt.in)
		if dir != tt.dir || recv != tt.recv || name != tt.name || ok != tt.ok {
			t.Errorf("SplitSymbol(%q) = %q, %q, %q, %v; want %q, %q, %q, %v", tt.in, dir, recv, name, ok, tt.dir, tt.recv, tt.name, tt.ok)
		}
	}
}

func TestMayDeclareType(t *testing.T) {
	tests := []struct {
		src  string
		want bool
	}{
		{"type Kubelet struct{}", true},
		{"package p\n\ntype (\n\tKubelet struct{}\n)", true},
		{"type Kubelet[T any] struct{}", true},
		{"var k *Kubelet", false},
		{"type KubeletConfig struct{}", false},
		{"func (kl *Kubelet) f() {}", false},
		{"type  Kubelet = x.K", true},
	}
	for _, tt := range tests {
		if got := MayDeclareType([]byte(tt.src), "Kubelet"); got != tt.want {
			t.Errorf("MayDeclareType(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestSrcFileLines(t *testing.T) {
	src := "package p\n\n// a\nfunc f() {\n}\n"
	x := newExtraction(nil, "")
	f, err := x.ParseSource("p.go", []byte(src), true)
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Split(strings.TrimSuffix(src, "\n"), "\n")
	for from := 1; from <= len(all); from++ {
		for to := from; to <= len(all); to++ {
			want := strings.Join(all[from-1:to], "\n")
			if got := f.Lines(from, to); got != want {
				t.Errorf("lines(%d, %d) = %q, want %q", from, to, got, want)
			}
		}
	}
	if got := f.Lines(4, 3); got != "" {
		t.Errorf("lines(4, 3) = %q, want empty", got)
	}
}
