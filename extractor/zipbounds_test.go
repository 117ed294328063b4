package extractor

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"errors"
	"hash/crc32"
	"runtime"
	"strings"
	"testing"
)

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
			Name: Module + "@" + tag + "/" + e.name, Method: zip.Deflate,
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

// TestZipBomb: a module zip over Go's limits, served by a proxy with no
// checksum database to stop it (GOSUMDB=off, as GONOSUMDB, GOPRIVATE or a
// private proxy would have it), is refused with a clear error, reading
// little of it and holding little memory.
func TestZipBomb(t *testing.T) {
	const tag = "v1.30.0"
	zeros := func(n int) []byte { return make([]byte, n) }
	small := []byte("package kubelet\n")
	for _, tc := range []struct {
		name    string
		entries []rawEntry
		want    string
	}{
		{"a file declaring a terabyte", []rawEntry{
			{name: "go.mod", data: []byte("module k8s.io/kubernetes\n")},
			{name: "pkg/kubelet/kubelet.go", data: small, declared: 1 << 40},
		}, "over 500 MB uncompressed together"},
		{"files declaring 560 MB together, honestly", func() []rawEntry {
			es := []rawEntry{{name: "pkg/kubelet/kubelet.go", data: small}}
			z := zeros(14 << 20)
			for i := range 40 {
				es = append(es, rawEntry{name: "vendor-like/f" + string(rune('a'+i%26)) + string(rune('a'+i/26)) + ".txt", data: z})
			}
			return es
		}(), "over 500 MB uncompressed together"},
		{"a go.mod over Go's 16 MB", []rawEntry{
			{name: "go.mod", data: zeros(17 << 20)},
			{name: "pkg/kubelet/kubelet.go", data: small},
		}, "go.mod declares 17825792 bytes"},
		{"the kubelet source of 17 MB", []rawEntry{
			{name: "pkg/kubelet/kubelet.go", data: append([]byte("package kubelet\n//"), bytes.Repeat([]byte("x"), 17<<20)...)},
		}, "pkg/kubelet/kubelet.go declares"},
		{"a file inflating past what it declares", []rawEntry{
			{name: "go.mod", data: []byte("module k8s.io/kubernetes\n")},
			{name: "pkg/kubelet/kubelet.go", data: append([]byte("package kubelet\n//"), bytes.Repeat([]byte("y"), 4<<20)...), declared: 100},
		}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := craftZip(t, tag, tc.entries)
			if len(data) > 2<<20 {
				t.Fatalf("the crafted zip is %d bytes: not a bomb", len(data))
			}
			p := newProxy(t, map[string][]byte{tag: data})
			opts := Options{Tag: tag, CacheDir: t.TempDir(), Getenv: env("GOPROXY", p.URL, "GOSUMDB", "off", "GOMODCACHE", t.TempDir())}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := Load(t.Context(), opts)
			runtime.ReadMemStats(&after)
			if err == nil {
				t.Fatal("Load took the zip")
			}
			if tc.want != "" && (!errors.Is(err, ErrZipTooLarge) || !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err = %v, want ErrZipTooLarge saying %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), Module+"@"+tag) && !strings.Contains(err.Error(), "zip") {
				t.Errorf("err = %v: does not say what was refused", err)
			}
			// The zip itself (under 2 MB) is downloaded and buffered; what
			// it would inflate to (60 MB to a terabyte) never is.
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 32<<20 {
				t.Errorf("Load allocated %d MB refusing a %d KB zip", alloc>>20, len(data)>>10)
			}
			t.Logf("%v", err)
		})
	}
}
