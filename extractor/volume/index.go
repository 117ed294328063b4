package volume

// index.go reads the packages the reading is about out of the tree and
// indexes their declarations by package: struct fields, interfaces,
// functions and methods, each with the file it is in. Types are named
// "DIR.Name", DIR the package's directory relative to the module root
// ("pkg/kubelet/volumemanager/cache.ActualStateOfWorld"), resolved through
// each file's imports; there is no type checker (the module zip holds no
// dependencies to check against).

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"path"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
)

const modulePrefix = "k8s.io/kubernetes/"

type tree struct {
	fsys fs.FS
	tag  string
	fset *token.FileSet
	pkgs map[string]*pkg // by directory
}

type pkg struct {
	dir     string
	files   []*file
	structs map[string]*ast.StructType
	ifaces  map[string]*ifaceDecl
	funcs   map[string]*funcDecl            // package-level functions
	methods map[string]map[string]*funcDecl // receiver type → method
}

type file struct {
	path    string
	dir     string
	src     []byte
	ast     *ast.File
	imports map[string]string // local name → directory (module packages only)
}

type funcDecl struct {
	decl *ast.FuncDecl
	file *file
}

type ifaceDecl struct {
	name string
	typ  *ast.InterfaceType
	file *file
	line int
}

func (t *tree) line(p token.Pos) int { return t.fset.Position(p).Line }

// text is the source of n as written.
func (f *file) text(t *tree, n ast.Node) string {
	tf := t.fset.File(n.Pos())
	a, b := tf.Offset(n.Pos()), tf.Offset(n.End())
	if a < 0 || b > len(f.src) || a > b {
		return ""
	}
	return string(f.src[a:b])
}

