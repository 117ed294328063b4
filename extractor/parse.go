package extractor

// parse.go holds Extract and the machinery every part of the extraction
// shares: one FileSet, files read from the fs.FS, line arithmetic and the
// upstream links. The parts themselves live in parse_function.go (the
// function and its cases), logs.go, podworkers.go, twosets.go and symbols.go.

import (
	"errors"
	"fmt"
	"go/ast"
	"io/fs"
	"path"
	"slices"

	"github.com/syncloop/syncloop/extractor/defs"

	"github.com/syncloop/syncloop/extractor/index"
)

// The files the Reading is about, relative to the module root.
const (
	kubeletFile    = "pkg/kubelet/kubelet.go"
	podWorkersFile = "pkg/kubelet/pod_workers.go"
	loopFunc       = "syncLoopIteration"
)

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

// extraction is the state of one Extract call: the tree's index, and the
// loop function once read (the parts of the Reading all start from it).
type extraction struct {
	*index.Index
	loop *loopFile // syncLoopIteration, once read
}

func newExtraction(fsys fs.FS, tag string) *extraction {
	return &extraction{Index: index.New(fsys, tag)}
}

// UpstreamURL links to lines from..to of file at tag on GitHub
// (index.UpstreamURL).
func UpstreamURL(tag, file string, from, to int) string {
	return index.UpstreamURL(tag, file, from, to)
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
		for _, s := range slices.Concat(c.Writers, c.Upstream, c.Goroutine, c.Made) {
			roots = append(roots, s.Func)
		}
	}
	var helperDecls []*ast.FuncDecl
	for _, h := range helpers {
		if d, ok := x.loop.funcs[h]; ok {
			helperDecls = append(helperDecls, d)
		}
	}
	loop := &index.Func{F: x.loop.F, Dir: path.Dir(x.loop.F.Path), Decl: x.loop.fd}
	r.Defs = defs.Build(x.Index, Schema, loop, helperDecls, roots)
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
