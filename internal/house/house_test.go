package house

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The sizes issue 24 set for server/ and issue 40 for the whole module: no
// non-test file over maxFileLines lines, no function over maxFuncLines.
const (
	maxFileLines = 700
	maxFuncLines = 80
)

// TestHouseSizes fails on a non-test file over 700 lines or a function over
// 80 lines anywhere in the module (main.go and cmd_*.go, extractor/,
// server/): a file that grows past them holds more than one stage of the
// house, a function more than one step.
func TestHouseSizes(t *testing.T) {
	t.Parallel()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var files, funcs []string
	err := walkGo(root, func(path, name string) error {
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if n := fset.File(f.Pos()).LineCount(); n > maxFileLines {
			files = append(files, sizeLine(n, name))
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			n := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
			if n > maxFuncLines {
				funcs = append(funcs, sizeLine(n, name+":"+strconv.Itoa(fset.Position(fn.Pos()).Line)+" "+funcName(fn)))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 && len(funcs) == 0 {
		return
	}
	sort.Sort(sort.Reverse(sort.StringSlice(files)))
	sort.Sort(sort.Reverse(sort.StringSlice(funcs)))
	if len(files) > 0 {
		t.Errorf("%d non-test files over %d lines (split them by stage):\n  %s", len(files), maxFileLines, strings.Join(files, "\n  "))
	}
	if len(funcs) > 0 {
		t.Errorf("%d functions over %d lines (split them by step):\n  %s", len(funcs), maxFuncLines, strings.Join(funcs, "\n  "))
	}
}

// moduleRoot is the directory of the go.mod above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("no go.mod above internal/house")
		}
		dir = up
	}
}

// walkGo calls fn with each .go file of the module under root, its path and
// its name relative to root ("server/feeds/store.go"). It skips testdata
// (fixtures, some of them Go copied from elsewhere on purpose), hidden
// directories (.ci, .git) and directories with a go.mod of their own.
func walkGo(root string, fn func(path, name string) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == root {
				return nil
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		return fn(path, filepath.ToSlash(rel))
	})
}

// sizeLine is "  1234 what", padded so the lines sort by size as text.
func sizeLine(n int, what string) string {
	s := strconv.Itoa(n)
	return strings.Repeat(" ", max(0, 5-len(s))) + s + " " + what
}

// funcName is a function's name with its receiver's type: (*Service).message.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	recv := fn.Recv.List[0].Type
	star := ""
	if s, ok := recv.(*ast.StarExpr); ok {
		star, recv = "*", s.X
	}
	if ix, ok := recv.(*ast.IndexExpr); ok {
		recv = ix.X
	}
	if id, ok := recv.(*ast.Ident); ok {
		return "(" + star + id.Name + ")." + fn.Name.Name
	}
	return fn.Name.Name
}
