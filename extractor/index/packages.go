package index

// packages.go reads whole packages of the tree, lazily: to resolve the element
// type of kl.<x>Manager.Updates() through the Kubelet struct and the manager's
// interface, and to locate the declarations notes link to (Reading.Symbols).

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"iter"
	"path"
	"strconv"
	"strings"

	"github.com/syncloop/syncloop/extractor/module"
)

const modulePrefix = module.Path + "/"

// Package is the non-test .go files of one directory. Files are read when
// the package is first asked for and parsed only when a lookup needs them
// (a name's bytes must appear in a file for it to be declared there).
type Package struct {
	Dir   string
	files []*pkgFile
	Name  string // package clause, once a file has been parsed
}

type pkgFile struct {
	Path   string
	Src    []byte
	parsed *File // nil until parsed
	err    error
}

// pkg returns the package in dir, or nil when the directory has no Go files.
func (x *Index) Pkg(dir string) *Package {
	if p, ok := x.pkgs[dir]; ok {
		return p
	}
	var p *Package
	entries, err := fs.ReadDir(x.FS, dir)
	if err == nil {
		p = &Package{Dir: dir}
		for _, e := range entries {
			n := e.Name()
			if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
				continue
			}
			fp := path.Join(dir, n)
			if f, ok := x.files[fp]; ok {
				p.files = append(p.files, &pkgFile{Path: fp, Src: f.Src, parsed: f})
				continue
			}
			src, err := fs.ReadFile(x.FS, fp)
			if err != nil {
				continue
			}
			p.files = append(p.files, &pkgFile{Path: fp, Src: src})
		}
		if len(p.files) == 0 {
			p = nil
		}
	}
	x.pkgs[dir] = p
	return p
}

// filesWith parses (once) and returns the files of p that mention name.
func (x *Index) FilesWith(p *Package, name string) []*File {
	b := []byte(name)
	return x.ParsedFiles(p, func(src []byte) bool { return bytes.Contains(src, b) })
}

// mayDeclareType reports whether src may declare type name: whether name
// appears after "type " or first on a line (a spec in a type group). The
// tree is gofmt-formatted, so a declaration cannot hide from this.
func MayDeclareType(src []byte, name string) bool {
	b := []byte(name)
	for i := 0; ; {
		j := bytes.Index(src[i:], b)
		if j < 0 {
			return false
		}
		at := i + j
		i = at + len(b)
		if i < len(src) && IsIdentByte(src[i]) {
			continue
		}
		k := at
		for k > 0 && (src[k-1] == ' ' || src[k-1] == '\t') {
			k--
		}
		if k == 0 || src[k-1] == '\n' || (k >= 4 && string(src[k-4:k]) == "type" && k < at) {
			return true
		}
	}
}

func IsIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// parsedFiles parses (once) and returns the files of p whose bytes pass want.
func (x *Index) ParsedFiles(p *Package, want func([]byte) bool) []*File {
	var out []*File
	for _, pf := range p.files {
		if !want(pf.Src) {
			continue
		}
		if pf.parsed == nil && pf.err == nil {
			if f, ok := x.files[pf.Path]; ok {
				pf.parsed = f
			} else {
				pf.parsed, pf.err = x.ParseSource(pf.Path, pf.Src, false)
			}
			if pf.err == nil && p.Name == "" {
				p.Name = pf.parsed.AST.Name.Name
			}
		}
		if pf.parsed != nil {
			out = append(out, pf.parsed)
		}
	}
	return out
}

// pkgName is the package clause of p, read from its first file.
func (x *Index) PkgName(p *Package) string {
	if p.Name == "" {
		f, err := parser.ParseFile(token.NewFileSet(), p.files[0].Path, p.files[0].Src, parser.PackageClauseOnly)
		if err == nil {
			p.Name = f.Name.Name
		}
	}
	return p.Name
}

// findType finds the declaration of type name in p.
func (x *Index) FindType(p *Package, name string) (*File, *ast.TypeSpec) {
	for _, f := range x.ParsedFiles(p, func(src []byte) bool { return MayDeclareType(src, name) }) {
		if ts := TypeSpecIn(f.AST, name); ts != nil {
			return f, ts
		}
	}
	return nil, nil
}

