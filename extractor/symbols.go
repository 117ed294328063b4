package extractor

import (
	"go/ast"
	"go/token"

	"github.com/syncloop/syncloop/extractor/index"
)

// symbols.go resolves the symbols a caller asks for (Options.Symbols) to
// where they are declared at the tag.

// symbols locates each name written "pkg/dir.Name", "pkg/dir.(*Recv).Method",
// "pkg/dir.(Recv).Method" or "pkg/dir.Type.Method" (a method of a named
// type, an interface's method or a struct's field).
func (x *extraction) symbols(names []string) map[string]Symbol {
	out := make(map[string]Symbol, len(names))
	for _, n := range names {
		out[n] = x.symbol(n)
	}
	return out
}

func (x *extraction) symbol(s string) Symbol {
	dir, recv, name, ok := index.SplitSymbol(s)
	if !ok {
		return Symbol{}
	}
	p := x.Pkg(dir)
	if p == nil {
		return Symbol{}
	}
	found := func(f *index.File, pos token.Pos) Symbol {
		line := f.Line(pos)
		return Symbol{Found: true, File: f.Path, Line: line, Upstream: UpstreamURL(x.Tag, f.Path, line, line)}
	}
	if recv == "" {
		for _, f := range x.FilesWith(p, name) {
			for _, d := range f.AST.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if d.Recv == nil && d.Name.Name == name {
						return found(f, d.Name.Pos())
					}
				case *ast.GenDecl:
					for _, sp := range d.Specs {
						switch sp := sp.(type) {
						case *ast.TypeSpec:
							if sp.Name.Name == name {
								return found(f, sp.Name.Pos())
							}
						case *ast.ValueSpec:
							for _, id := range sp.Names {
								if id.Name == name {
									return found(f, id.Pos())
								}
							}
						}
					}
				}
			}
		}
		return Symbol{}
	}
	// A method declared on recv.
	for _, f := range x.FilesWith(p, name) {
		for _, d := range f.AST.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == name && index.RecvName(fd) == recv {
				return found(f, fd.Name.Pos())
			}
		}
	}
	// An interface method or a struct field of type recv.
	if f, ts := x.FindType(p, recv); ts != nil {
		var fields *ast.FieldList
		switch t := ts.Type.(type) {
		case *ast.InterfaceType:
			fields = t.Methods
		case *ast.StructType:
			fields = t.Fields
		}
		if fields != nil {
			for _, fl := range fields.List {
				for _, id := range fl.Names {
					if id.Name == name {
						return found(f, id.Pos())
					}
				}
			}
		}
	}
	return Symbol{}
}
