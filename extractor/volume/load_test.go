package volume

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/mod/sumdb/dirhash"

	"github.com/syncloop/syncloop/extractor"
)

// TestLoadCachesTheReading: Load derives a tag's reading from its verified
// module-cache zip, caches it, and serves it from the cache once the zip is
// gone; a tag not cached and not fetchable says so.
func TestLoadCachesTheReading(t *testing.T) {
	const tag = "v1.29.4"
	mod := fakeModCache(t, tag)
	cache := t.TempDir()
	opts := extractor.Options{Tag: tag, CacheDir: cache, Getenv: withEnv("GOPROXY", "off", "GOMODCACHE", mod)}
	if _, ok := Cached(opts); ok {
		t.Fatal("cached before any Load")
	}
	r, err := Load(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Entry.Func != "reconcileNew" || r.Verified != extractor.VerifiedZiphash || r.ModuleHash == "" {
		t.Errorf("Load = entry %s, verified %q, hash %q; want reconcileNew from a zip verified by its .ziphash", r.Entry.Func, r.Verified, r.ModuleHash)
	}
	if err := os.RemoveAll(mod); err != nil {
		t.Fatal(err)
	}
	again, err := Load(t.Context(), opts)
	if err != nil {
		t.Fatalf("Load with the zip gone: %v (not served from the cache)", err)
	}
	if again.Entry.Func != r.Entry.Func || again.ModuleHash != r.ModuleHash || len(again.Parts) != len(r.Parts) {
		t.Errorf("cached reading differs: %+v", again.Entry)
	}
	if _, err := Load(t.Context(), extractor.Options{Tag: "v1.29.5", CacheDir: cache, Getenv: opts.Getenv}); err == nil {
		t.Error("Load of a tag neither cached nor fetchable (GOPROXY=off) succeeded")
	}
}

func withEnv(kv ...string) func(string) string {
	return func(k string) string {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == k {
				return kv[i+1]
			}
		}
		return ""
	}
}

// fakeModCache is a module cache holding a zip of the fixture tree at tag
// and its .ziphash.
func fakeModCache(t *testing.T, tag string) string {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	files := fixture()
	files["pkg/kubelet/kubelet.go"] = files["pkg/kubelet/volumemanager/cache/cache.go"]
	for name, f := range files {
		w, err := zw.Create(extractor.Module + "@" + tag + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(f.Data)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	at := filepath.Join(dir, "cache", "download", "k8s.io", "kubernetes", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	zp := filepath.Join(at, tag+".zip")
	if err := os.WriteFile(zp, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := dirhash.HashZip(zp, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, tag+".ziphash"), []byte(h+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