// typeSpecs yields f's top-level type declarations, each with the
// declaration it is in (whose doc comment a lone spec shares).
func TypeSpecs(f *ast.File) iter.Seq2[*ast.GenDecl, *ast.TypeSpec] {
	return func(yield func(*ast.GenDecl, *ast.TypeSpec) bool) {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				if !yield(gd, s.(*ast.TypeSpec)) {
					return
				}
			}
		}
	}
}

// typeSpecIn finds the top-level declaration of type name in f.
func TypeSpecIn(f *ast.File, name string) *ast.TypeSpec {
	for _, ts := range TypeSpecs(f) {
		if ts.Name.Name == name {
			return ts
		}
	}
	return nil
}

// importedDir is the tree directory that name refers to in f, when it is an
// import of a package of this module. Aliases and directory names decide
// first; only then are packages read for their package clause.
func (x *Index) ImportedDir(f *File, name string) (string, bool) {
	var unsure []string
	for _, im := range f.AST.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil || !strings.HasPrefix(p, modulePrefix) {
			continue
		}
		dir := strings.TrimPrefix(p, modulePrefix)
		switch {
		case im.Name != nil:
			if im.Name.Name == name {
				return dir, true
			}
		case path.Base(dir) == name:
			return dir, true
		default:
			unsure = append(unsure, dir)
		}
	}
	for _, dir := range unsure {
		if pk := x.Pkg(dir); pk != nil && x.PkgName(pk) == name {
			return dir, true
		}
	}
	return "", false
}

// importName is the name the package in dir is known by in f: its import
// alias, else its package clause. "" when f does not import it.
func (x *Index) ImportName(f *File, dir string) string {
	for _, im := range f.AST.Imports {
		p, err := strconv.Unquote(im.Path.Value)
		if err != nil || p != modulePrefix+dir {
			continue
		}
		if im.Name != nil {
			return im.Name.Name
		}
		if pk := x.Pkg(dir); pk != nil {
			return x.PkgName(pk)
		}
	}
	return ""
}

// fieldMethodElem resolves the element type of <-recv.field.method() where
// recv is a value of struct type structName declared in f's package: the
// field's type, then that type's method (an interface method, possibly
// embedded from another interface, or a concrete method), whose single
// result must be a channel. The type is qualified for use in f.
func (x *Index) FieldMethodElem(f *File, structName, field, method string) string {
	dir := path.Dir(f.Path)
	// The struct is usually in f itself (Kubelet is in kubelet.go); only if
	// not is the rest of the package read.
	sf, ts := f, TypeSpecIn(f.AST, structName)
	if ts == nil {
		p := x.Pkg(dir)
		if p == nil {
			return ""
		}
		if sf, ts = x.FindType(p, structName); ts == nil {
			return ""
		}
	}
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		return ""
	}
	for _, fl := range st.Fields.List {
		for _, n := range fl.Names {
			if n.Name == field {
				res, defFile, defDir := x.MethodResult(sf, dir, fl.Type, method, 0)
				if res == nil {
					return ""
				}
				ct, ok := res.(*ast.ChanType)
				if !ok {
					return ""
				}
				return x.Qualify(defFile, defDir, ct.Value, f)
			}
		}
	}
	return ""
}

// methodResult finds the single result type of method on the type written
// as t in file f (of package dir). It returns the result expression and the
// file and package it is written in.
func (x *Index) MethodResult(f *File, dir string, t ast.Expr, method string, depth int) (ast.Expr, *File, string) {
	if depth > 8 {
		return nil, nil, ""
	}
	for {
		if s, ok := t.(*ast.StarExpr); ok {
			t = s.X
			continue
		}
		if s, ok := t.(*ast.ParenExpr); ok {
			t = s.X
			continue
		}
		break
	}
	var name string
	switch e := t.(type) {
	case *ast.Ident:
		name = e.Name
	case *ast.SelectorExpr:
		pkgID, ok := e.X.(*ast.Ident)
		if !ok {
			return nil, nil, ""
		}
		d, ok := x.ImportedDir(f, pkgID.Name)
		if !ok {
			return nil, nil, ""
		}
		dir, name = d, e.Sel.Name
	default:
		return nil, nil, ""
	}
	p := x.Pkg(dir)
	if p == nil {
		return nil, nil, ""
	}
	tf, ts := x.FindType(p, name)
	if ts == nil {
		return nil, nil, ""
	}
	if it, ok := ts.Type.(*ast.InterfaceType); ok {
		for _, m := range it.Methods.List {
			if len(m.Names) == 0 {
				if r, rf, rd := x.MethodResult(tf, dir, m.Type, method, depth+1); r != nil {
					return r, rf, rd
				}
				continue
			}
			for _, n := range m.Names {
				if n.Name == method {
					if ft, ok := m.Type.(*ast.FuncType); ok {
						return SingleResult(ft), tf, dir
					}
				}
			}
		}
		return nil, nil, ""
	}
	// A concrete type: its method declared anywhere in the package.
	for _, mf := range x.FilesWith(p, method) {
		for _, d := range mf.AST.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Name.Name == method && RecvName(fd) == name {
				return SingleResult(fd.Type), mf, dir
			}
		}
	}
	return nil, nil, ""
}

