// Package index is the syntactic index the readings are derived from:
// Go files parsed once into one FileSet (File), packages by directory
// (Package), functions as contexts for name resolution (Func), a light type
// inference for receivers and values (TypeOf: enough to tell whose field
// kl.pleg is), the calls that may run a function (CallersOf, RefsTo) and
// the module's implementations of an interface (Implementations). It reads
// only the module's own packages and never type-checks: a name it cannot
// resolve (a third-party type, a generic) is left unknown, never guessed.
package index

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strings"
)

// upstreamRepo is where the module's source is browsed on the web.
const upstreamRepo = "https://github.com/kubernetes/kubernetes"

// UpstreamURL links to lines from..to of file (slash path relative to the
// repository root) at tag on GitHub: "#L12" for one line, "#L12-L20" for a
// range, no fragment when from is 0. A tag that is not a version (empty, or
// "dir" for a local checkout whose commit is unknown) links to master.
func UpstreamURL(tag, file string, from, to int) string {
	ref := tag
	if ref == "" || ref == "dir" {
		ref = "master"
	}
	u := upstreamRepo + "/blob/" + ref + "/" + strings.TrimPrefix(file, "/")
	switch {
	case from <= 0:
		return u
	case to <= from:
		return fmt.Sprintf("%s#L%d", u, from)
	default:
		return fmt.Sprintf("%s#L%d-L%d", u, from, to)
	}
}

// Index is the syntactic index of one source tree: one FileSet for every
// file parsed, the packages parsed so far (for type resolution and
// symbols), so no file is read or parsed twice, and the searches' results
// (the directories in FlowScope, interfaces' implementations, functions'
// callers) once made. It is not safe for concurrent use, except that
// ParseSource may run beside it (the FileSet is).
type Index struct {
	FS    fs.FS
	Tag   string
	Fset  *token.FileSet
	pkgs  map[string]*Package // by slash dir relative to the module root
	files map[string]*File    // files parsed with their comments, by path

	scope   []string
	impls   map[string][]Named
	callers map[string][]CallSite
}

// New is the index of fsys, the tree of tag (a module zip's root or a
// checkout: pkg/kubelet/… at its root).
func New(fsys fs.FS, tag string) *Index {
	return &Index{FS: fsys, Tag: tag, Fset: token.NewFileSet(), pkgs: map[string]*Package{},
		files: map[string]*File{}, impls: map[string][]Named{}, callers: map[string][]CallSite{}}
}

// File is one parsed Go file with its bytes.
type File struct {
	Path string
	Src  []byte
	AST  *ast.File
	TF   *token.File
}

// parseSource parses src (the bytes of path) into the extraction's FileSet.
func (x *Index) ParseSource(path string, src []byte, comments bool) (*File, error) {
	mode := parser.SkipObjectResolution
	if comments {
		mode |= parser.ParseComments
	}
	f, err := parser.ParseFile(x.Fset, path, src, mode)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	return &File{Path: path, Src: src, AST: f, TF: x.Fset.File(f.Pos())}, nil
}

// readParse reads and parses path with its comments.
func (x *Index) ReadParse(path string) (*File, error) {
	src, err := fs.ReadFile(x.FS, path)
	if err != nil {
		return nil, err
	}
	f, err := x.ParseSource(path, src, true)
	if err == nil {
		x.files[path] = f
	}
	return f, err
}

// line is the line of pos in the file.
func (f *File) Line(pos token.Pos) int { return f.TF.Line(pos) }

// endLine is the line of the last character of n.
func (f *File) EndLine(n ast.Node) int { return f.TF.Line(n.End() - 1) }

// text is the exact source of n.
func (f *File) Text(n ast.Node) string {
	return string(f.Src[f.TF.Offset(n.Pos()):f.TF.Offset(n.End())])
}

// lines is the exact source of lines from..to (1-based, inclusive), without
// the newline that ends the last one.
func (f *File) Lines(from, to int) string {
	if from < 1 || to < from || from > f.TF.LineCount() {
		return ""
	}
	start := f.TF.Offset(f.TF.LineStart(from))
	end := len(f.Src)
	if to < f.TF.LineCount() {
		end = f.TF.Offset(f.TF.LineStart(to+1)) - 1 // the newline ending line to
	} else if end > start && f.Src[end-1] == '\n' {
		end--
	}
	return string(f.Src[start:end])
}

func (f *File) SHA256() string {
	sum := sha256.Sum256(f.Src)
	return hex.EncodeToString(sum[:])
}

// docVerbatim is a comment group's text exactly as written, minus the
// markers: "// " or "//" at the start of a line comment, "/*" and "*/" around
// a block. Indentation after the marker survives, so preformatted diagrams
// keep their shape (unlike ast.CommentGroup.Text, which drops directives).
func DocVerbatim(cg *ast.CommentGroup) string {
	if cg == nil {
		return ""
	}
	var lines []string
	for _, c := range cg.List {
		if s, ok := strings.CutPrefix(c.Text, "//"); ok {
			lines = append(lines, strings.TrimPrefix(s, " "))
			continue
		}
		s := strings.TrimSuffix(strings.TrimPrefix(c.Text, "/*"), "*/")
		lines = append(lines, strings.Split(s, "\n")...)
	}
	return strings.Join(lines, "\n")
}

// recvName is the base type name of a method's receiver, "" for a function.
func RecvName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return ""
	}
	return BaseTypeName(fd.Recv.List[0].Type)
}

// baseTypeName strips pointers, parentheses and type parameters: *T[K] → T.
func BaseTypeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.ParenExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}

// recvChan is ch in <-ch, or nil.
func RecvChan(e ast.Expr) ast.Expr {
	if u, ok := ast.Unparen(e).(*ast.UnaryExpr); ok && u.Op == token.ARROW {
		return u.X
	}
	return nil
}
