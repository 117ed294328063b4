package module

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"hash/crc32"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
)

// Test helpers shared with the extractor's own tests (fetch_test.go there):
// fake module zips, a fake proxy with a checksum database, a module cache.

// env returns a getenv over vars only, so the tests never see the
// developer's GOPROXY, GOMODCACHE or GOSUMDB.
func env(vars ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(vars); i += 2 {
		m[vars[i]] = vars[i+1]
	}
	return func(k string) string { return m[k] }
}

// fakeZip returns a module zip for tag holding files (slash paths under the
// module root), and its h1: hash.
func fakeZip(t testing.TB, tag string, files map[string]string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(Path + "@" + tag + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "m.zip")
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := dirhash.HashZip(p, dirhash.Hash1)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), h
}

// proxy is an httptest module proxy serving zips by tag, counting requests.
type proxy struct {
	*httptest.Server
	requests    atomic.Int64 // all requests
	zipRequests atomic.Int64
	zips        map[string][]byte // tag → zip
	status      int               // when non-zero, every zip request gets it
	delay       time.Duration     // before answering a zip request
	mux         *http.ServeMux
}

// newProxy starts a proxy serving zips, configured by options before it
// starts.
func newProxy(t testing.TB, zips map[string][]byte, options ...func(*proxy)) *proxy {
	p := &proxy{zips: zips, mux: http.NewServeMux()}
	for _, o := range options {
		o(p)
	}
	p.mux.HandleFunc("/k8s.io/kubernetes/@v/", func(w http.ResponseWriter, r *http.Request) {
		p.zipRequests.Add(1)
		time.Sleep(p.delay) // sleep: the fake proxy is slow by p.delay
		if p.status != 0 {
			http.Error(w, "status forced by the test", p.status)
			return
		}
		tag, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/k8s.io/kubernetes/@v/"), ".zip")
		z, found := p.zips[tag]
		if !ok || !found {
			http.Error(w, "not found: k8s.io/kubernetes@"+tag+": invalid version", http.StatusNotFound)
			return
		}
		w.Write(z)
	})
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.requests.Add(1)
		p.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func withStatus(code int) func(*proxy) { return func(p *proxy) { p.status = code } }

// cacheFiles lists the files under dir (relative), for asserting what a
// failed Load left behind.
func cacheFiles(t testing.TB, dir string, sub ...string) []string {
	t.Helper()
	var files []string
	for _, s := range sub {
		filepath.WalkDir(filepath.Join(dir, s), func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				rel, _ := filepath.Rel(dir, path)
				files = append(files, rel)
			}
			return nil
		})
	}
	return files
}

// writeModCache puts a module zip (and, when ziphash is not "", its
// .ziphash) for tag into a new module cache and returns its directory.
func writeModCache(t testing.TB, tag string, zipData []byte, ziphash string) string {
	dir := t.TempDir()
	at := filepath.Join(dir, "cache", "download", "k8s.io", "kubernetes", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, tag+".zip"), zipData, 0o644); err != nil {
		t.Fatal(err)
	}
	if ziphash != "" {
		if err := os.WriteFile(filepath.Join(at, tag+".ziphash"), []byte(ziphash), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rawEntry is a zip entry written as given: its declared size need not
// be what its data inflates to.
type rawEntry struct {
	name     string
	data     []byte // what the entry really inflates to
	declared uint64 // the size its header claims; 0 means len(data)
}

// craftZip makes a module zip for tag from entries, deflated.
func craftZip(t *testing.T, tag string, entries []rawEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	deflated := map[*byte]*bytes.Buffer{} // entries sharing their data share its deflation
	for _, e := range entries {
		c := deflated[&e.data[0]]
		if c == nil {
			c = new(bytes.Buffer)
			fw, _ := flate.NewWriter(c, flate.BestSpeed)
			fw.Write(e.data)
			fw.Close()
			deflated[&e.data[0]] = c
		}
		declared := e.declared
		if declared == 0 {
			declared = uint64(len(e.data))
		}
		w, err := zw.CreateRaw(&zip.FileHeader{
			Name: Path + "@" + tag + "/" + e.name, Method: zip.Deflate,
			CRC32: crc32.ChecksumIEEE(e.data), CompressedSize64: uint64(c.Len()), UncompressedSize64: declared,
		})
		if err != nil {
			t.Fatal(err)
		}
		w.Write(c.Bytes())
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

var kubeletFiles = map[string]string{
	"pkg/kubelet/kubelet.go": "package kubelet\n",
	"go.mod":                 "module k8s.io/kubernetes\n",
}