func SingleResult(ft *ast.FuncType) ast.Expr {
	if ft.Results == nil || len(ft.Results.List) != 1 || len(ft.Results.List[0].Names) > 1 {
		return nil
	}
	return ft.Results.List[0].Type
}

// qualify writes type t (from file def of package defDir) as Go source valid
// in file use: identifiers declared in defDir get that package's name as
// use imports it ("Update" → "proberesults.Update"); qualified identifiers
// keep the qualifier written in def ("resourceupdates.Update").
func (x *Index) Qualify(def *File, defDir string, t ast.Expr, use *File) string {
	if defDir == path.Dir(use.Path) {
		return def.Text(t)
	}
	qual := x.ImportName(use, defDir)
	if qual == "" {
		if p := x.Pkg(defDir); p != nil {
			qual = x.PkgName(p)
		}
	}
	var b strings.Builder
	var write func(e ast.Expr) bool
	write = func(e ast.Expr) bool {
		switch t := e.(type) {
		case *ast.Ident:
			if types.Universe.Lookup(t.Name) == nil {
				b.WriteString(qual + ".")
			}
			b.WriteString(t.Name)
		case *ast.SelectorExpr:
			b.WriteString(def.Text(t))
		case *ast.StarExpr:
			b.WriteString("*")
			return write(t.X)
		case *ast.ArrayType:
			b.WriteString("[")
			if t.Len != nil {
				b.WriteString(def.Text(t.Len))
			}
			b.WriteString("]")
			return write(t.Elt)
		case *ast.MapType:
			b.WriteString("map[")
			if !write(t.Key) {
				return false
			}
			b.WriteString("]")
			return write(t.Value)
		case *ast.ChanType:
			switch t.Dir {
			case ast.RECV:
				b.WriteString("<-chan ")
			case ast.SEND:
				b.WriteString("chan<- ")
			default:
				b.WriteString("chan ")
			}
			return write(t.Value)
		case *ast.StructType:
			if t.Fields == nil || len(t.Fields.List) > 0 {
				return false
			}
			b.WriteString("struct{}")
		default:
			return false // func types, generics…: not worth guessing
		}
		return true
	}
	if !write(t) {
		return ""
	}
	return b.String()
}

// splitSymbol splits "pkg/kubelet/prober/results.(*manager).Set" into
// "pkg/kubelet/prober/results", "manager" and "Set"; recv is "" for a
// package-level name.
func SplitSymbol(s string) (dir, recv, name string, ok bool) {
	slash := strings.LastIndex(s, "/")
	dot := strings.Index(s[slash+1:], ".")
	if dot < 0 {
		return "", "", "", false
	}
	dir, rest := s[:slash+1+dot], s[slash+1+dot+1:]
	if strings.HasPrefix(rest, "(") {
		close := strings.Index(rest, ")")
		if close < 0 || !strings.HasPrefix(rest[close:], ").") {
			return "", "", "", false
		}
		recv = strings.TrimPrefix(rest[1:close], "*")
		name = rest[close+2:]
	} else if r, n, found := strings.Cut(rest, "."); found {
		recv, name = r, n
	} else {
		name = rest
	}
	if dir == "" || name == "" || strings.ContainsAny(name, ".()*") || strings.ContainsAny(recv, ".()*") {
		return "", "", "", false
	}
	return dir, recv, name, true
}
