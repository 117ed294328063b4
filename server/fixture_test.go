package server

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

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
	return newTestServerTuned(t, fl, nil)
}

// newTestServerTuned is newTestServer with its Config edited first.
func newTestServerTuned(t testing.TB, fl *fakeLoader, edit func(*Config)) *Server {
	t.Helper()
	if fl.readings == nil {
		fl.readings = map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}
	}
	cfg := Config{
		DefaultTag: fixture.Tag,
		CacheDir:   t.TempDir(),
		Load:       fl.load,
		Getenv:     func(string) string { return "" },
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, fixture.Tag)
	return s
}

// waitLoaded waits until tag's Load has finished, successfully or not.
func waitLoaded(t testing.TB, s *Server, tag string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.site.TagReady(ctx, tag); err != nil && ctx.Err() != nil {
		t.Fatalf("tag %s still loading after 30s", tag)
	}
}
