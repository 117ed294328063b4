package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestHouseSleeps fails on a time.Sleep in a test file of the module without
// a comment starting "// sleep:" on its line or ending on the line above it.
// A test waits for what it waits for (testwait.For, a channel,
// testing/synctest); it sleeps only where it measures time itself (a window
// in which something wrong would have happened, a rate it sends at), and
// then says so.
func TestHouseSleeps(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	var bare []string
	err := walkGo(root, func(path, name string) error {
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		lines, err := sleepsWithoutReason(path, src)
		if err != nil {
			return err
		}
		for _, l := range lines {
			bare = append(bare, name+":"+strconv.Itoa(l))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(bare) > 0 {
		t.Errorf("%d time.Sleep calls in tests without a \"// sleep:\" comment saying what time they measure (wait with testwait.For, a channel or testing/synctest instead):\n  %s",
			len(bare), strings.Join(bare, "\n  "))
	}
}

// sleepsWithoutReason returns the lines of src where time.Sleep is named
// with no "// sleep:" comment on that line or in the comment block that ends
// on the line above.
func sleepsWithoutReason(path string, src []byte) ([]int, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	timeName := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"time"` {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	if timeName == "" {
		return nil, nil
	}
	// Lines that carry a reason: a "// sleep:" comment's own line, and the
	// line after the comment block holding it.
	reasoned := map[int]bool{}
	for _, g := range f.Comments {
		if !slices.ContainsFunc(g.List, func(c *ast.Comment) bool { return strings.HasPrefix(c.Text, "// sleep:") }) {
			continue
		}
		for _, c := range g.List {
			if strings.HasPrefix(c.Text, "// sleep:") {
				reasoned[fset.Position(c.Pos()).Line] = true
			}
		}
		reasoned[fset.Position(g.End()).Line+1] = true
	}
	var lines []int
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Sleep" {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName {
			if l := fset.Position(sel.Pos()).Line; !reasoned[l] {
				lines = append(lines, l)
			}
		}
		return true
	})
	return lines, nil
}

func TestSleepsWithoutReason(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []int
	}{
		{"bare", "import \"time\"\nfunc f() {\n\ttime.Sleep(1)\n}\n", []int{5}},
		{"reason on the line", "import \"time\"\nfunc f() {\n\ttime.Sleep(1) // sleep: a duplicate would come by now\n}\n", nil},
		{"reason above", "import \"time\"\nfunc f() {\n\t// sleep: the rate the relay sends at\n\ttime.Sleep(1)\n}\n", nil},
		{"reason heading a block above", "import \"time\"\nfunc f() {\n\t// sleep: the TTL must pass,\n\t// on the server's own clock.\n\ttime.Sleep(1)\n}\n", nil},
		{"reason a line too far", "import \"time\"\nfunc f() {\n\t// sleep: too far\n\n\ttime.Sleep(1)\n}\n", []int{7}},
		{"another comment", "import \"time\"\nfunc f() {\n\ttime.Sleep(1) // a frame or two\n}\n", []int{5}},
		{"as a value", "import \"time\"\nvar nap = time.Sleep\n", []int{4}},
		{"renamed import", "import tm \"time\"\nfunc f() {\n\ttm.Sleep(1)\n}\n", []int{5}},
		{"another Sleep", "import \"time\"\nvar _ = time.Now\nfunc f(c clock) {\n\tc.Sleep(1)\n}\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := sleepsWithoutReason("x_test.go", []byte("package x\n\n"+tc.src))
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("lines %v, want %v", got, tc.want)
			}
		})
	}
}
