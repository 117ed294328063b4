package extractor

// parse.go holds Extract and the machinery every part of the extraction
// shares: one FileSet, files read from the fs.FS, line arithmetic and the
// upstream links. The parts themselves live in parse_function.go (the
// function and its cases), logs.go, podworkers.go, twosets.go and symbols.go.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
)

// The files the Reading is about, relative to the module root.
const (
	kubeletFile    = "pkg/kubelet/kubelet.go"
	podWorkersFile = "pkg/kubelet/pod_workers.go"
	loopFunc       = "syncLoopIteration"
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

// Extract builds the Reading from fsys, a file system rooted at the top of a
// Kubernetes source tree (a module zip's k8s.io/kubernetes@TAG/ directory or
// a checkout). It fills everything but ModuleHash, Source and Verified. A tree whose
// kubelet has no syncLoopIteration gives an error wrapping ErrUnsupportedTag;
// one without pkg/kubelet/kubelet.go an error wrapping ErrNotKubernetes.
// fsys is read from two goroutines at once, as *zip.Reader, os.DirFS and
// fstest.MapFS allow.
func Extract(fsys fs.FS, tag string, symbols []string) (*Reading, error) {
	x := newExtraction(fsys, tag)
	r := &Reading{Schema: Schema, Module: Module, Tag: tag}

	// The two sets read all of pkg/ (most of the time Extract takes) and
	// share nothing with the rest but the FileSet, which is safe for
	// concurrent use: find them meanwhile.
	var (
		sets    []SetDecl
		setsErr error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		sets, setsErr = x.twoSets()
	}()
	err := x.mainParts(r, symbols)
	<-done
	if err != nil {
		return nil, err
	}
	if setsErr != nil {
		return nil, setsErr
	}
	r.TwoSets = sets
	return r, nil
}

// mainParts fills the function, pod_workers and symbols of r.
func (x *extraction) mainParts(r *Reading, symbols []string) error {
	fn, err := x.function()
	if err != nil {
		return err
	}
	r.Function = *fn
	var helpers []string
	for _, h := range fn.Helpers {
		helpers = append(helpers, h.Name)
	}
	var roots []string
	for _, c := range fn.Cases {
		for _, s := range slices.Concat(c.Writers, c.Feeders, c.Goroutine, c.Made) {
			roots = append(roots, s.Func)
		}
	}
	r.Defs = x.defs(x.loop, helpers, roots)
	pw, err := x.podWorkers()
	if err != nil {
		return err
	}
	r.PodWorkers = *pw
	if len(symbols) > 0 {
		r.Symbols = x.symbols(symbols)
	}
	return nil
}

// extraction is the state of one Extract call: the tree, one FileSet for
// every file parsed, and the packages parsed so far (for type resolution and
// symbols), so no file is read or parsed twice.
type extraction struct {
	FS    fs.FS
	Tag   string
	Fset  *token.FileSet
	pkgs  map[string]*Package // by slash dir relative to the module root
	files map[string]*File    // files parsed with their comments, by path

	// The writer derivation's indexes (flow.go): the directories searched,
	// interfaces' implementations and functions' callers found so far.
	loop    *loopFile // syncLoopIteration, once read
	scope   []string
	impls   map[string][]Named
	callers map[string][]CallSite
}

func newExtraction(fsys fs.FS, tag string) *extraction {
	return &extraction{FS: fsys, Tag: tag, Fset: token.NewFileSet(), pkgs: map[string]*Package{},
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
func (x *extraction) ParseSource(path string, src []byte, comments bool) (*File, error) {
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
func (x *extraction) ReadParse(path string) (*File, error) {
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

// unsupported is the error for a tree that has the kubelet but not the shape
// syncloop reads.
func (x *extraction) unsupported(format string, args ...any) error {
	return fmt.Errorf("%w: %s at %s: %s; syncloop reads %s and later",
		ErrUnsupportedTag, kubeletFile, x.tagName(), fmt.Sprintf(format, args...), MinTag)
}

func (x *extraction) tagName() string {
	if x.Tag == "" {
		return "this tree"
	}
	return x.Tag
}

// notKubernetes wraps a missing-file error for a tree that is not Kubernetes.
func (x *extraction) notKubernetes(path string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%w: no %s in the source tree (%v); point at the top of a Kubernetes checkout", ErrNotKubernetes, path, err)
	}
	return fmt.Errorf("read %s: %w", path, err)
}
