package module

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestBoundedFSReads: a file read through boundedFS yields exactly what its
// entry declares, and an error for a byte more.
func TestBoundedFSReads(t *testing.T) {
	const tag = "v1.30.0"
	data := craftZip(t, tag, []rawEntry{
		{name: "ok.txt", data: []byte("hello")},
		{name: "liar.txt", data: []byte("hello, and more"), declared: 5},
	})
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	fsys := boundedFS{zr, tag}
	f, err := fsys.Open(Path + "@" + tag + "/ok.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f); err != nil || string(b) != "hello" {
		t.Errorf("ok.txt: %q, %v", b, err)
	}
	f, err = fsys.Open(Path + "@" + tag + "/liar.txt")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(f); err == nil {
		t.Errorf("liar.txt read as %q with no error", b)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a", "b.json")
	if err := WriteFileAtomic(p, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(p, []byte("two")); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(p); string(data) != "two" {
		t.Errorf("content = %q, want %q", data, "two")
	}
	// A write that cannot complete (the target is a directory) leaves the
	// target as it was and no temporary file behind.
	blocked := filepath.Join(dir, "a", "dir.json")
	if err := os.MkdirAll(filepath.Join(blocked, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := WriteFileAtomic(blocked, []byte("three")); err == nil {
		t.Fatal("writeFileAtomic over a non-empty directory succeeded")
	}
	if files := cacheFiles(t, dir, "a"); !slices.Equal(files, []string{"a/b.json"}) {
		t.Errorf("files after a failed write = %v, want only a/b.json", files)
	}
}
