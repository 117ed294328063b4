package content_test

import (
	"archive/zip"
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
)

// TestNotesAtDefaultTag extracts the default tag from its real module zip and
// checks the notes against it: every sym: target resolves, and every case of
// syncLoopIteration has a note.
func TestNotesAtDefaultTag(t *testing.T) {
	tag := extractor.DefaultTag
	fsys := moduleZip(t, tag)
	syms := content.Symbols()
	r, err := extractor.Extract(fsys, tag, syms)
	if err != nil {
		if os.Getenv("CI") != "true" && strings.Contains(err.Error(), "not implemented") {
			t.Skipf("extractor.Extract is not written yet: %v", err)
		}
		t.Fatalf("extract %s: %v", tag, err)
	}

	t.Run("every symbol resolves", func(t *testing.T) {
		if len(syms) == 0 {
			t.Fatal("the notes link no symbol")
		}
		for _, s := range syms {
			if got, ok := r.Symbols[s]; !ok || !got.Found {
				t.Errorf("%s does not resolve at %s; fix the note that links it", s, tag)
			}
		}
	})

	t.Run("every case has a note", func(t *testing.T) {
		notes, err := content.Notes()
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, n := range notes {
			if n.Kind == content.KindCase {
				have[n.Key] = true
			}
		}
		if len(r.Function.Cases) < 8 {
			t.Fatalf("extracted %d cases at %s, want 8", len(r.Function.Cases), tag)
		}
		for _, c := range r.Function.Cases {
			if !have[c.Key] {
				t.Errorf("case %q (%s) at %s has no note", c.Key, c.Comm, tag)
			}
		}
	})
}

// moduleZip opens k8s.io/kubernetes@tag's module zip from the module cache,
// or downloads it from the module proxy into a temporary directory (CI starts
// with an empty cache), checks its hash, and returns the module's root.
func moduleZip(t *testing.T, tag string) fs.FS {
	t.Helper()
	if tag != extractor.DefaultTag {
		t.Fatalf("only the default tag's hash is pinned")
	}
	modcache := os.Getenv("GOMODCACHE")
	if modcache == "" {
		gopath := os.Getenv("GOPATH")
		if gopath == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				t.Fatal(err)
			}
			gopath = filepath.Join(home, "go")
		}
		modcache = filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
	}
	path := filepath.Join(modcache, "cache", "download", "k8s.io", "kubernetes", "@v", tag+".zip")
	if _, err := os.Stat(path); err != nil {
		path = filepath.Join(t.TempDir(), tag+".zip")
		download(t, "https://proxy.golang.org/k8s.io/kubernetes/@v/"+tag+".zip", path)
	}
	sum, err := dirhash.HashZip(path, dirhash.Hash1)
	if err != nil {
		t.Fatalf("hash %s: %v", path, err)
	}
	if sum != extractor.DefaultTagHash {
		t.Fatalf("%s has hash %s, want %s", path, sum, extractor.DefaultTagHash)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { zr.Close() })
	root, err := fs.Sub(&zr.Reader, extractor.Module+"@"+tag)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func download(t *testing.T, url, path string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("download %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("download %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		t.Fatalf("download %s: %v", url, err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}
