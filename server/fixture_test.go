package server

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// fixtureTag is the tag the fixture Reading claims to be.
const fixtureTag = "v1.37.2"

// fixtureFirst is the line number of testdata/loop.go.txt's first line, as
// if it sat deep in a large file.
const fixtureFirst = 1000

var caseLine = regexp.MustCompile(`^\tcase (?:.*?)<-(.+):$`)

// fixtureReading builds a Reading from testdata/loop.go.txt, a made-up loop
// in the shape of the kubelet's (no Kubernetes source is committed here).
// Cases and helpers are found the way a reader would, by their lines.
func fixtureReading(t testing.TB) *extractor.Reading {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "loop.go.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	num := func(i int) int { return fixtureFirst + i }
	f := extractor.Function{Name: "tinyLoopIteration", File: "pkg/kubelet/tiny.go", DocStart: num(0)}
	var doc []string
	helperAt := -1
	for i, l := range lines {
		switch {
		case strings.HasPrefix(l, "func (kl *Kubelet)"):
			f.Start = num(i)
		case f.Start == 0:
			doc = append(doc, strings.TrimPrefix(strings.TrimPrefix(l, "//"), " "))
		case caseLine.MatchString(l):
			ch := caseLine.FindStringSubmatch(l)[1]
			key := strings.TrimSuffix(ch, "Ch")
			if m := regexp.MustCompile(`kl\.(\w+)Manager\.Updates\(\)`).FindStringSubmatch(ch); m != nil {
				key = m[1]
			}
			key = strings.TrimPrefix(key, "kl.")
			if n := len(f.Cases); n > 0 {
				f.Cases[n-1].End = num(i - 1)
			}
			f.Cases = append(f.Cases, extractor.Case{Key: key, Comm: strings.TrimSuffix(strings.TrimPrefix(l, "\tcase "), ":"), Channel: ch, Type: "tiny.Update", Start: num(i)})
		case l == "\t}" && f.End == 0 && len(f.Cases) > 0 && f.Cases[len(f.Cases)-1].End == 0:
			f.Cases[len(f.Cases)-1].End = num(i - 1)
		case l == "}" && f.End == 0:
			f.End = num(i)
		case strings.HasPrefix(l, "// tinyProbeSync"):
			helperAt = i
		}
	}
	f.Doc = strings.Join(doc, "\n")
	f.Text = strings.Join(lines[:f.End-fixtureFirst+1], "\n") + "\n"
	f.Upstream = upstreamURL(fixtureTag, f.File, f.DocStart, f.End)
	for i := range f.Cases {
		c := &f.Cases[i]
		for n := c.Start; n <= c.End; n++ {
			if m := regexp.MustCompile(`logger\.(?:V\((\d)\)\.)?(\w+)\((?:err, )?"([^"]*)`).FindStringSubmatch(lines[n-fixtureFirst]); m != nil {
				c.Logs = append(c.Logs, extractor.LogSite{File: f.File, Line: n, Func: f.Name, Message: m[3], Severity: strings.ToLower(m[2])})
			}
		}
	}
	h := extractor.Helper{Name: "tinyProbeSync", DocStart: num(helperAt), Start: num(helperAt + 1), End: num(len(lines) - 1),
		Text: strings.Join(lines[helperAt:], "\n") + "\n", Cases: []string{"liveness", "readiness"}}
	h.Upstream = upstreamURL(fixtureTag, f.File, h.DocStart, h.End)
	f.Helpers = []extractor.Helper{h}
	return &extractor.Reading{
		Schema:   extractor.Schema,
		Module:   extractor.Module,
		Tag:      fixtureTag,
		Source:   "dir",
		Verified: extractor.VerifiedNone,
		Function: f,
		PodWorkers: extractor.PodWorkers{File: "pkg/kubelet/pod_workers.go", Types: []extractor.TypeDecl{
			{Name: "podWork", Kind: "struct", Line: 40, End: 50, Doc: "podWork is <one> unit of work & more.", Upstream: upstreamURL(fixtureTag, "pkg/kubelet/pod_workers.go", 40, 40)},
			{Name: "undocumented", Kind: "ident", Line: 60, End: 60},
		}},
		TwoSets: []extractor.SetDecl{
			{Name: "DesiredStateOfWorld", File: "pkg/kubelet/volumemanager/cache/desired_state_of_world.go", Line: 45, Kind: "interface", Upstream: "https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/volumemanager/cache/desired_state_of_world.go#L45"},
			{Name: "ActualStateOfWorld", File: "pkg/kubelet/volumemanager/cache/actual_state_of_world.go", Line: 50, Kind: "interface", Upstream: "https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/volumemanager/cache/actual_state_of_world.go#L50"},
		},
		Symbols: map[string]extractor.Symbol{},
	}
}

// fakeLoader stands in for extractor.Load: it serves readings by tag, fails
// with errs by tag, and can hold a tag's load until released.
type fakeLoader struct {
	mu       sync.Mutex
	readings map[string]*extractor.Reading
	errs     map[string]error
	hold     map[string]chan struct{}
	calls    atomic.Int32
}

func (f *fakeLoader) load(ctx context.Context, o extractor.Options) (*extractor.Reading, error) {
	f.calls.Add(1)
	f.mu.Lock()
	hold := f.hold[o.Tag]
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.errs[o.Tag]; err != nil {
		return nil, err
	}
	if r := f.readings[o.Tag]; r != nil {
		return r, nil
	}
	return nil, &tagError{kind: extractor.ErrUnknownTag, msg: "tag " + o.Tag + " is not served by the module proxy"}
}

// tagError is an error of a sentinel kind with a message, like the
// extractor's.
type tagError struct {
	kind error
	msg  string
}

func (e *tagError) Error() string { return e.msg }
func (e *tagError) Unwrap() error { return e.kind }

// newTestServer returns a server whose default tag is the fixture, loaded.
func newTestServer(t testing.TB, fl *fakeLoader) *Server {
	t.Helper()
	if fl.readings == nil {
		fl.readings = map[string]*extractor.Reading{fixtureTag: fixtureReading(t)}
	}
	s, err := NewServer(Config{
		DefaultTag: fixtureTag,
		CacheDir:   t.TempDir(),
		Load:       fl.load,
		Getenv:     func(string) string { return "" },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, fixtureTag)
	return s
}

// waitLoaded waits until tag's Load has finished, successfully or not.
func waitLoaded(t testing.TB, s *Server, tag string) {
	t.Helper()
	st := s.state(tag)
	select {
	case <-st.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("tag %s still loading after 30s", tag)
	}
}
