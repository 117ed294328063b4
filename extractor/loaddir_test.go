package extractor_test

import (
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

// TestLoadDir reads an extracted tree, as from a checkout: the default tag's
// zip unpacked into the test's own directory.
func TestLoadDir(t *testing.T) {
	extractortest.NeedNetwork(t)
	dir := extractortest.Tree(t, extractor.DefaultTag)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("source dir Load made a request: %s", r.URL)
	}))
	defer srv.Close()
	getenv := func(k string) string {
		if k == "GOPROXY" {
			return srv.URL
		}
		return ""
	}
	want := []string{"config", "pleg", "sync", "liveness", "readiness", "startup", "container", "housekeeping"}
	cache := t.TempDir()
	for _, tc := range []struct{ tag, want string }{{extractor.DefaultTag, extractor.DefaultTag}, {"", "dir"}} {
		r, err := extractor.Load(t.Context(), extractor.Options{SourceDir: dir, Tag: tc.tag, CacheDir: cache, Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, c := range r.Function.Cases {
			keys = append(keys, c.Key)
		}
		if r.Source != "dir" || r.ModuleHash != "" || r.Tag != tc.want || !slices.Equal(keys, want) {
			t.Errorf("Reading = %s %q %q %v, want dir, no hash, tag %q, %v", r.Source, r.ModuleHash, r.Tag, keys, tc.want, want)
		}
	}
	var cached []string
	filepath.WalkDir(cache, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			cached = append(cached, path)
		}
		return nil
	})
	if len(cached) != 0 {
		t.Errorf("source dir Readings are not cached, but found %v", cached)
	}
}
