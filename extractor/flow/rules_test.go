package flow_test

// rules_test.go holds each rule of the flow engine (writers.go, origins.go,
// goroutines.go, select.go) to a fixture of its own: testdata/rules/NAME.txt
// is a tiny Kubernetes tree, written for the rule, whose syncLoopIteration
// reads one channel (or a few), and the sites Derive must give for each. A
// fixture is a list of files, each under a "-- path --" line; the
// "-- want --" file is each channel's sites as the extractor's golden files
// (TestWritersGolden) write them. -update rewrites the want files.

import (
	"flag"
	"fmt"
	"go/ast"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/syncloop/syncloop/extractor/flow"
	"github.com/syncloop/syncloop/extractor/index"
)

// checkRule derives the fixture's writers and compares them with its want.
func checkRule(t *testing.T, name string) {
	t.Helper()
	file := filepath.Join("testdata", "rules", name+".txt")
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	head, files := splitFixture(string(data))
	fsys := fstest.MapFS{
		"go.mod":                     {Data: []byte("module k8s.io/kubernetes\n")},
		"pkg/kubelet/pod_workers.go": {Data: []byte("package kubelet\n")},
	}
	for name, body := range files {
		if name != "want" {
			fsys[name] = &fstest.MapFile{Data: []byte(body)}
		}
	}
	got, err := derive(fsys)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if updating() {
		if err := os.WriteFile(file, []byte(joinFixture(head, files, got)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if want := files["want"]; got != want {
		t.Errorf("%s: derived\n%s\nwant\n%s", file, got, want)
	}
}

// derive runs Derive on every channel the fixture's syncLoopIteration
// (pkg/kubelet/kubelet.go) selects on, and renders the sites.
func derive(fsys fstest.MapFS) (string, error) {
	ix := index.New(fsys, "v1.30.0")
	f, err := ix.ReadParse("pkg/kubelet/kubelet.go")
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, d := range f.AST.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != "syncLoopIteration" {
			continue
		}
		loop := &index.Func{F: f, Dir: "pkg/kubelet", Decl: fd}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			cc, ok := n.(*ast.CommClause)
			if !ok {
				return true
			}
			var ch ast.Expr
			switch s := cc.Comm.(type) {
			case *ast.ExprStmt:
				ch = index.RecvChan(s.X)
			case *ast.AssignStmt:
				ch = index.RecvChan(s.Rhs[0])
			}
			if ch != nil {
				render(&b, f.Text(ch), flow.Derive(ix, loop, ch))
			}
			return true
		})
	}
	return b.String(), nil
}

// render writes a channel's sites, one line each: "file:line func [note]".
func render(b *strings.Builder, ch string, r flow.Result) {
	fmt.Fprintf(b, "channel %s\n", ch)
	for _, part := range []struct {
		name  string
		sites []flow.Site
	}{{"made", r.Made}, {"writer", r.Writers}, {"upstream", r.Upstream}, {"goroutine", r.Goroutine}} {
		for _, s := range part.sites {
			fmt.Fprintf(b, "  %-9s %s:%d %s", part.name, s.File, s.Line, s.Func)
			if s.Note != "" {
				fmt.Fprintf(b, " [%s]", s.Note)
			}
			b.WriteString("\n")
		}
	}
}

// -update rewrites the fixtures' want files.
var update = flag.Bool("update", false, "rewrite the want files of testdata/rules")

func updating() bool { return *update }

// splitFixture parses a fixture: the comment before its first file, and its
// files by name.
func splitFixture(s string) (head string, files map[string]string) {
	files = map[string]string{}
	name := ""
	var b strings.Builder
	flush := func() {
		if name == "" {
			head = b.String()
		} else {
			files[name] = b.String()
		}
		b.Reset()
	}
	for line := range strings.Lines(s) {
		if n, ok := strings.CutPrefix(strings.TrimSpace(line), "-- "); ok && strings.HasSuffix(n, " --") {
			flush()
			name = strings.TrimSuffix(n, " --")
			continue
		}
		b.WriteString(line)
	}
	flush()
	return head, files
}

// joinFixture writes a fixture back with want replaced, files in the order
// they were read (sorted: the tree's files, then want).
func joinFixture(head string, files map[string]string, want string) string {
	var names []string
	for n := range files {
		if n != "want" {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(head)
	for _, n := range names {
		b.WriteString("-- " + n + " --\n" + files[n])
	}
	b.WriteString("-- want --\n" + want)
	return b.String()
}

// TestRuleParam: the loop's channel is a parameter: back up the callers to the make, forward into the sending function's parameter.
func TestRuleParam(t *testing.T) { checkRule(t, "param") }

// TestRuleTicker: a ticker's channel: made by time.NewTicker, written by the runtime, no writer in the module.
func TestRuleTicker(t *testing.T) { checkRule(t, "ticker") }

// TestRuleField: a struct field: made into it by a composite literal key, written by a method of the field's type.
func TestRuleField(t *testing.T) { checkRule(t, "field") }

// TestRuleInterface: a method result through an interface: the module's implementation's return, noted "via".
func TestRuleInterface(t *testing.T) { checkRule(t, "interface") }

// TestRuleGate: a send under a feature gate's if is noted "feature gate X", in its else "feature gate X off".
func TestRuleGate(t *testing.T) { checkRule(t, "gate") }

// TestRuleBuild: a site in a file built for one platform says so.
func TestRuleBuild(t *testing.T) { checkRule(t, "build") }

// TestRuleLiteral: a send in a function literal is noted, and its go statement is the goroutine.
func TestRuleLiteral(t *testing.T) { checkRule(t, "literal") }

// TestRuleFanIn: a fan-in's sources are listed upstream, noted "feeds the fan-in".
func TestRuleFanIn(t *testing.T) { checkRule(t, "fanin") }

// TestRuleCallers: a sending function's callers are upstream; the go statement is found through them (a method value handed to wait.Until).
func TestRuleCallers(t *testing.T) { checkRule(t, "callers") }

// TestRuleCollections: a map literal of channels and a slice ranged over.
func TestRuleCollections(t *testing.T) { checkRule(t, "collections") }

// TestRulePaths: a send reached with a gate on and with it off carries no gate.
func TestRulePaths(t *testing.T) { checkRule(t, "paths") }

// TestRuleMux: a fan-in through a call (the config mux): the sources whose
// channels the mux makes, returns and reads are listed upstream of Merge.
func TestRuleMux(t *testing.T) { checkRule(t, "mux") }

// TestRuleUnreachable: a send that only tests reach is marked unreachable;
// one reached from a go statement or from main is not.
func TestRuleUnreachable(t *testing.T) { checkRule(t, "unreachable") }

// TestRuleSelector: cases sharing one writer, told apart by the constant
// their worker is made with: each case's own go statement, and no branch
// its worker never takes.
func TestRuleSelector(t *testing.T) { checkRule(t, "selector") }