// load reads the non-test Go files under roots (directories, walked
// recursively) whose source keep accepts, and every file of the
// directories in whole, and indexes them.
func load(fsys fs.FS, tag string, roots []string, whole map[string]bool, keep func([]byte) bool) (*tree, error) {
	var paths []string
	for _, root := range roots {
		err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
				paths = append(paths, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Strings(paths)
	srcs, err := readAll(fsys, paths, func(p string, src []byte) bool { return whole[path.Dir(p)] || keep(src) })
	if err != nil {
		return nil, err
	}
	t := &tree{fsys: fsys, tag: tag, fset: token.NewFileSet(), pkgs: map[string]*pkg{}}
	for i, p := range paths {
		if srcs[i] == nil {
			continue
		}
		if err := t.add(p, srcs[i]); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// readAll reads paths in parallel (inflating the zip is most of the
// time), keeping the sources keep accepts; the others are left nil.
func readAll(fsys fs.FS, paths []string, keep func(string, []byte) bool) ([][]byte, error) {
	srcs := make([][]byte, len(paths))
	errs := make([]error, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), 8)) {
		wg.Go(func() {
			var buf bytes.Buffer
			for i := range next {
				buf.Reset()
				f, err := fsys.Open(paths[i])
				if err == nil {
					_, err = io.Copy(&buf, f)
					f.Close()
				}
				if err != nil {
					errs[i] = err
					continue
				}
				if keep(paths[i], buf.Bytes()) {
					srcs[i] = bytes.Clone(buf.Bytes())
				}
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return srcs, nil
}

// add parses one file into its package's index.
func (t *tree) add(p string, src []byte) error {
	af, err := parser.ParseFile(t.fset, p, src, parser.SkipObjectResolution|parser.ParseComments)
	if err != nil {
		return err
	}
	f := &file{path: p, dir: path.Dir(p), src: src, ast: af, imports: map[string]string{}}
	for _, im := range af.Imports {
		ip, err := strconv.Unquote(im.Path.Value)
		if err != nil || !strings.HasPrefix(ip, modulePrefix) {
			continue
		}
		name := path.Base(ip)
		if im.Name != nil {
			name = im.Name.Name
		}
		f.imports[name] = strings.TrimPrefix(ip, modulePrefix)
	}
	pk := t.pkg(f.dir)
	pk.files = append(pk.files, f)
	for _, d := range af.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			pk.addFunc(d, f)
		case *ast.GenDecl:
			pk.addTypes(t, d, f)
		}
	}
	return nil
}

func (t *tree) pkg(dir string) *pkg {
	pk := t.pkgs[dir]
	if pk == nil {
		pk = &pkg{dir: dir, structs: map[string]*ast.StructType{}, ifaces: map[string]*ifaceDecl{},
			funcs: map[string]*funcDecl{}, methods: map[string]map[string]*funcDecl{}}
		t.pkgs[dir] = pk
	}
	return pk
}

func (pk *pkg) addFunc(d *ast.FuncDecl, f *file) {
	fd := &funcDecl{decl: d, file: f}
	if d.Recv == nil || len(d.Recv.List) == 0 {
		pk.funcs[d.Name.Name] = fd
		return
	}
	recv := recvType(d)
	if pk.methods[recv] == nil {
		pk.methods[recv] = map[string]*funcDecl{}
	}
	pk.methods[recv][d.Name.Name] = fd
}

func (pk *pkg) addTypes(t *tree, d *ast.GenDecl, f *file) {
	if d.Tok != token.TYPE {
		return
	}
	for _, s := range d.Specs {
		ts := s.(*ast.TypeSpec)
		switch typ := ts.Type.(type) {
		case *ast.StructType:
			pk.structs[ts.Name.Name] = typ
		case *ast.InterfaceType:
			pk.ifaces[ts.Name.Name] = &ifaceDecl{name: ts.Name.Name, typ: typ, file: f, line: t.line(ts.Pos())}
		}
	}
}

// recvType is the name of a method's receiver type, pointer and type
// parameters removed.
func recvType(d *ast.FuncDecl) string {
	e := d.Recv.List[0].Type
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	switch x := e.(type) {
	case *ast.IndexExpr:
		e = x.X
	case *ast.IndexListExpr:
		e = x.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return ""
}

// typeName names the type e denotes in f, "DIR.Name", pointers removed;
// "" for a type outside the module or not a named type.
func (f *file) typeName(e ast.Expr) string {
	for {
		s, ok := e.(*ast.StarExpr)
		if !ok {
			break
		}
		e = s.X
	}
	switch x := e.(type) {
	case *ast.Ident:
		return f.dir + "." + x.Name
	case *ast.SelectorExpr:
		if id, ok := x.X.(*ast.Ident); ok {
			if dir, ok := f.imports[id.Name]; ok {
				return dir + "." + x.Sel.Name
			}
		}
	}
	return ""
}

// splitType splits "DIR.Name" into DIR and Name.
func splitType(q string) (dir, name string) {
	i := strings.LastIndex(q, ".")
	if i < 0 {
		return "", q
	}
	return q[:i], q[i+1:]
}

// short is "cache.ActualStateOfWorld" for "pkg/…/cache.ActualStateOfWorld".
func short(q string) string {
	dir, name := splitType(q)
	return path.Base(dir) + "." + name
}

// fieldType is the type of field name of struct type q, embedded structs
// searched (depth first, as far as three levels), "" when unknown.
func (t *tree) fieldType(q, name string) string {
	return t.fieldTypeDepth(q, name, 0)
}

func (t *tree) fieldTypeDepth(q, name string, depth int) string {
	dir, tn := splitType(q)
	pk := t.pkgs[dir]
	if pk == nil || depth > 3 {
		return ""
	}
	st := pk.structs[tn]
	if st == nil {
		return ""
	}
	f := pk.fileOf(st)
	for _, fld := range st.Fields.List {
		for _, n := range fld.Names {
			if n.Name == name {
				return f.typeName(fld.Type)
			}
		}
	}
	for _, fld := range st.Fields.List {
		if len(fld.Names) == 0 {
			if ft := t.fieldTypeDepth(f.typeName(fld.Type), name, depth+1); ft != "" {
				return ft
			}
		}
	}
	return ""
}

// fileOf is the file of pk holding node n.
func (pk *pkg) fileOf(n ast.Node) *file {
	for _, f := range pk.files {
		if f.ast.FileStart <= n.Pos() && n.Pos() < f.ast.FileEnd {
			return f
		}
	}
	return nil
}

// method finds method name of type q.
func (t *tree) method(q, name string) *funcDecl {
	dir, tn := splitType(q)
	if pk := t.pkgs[dir]; pk != nil {
		return pk.methods[tn][name]
	}
	return nil
}
