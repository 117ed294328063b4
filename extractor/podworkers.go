package extractor

// podworkers.go reads the top-level type declarations of pod_workers.go with
// their doc comments verbatim, and classifies a type's kind by its syntax.

import (
	"go/ast"

	"github.com/syncloop/syncloop/extractor/index"
)

func (x *extraction) podWorkers() (*PodWorkers, error) {
	f, err := x.ReadParse(podWorkersFile)
	if err != nil {
		if x.Tag == "" {
			return nil, x.notKubernetes(podWorkersFile, err)
		}
		return nil, x.unsupported("no %s (%v)", podWorkersFile, err)
	}
	pw := &PodWorkers{File: podWorkersFile, FileSHA256: f.SHA256(), Types: []TypeDecl{}}
	for gd, ts := range index.TypeSpecs(f.AST) {
		pw.Types = append(pw.Types, x.typeDecl(f, gd, ts))
	}
	return pw, nil
}

// typeDecl describes ts, declared in gd. DocStart and DocEnd are 0 when the
// type has no doc comment.
func (x *extraction) typeDecl(f *index.File, gd *ast.GenDecl, ts *ast.TypeSpec) TypeDecl {
	doc := specDoc(gd, ts)
	td := TypeDecl{
		Name: ts.Name.Name,
		Kind: typeKind(ts),
		Line: f.Line(ts.Name.Pos()),
		End:  f.EndLine(ts),
		Doc:  index.DocVerbatim(doc),
	}
	if doc != nil {
		td.DocStart, td.DocEnd = f.Line(doc.Pos()), f.EndLine(doc)
	}
	from := td.Line
	if td.DocStart > 0 {
		from = td.DocStart
	}
	td.Upstream = UpstreamURL(x.Tag, f.Path, from, td.End)
	return td
}

// specDoc is a type's doc comment: its own in a group, else the
// declaration's (a lone spec, or a group of one).
func specDoc(gd *ast.GenDecl, ts *ast.TypeSpec) *ast.CommentGroup {
	if ts.Doc != nil {
		return ts.Doc
	}
	if !gd.Lparen.IsValid() || len(gd.Specs) == 1 {
		return gd.Doc
	}
	return nil
}

// typeKind is "alias" for type A = B, else the kind of the type's syntax:
// struct, interface, func, map, slice, array, chan, pointer, or ident for a
// type defined from another named type (type State int, type T pkg.U, or a
// generic instantiation).
func typeKind(ts *ast.TypeSpec) string {
	if ts.Assign.IsValid() {
		return "alias"
	}
	return exprKind(ts.Type)
}

func exprKind(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StructType:
		return "struct"
	case *ast.InterfaceType:
		return "interface"
	case *ast.FuncType:
		return "func"
	case *ast.MapType:
		return "map"
	case *ast.ArrayType:
		if t.Len == nil {
			return "slice"
		}
		return "array"
	case *ast.ChanType:
		return "chan"
	case *ast.StarExpr:
		return "pointer"
	case *ast.ParenExpr:
		return exprKind(t.X)
	default: // Ident, SelectorExpr, IndexExpr, IndexListExpr
		return "ident"
	}
}
