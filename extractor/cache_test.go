package extractor

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestCachedReadings(t *testing.T) {
	dir := t.TempDir()
	put := func(tag string, symbols []string, r *Reading) {
		t.Helper()
		if err := writeReading(readingPath(dir, tag, symbols), r); err != nil {
			t.Fatal(err)
		}
	}
	reading := func(tag string) *Reading {
		return &Reading{Schema: Schema, Module: Module, Tag: tag, Source: "proxy", ModuleHash: "h1:x"}
	}
	put("v1.25.0", nil, reading("v1.25.0"))
	put("v1.37.2", []string{"b", "a"}, reading("v1.37.2"))
	put("v1.31.0", nil, reading("v1.31.0"))
	put("v1.38.0-beta.0", nil, reading("v1.38.0-beta.0"))
	put("v1.20.0", nil, &Reading{Schema: Schema, Module: Module, Tag: "v1.30.0"}) // wrong tag inside
	// Another schema's Reading, a partial file and a stray directory.
	old := filepath.Join(dir, "readings", "v1.22.0", "schema0-000000000000.json")
	os.MkdirAll(filepath.Dir(old), 0o755)
	os.WriteFile(old, []byte(`{"schema":0}`), 0o644)
	partial := readingPath(dir, "v1.26.0", nil)
	os.MkdirAll(filepath.Dir(partial), 0o755)
	os.WriteFile(partial, []byte(`{"schema":1,"module":"k8s.io/kub`), 0o644)
	os.MkdirAll(filepath.Join(dir, "readings", "not-a-tag"), 0o755)

	tags, err := CachedTags(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"v1.38.0-beta.0", "v1.37.2", "v1.31.0", "v1.26.0", "v1.25.0", "v1.20.0"}
	if !slices.Equal(tags, want) {
		t.Errorf("CachedTags = %v, want %v", tags, want)
	}

	for _, tc := range []struct {
		tag     string
		symbols []string
		ok      bool
	}{
		{"v1.25.0", nil, true},
		{"v1.37.2", []string{"a", "b"}, true}, // symbol order does not matter
		{"v1.37.2", []string{"a", "b", "a"}, true},
		{"v1.37.2", nil, false},        // other symbols, other entry
		{"", []string{"a", "b"}, true}, // "" is DefaultTag
		{"v1.20.0", nil, false},        // the file holds another tag
		{"v1.22.0", nil, false},        // another schema
		{"v1.26.0", nil, false},        // partial file
		{"v1.99.0", nil, false},
		{"../readings", nil, false},
	} {
		r, ok := Cached(Options{Tag: tc.tag, Symbols: tc.symbols, CacheDir: dir})
		if ok != tc.ok {
			t.Errorf("Cached(%q, %v) ok = %v, want %v", tc.tag, tc.symbols, ok, tc.ok)
			continue
		}
		wantTag := tc.tag
		if wantTag == "" {
			wantTag = DefaultTag
		}
		if ok && r.Tag != wantTag {
			t.Errorf("Cached(%q) = Reading of %q, want %q", tc.tag, r.Tag, wantTag)
		}
	}
	if _, ok := Cached(Options{Tag: "v1.25.0", CacheDir: dir, SourceDir: "/src"}); ok {
		t.Error("Cached answered for a source directory")
	}
	if tags, err := CachedTags(t.TempDir()); err != nil || len(tags) != 0 {
		t.Errorf("CachedTags(empty) = %v, %v", tags, err)
	}
}
