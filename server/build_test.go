package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestBuildUndoes: when a part fails to open (the rooms, here: an older
// version's rooms.json that does not parse), Build says why and closes
// every part opened before it. The broker's lock on the data dir is the
// witness: had it been left open, the next Build on the same dir would be
// refused as "in use by another syncloop serve".
func TestBuildUndoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	legacy := filepath.Join(dir, "rooms.json")
	if err := os.WriteFile(legacy, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}}
	cfg := Config{DefaultTag: fixture.Tag, CacheDir: t.TempDir(), DataDir: dir, Load: fl.Load,
		Getenv: func(string) string { return "" }, DemoPeriod: -1}
	build := func() (Deps, error) {
		p, err := NewPlan(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return p.Build()
	}
	if _, err := build(); err == nil || !strings.Contains(err.Error(), "is not a rooms file") {
		t.Fatalf("Build with a broken rooms.json: %v, want the rooms' error", err)
	}
	if err := os.Remove(legacy); err != nil {
		t.Fatal(err)
	}
	d, err := build()
	if err != nil {
		t.Fatalf("Build after a failed one on the same data dir: %v", err)
	}
	s := New(d)
	t.Cleanup(s.Close)
	waitLoaded(t, s, fixture.Tag)
	if w := get(t, s, "/healthz"); w.Code != 200 {
		t.Errorf("/healthz after the second Build: %d %s", w.Code, w.Body)
	}
}
