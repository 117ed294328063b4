package extractor

// twosets.go finds the "two sets" the kubelet reconciles: every type named
// DesiredStateOfWorld or ActualStateOfWorld declared under pkg/. It reads
// every non-test Go file there (the zip must inflate each), so files are read
// and filtered by bytes in parallel and only the few that mention the names
// are parsed.

import (
	"bytes"
	"io"
	"io/fs"
	"runtime"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/syncloop/syncloop/extractor/index"
)

var twoSetNames = []string{"DesiredStateOfWorld", "ActualStateOfWorld"}

func (x *extraction) twoSets() ([]SetDecl, error) {
	var paths []string
	err := fs.WalkDir(x.FS, "pkg", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return nil, x.notKubernetes("pkg", err)
	}

	srcs, errs := x.readMentioning(paths, []byte("StateOfWorld"))
	out := []SetDecl{}
	for i, p := range paths {
		if errs[i] != nil {
			return nil, x.notKubernetes(p, errs[i])
		}
		if srcs[i] == nil || !mentionsTwoSets(srcs[i]) {
			continue
		}
		f, err := x.ParseSource(p, srcs[i], true)
		if err != nil {
			return nil, err
		}
		for gd, ts := range index.TypeSpecs(f.AST) {
			if !isTwoSetName(ts.Name.Name) {
				continue
			}
			line := f.Line(ts.Name.Pos())
			out = append(out, SetDecl{
				Name:     ts.Name.Name,
				File:     p,
				Line:     line,
				Kind:     typeKind(ts),
				Doc:      index.DocVerbatim(specDoc(gd, ts)),
				Upstream: UpstreamURL(x.Tag, p, line, line),
			})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		ki, kj := strings.HasPrefix(out[i].File, "pkg/kubelet/"), strings.HasPrefix(out[j].File, "pkg/kubelet/")
		if ki != kj {
			return ki
		}
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	return out, nil
}

// readMentioning reads the files at paths and keeps those that contain
// word: srcs[i] is the file at paths[i] when it does, nil otherwise, and
// errs[i] what reading it failed with.
func (x *extraction) readMentioning(paths []string, word []byte) (srcs [][]byte, errs []error) {
	// Inflating ~25 MB of source is most of Extract's time: spread it over
	// the cores. Each worker keeps the files that mention a name.
	srcs = make([][]byte, len(paths))
	errs = make([]error, len(paths))
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(runtime.GOMAXPROCS(0), 8)) {
		wg.Go(func() {
			// One buffer per worker: only the few files that match are
			// copied out, which spares the collector ~25 MB per Extract.
			var buf []byte
			for i := range next {
				var err error
				buf, err = readInto(x.FS, paths[i], buf[:0])
				if err != nil {
					errs[i] = err
					continue
				}
				if bytes.Contains(buf, word) {
					srcs[i] = bytes.Clone(buf)
				}
			}
		})
	}
	for i := range paths {
		next <- i
	}
	close(next)
	wg.Wait()

	return srcs, errs
}

// readInto appends the contents of name to buf.
func readInto(fsys fs.FS, name string, buf []byte) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > 0 && st.Size() < 1<<30 {
		buf = slices.Grow(buf, int(st.Size())+1)
	}
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, 4096)
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

func mentionsTwoSets(src []byte) bool {
	for _, n := range twoSetNames {
		if bytes.Contains(src, []byte(n)) {
			return true
		}
	}
	return false
}

func isTwoSetName(s string) bool {
	for _, n := range twoSetNames {
		if s == n {
			return true
		}
	}
	return false
}
