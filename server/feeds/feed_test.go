package feeds

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestSourceWrittenByTransitions holds the feed's source state to its
// transitions (feed.go): no other function of the package assigns a
// feed's source (kind), note, demoStop, relays or its owner's notes, or
// sets them in a literal.
func TestSourceWrittenByTransitions(t *testing.T) {
	transitions := map[string]bool{
		"claimDemo": true, "startedDemo": true, "stopDemo": true, "relayAttached": true,
		"relayDetached": true, "relayElsewhere": true, "startedJournal": true,
		"journalReplayed": true, "ownerWaiting": true,
	}
	state := map[string]bool{"src": true, "kind": true, "note": true, "demoStop": true, "relays": true, "waiting": true, "history": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			allowed := path == "feed.go" && fn.Recv != nil && transitions[fn.Name.Name]
			bad := func(n ast.Node, field string) {
				t.Errorf("%s: %s writes a feed's %s: only feed.go's transitions may", fset.Position(n.Pos()), fn.Name.Name, field)
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				var lhs []ast.Expr
				switch n := n.(type) {
				case *ast.AssignStmt:
					lhs = n.Lhs
				case *ast.IncDecStmt:
					lhs = []ast.Expr{n.X}
				case *ast.CompositeLit:
					if id, ok := n.Type.(*ast.Ident); ok && id.Name == "feed" {
						for _, e := range n.Elts {
							if kv, ok := e.(*ast.KeyValueExpr); ok {
								if k, ok := kv.Key.(*ast.Ident); ok && state[k.Name] {
									bad(kv, k.Name)
								}
							}
						}
					}
				}
				for _, e := range lhs {
					if sel, ok := e.(*ast.SelectorExpr); ok && state[sel.Sel.Name] {
						checked++
						if !allowed {
							bad(sel, sel.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}
	if checked == 0 {
		t.Fatal("found no write of a feed's source state at all: the test reads the wrong files")
	}
}
