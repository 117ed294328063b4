package index

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

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
	x := New(nil, "")
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
