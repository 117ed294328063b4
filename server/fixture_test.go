package server

import (
	"context"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// newTestServer returns a server whose default tag is the fixture, loaded.
func newTestServer(t testing.TB, fl *fixture.Loader) *Server {
	t.Helper()
	return newTestServerTuned(t, fl, nil)
}

// newTestServerTuned is newTestServer with its Config edited first, then
// its parts' own configurations (tune).
func newTestServerTuned(t testing.TB, fl *fixture.Loader, edit func(*Config), tune ...func(*Plan)) *Server {
	t.Helper()
	if fl.Readings == nil {
		fl.Readings = map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}
	}
	cfg := Config{
		DefaultTag: fixture.Tag,
		CacheDir:   t.TempDir(),
		Load:       fl.Load,
		Getenv:     func(string) string { return "" },
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := openTuned(cfg, tune...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, fixture.Tag)
	return s
}

// openTuned is Open with the parts' own configurations edited by tune
// before they are opened: what a test changes that the command line does
// not (a rate, a grace, a wait).
func openTuned(cfg Config, tune ...func(*Plan)) (*Server, error) {
	p, err := NewPlan(cfg)
	if err != nil {
		return nil, err
	}
	for _, f := range tune {
		f(p)
	}
	d, err := p.Build()
	if err != nil {
		return nil, err
	}
	return New(d), nil
}

// waitLoaded waits until tag's Load has finished, successfully or not.
func waitLoaded(t testing.TB, s *Server, tag string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.site.TagReady(ctx, "test", tag); err != nil && ctx.Err() != nil {
		t.Fatalf("tag %s still loading after 30s", tag)
	}
}
