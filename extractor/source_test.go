package extractor

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// putModCache writes a zip and its .ziphash into a fresh module cache.
func putModCache(t *testing.T, tag string, data []byte, ziphash string) string {
	t.Helper()
	dir := t.TempDir()
	at := filepath.Join(dir, "cache", "download", "k8s.io", "kubernetes", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, tag+".zip"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, tag+".ziphash"), []byte(ziphash+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestOpenSourceVerifiesModCacheZip: a module-cache zip is hashed against
// its .ziphash before its tree is handed out, and refused when they differ.
func TestOpenSourceVerifiesModCacheZip(t *testing.T) {
	const tag = "v1.30.1"
	data, h := fakeZip(t, tag, kubeletFiles)
	mod := putModCache(t, tag, data, h)
	src, err := OpenSource(t.Context(), Options{Tag: tag, CacheDir: t.TempDir(), Getenv: env("GOPROXY", "off", "GOMODCACHE", mod)})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Tag != tag || src.Kind != "modcache" || src.Verified != VerifiedZiphash || src.ModuleHash != h || src.ZipPath == "" {
		t.Errorf("Source = %+v, want %s from the module cache, verified by its .ziphash %s", src, tag, h)
	}
	if b, err := fs.ReadFile(src.FS, "pkg/kubelet/kubelet.go"); err != nil || string(b) != kubeletFiles["pkg/kubelet/kubelet.go"] {
		t.Errorf("kubelet.go through the Source: %q, %v", b, err)
	}

	bad := putModCache(t, tag, data, "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
	if src, err := OpenSource(t.Context(), Options{Tag: tag, CacheDir: t.TempDir(), Getenv: env("GOPROXY", "off", "GOMODCACHE", bad)}); !errors.Is(err, ErrChecksumMismatch) {
		if src != nil {
			src.Close()
		}
		t.Errorf("OpenSource with a wrong .ziphash = %v, want ErrChecksumMismatch", err)
	}
}

// TestOpenSourceDir: a checkout is opened as is; a directory that is no
// Kubernetes tree is refused with what to give instead.
func TestOpenSourceDir(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenSource(t.Context(), Options{SourceDir: dir}); !errors.Is(err, ErrNotKubernetes) {
		t.Errorf("OpenSource of an empty dir = %v, want ErrNotKubernetes", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "pkg", "kubelet"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "pkg", "kubelet", "kubelet.go"), []byte("package kubelet\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := OpenSource(t.Context(), Options{SourceDir: dir, Tag: "v1.31.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if src.Kind != "dir" || src.Verified != VerifiedNone || src.Tag != "v1.31.0" {
		t.Errorf("Source of a dir = %+v", src)
	}
}
