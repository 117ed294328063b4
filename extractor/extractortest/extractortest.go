// Package extractortest gives tests the real k8s.io/kubernetes module zip of
// a tag, and its Reading, the same way in every package: from the Go module
// cache when it is there, else downloaded once per test process from the
// module proxy into a directory that later runs reuse. CI starts with an
// empty module cache, so it downloads.
package extractortest

import (
	"archive/zip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/mod/semver"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/sync/errgroup"

	"github.com/syncloop/syncloop/extractor"
)

// NeedNetwork skips a test that may download a zip (~15-20 MB) in -short
// mode, unless CI=true, where nothing skips.
func NeedNetwork(tb testing.TB) {
	tb.Helper()
	if testing.Short() && os.Getenv("CI") != "true" {
		tb.Skip("skipping in -short mode: this test reads real Kubernetes zips from the module cache or the proxy")
	}
}

type once struct {
	once sync.Once
	path string
	err  error
}

var zips sync.Map // tag → *once

// Zip returns the path of k8s.io/kubernetes@tag's module zip. The default
// tag's zip is checked against its pinned hash, so a test never reads a
// corrupt one silently.
func Zip(tb testing.TB, tag string) string {
	tb.Helper()
	v, _ := zips.LoadOrStore(tag, &once{})
	z := v.(*once)
	z.once.Do(func() { z.path, z.err = findOrFetch(tag) })
	if z.err != nil {
		tb.Fatalf("k8s.io/kubernetes@%s: %v", tag, z.err)
	}
	return z.path
}

// FS opens the tag's zip and returns the module's root; the zip is closed
// when the test ends.
func FS(tb testing.TB, tag string) fs.FS {
	tb.Helper()
	zr, err := zip.OpenReader(Zip(tb, tag))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { zr.Close() })
	root, err := fs.Sub(zr, extractor.Module+"@"+tag)
	if err != nil {
		tb.Fatal(err)
	}
	return root
}

type reading struct {
	once sync.Once
	r    *extractor.Reading
	err  error
}

var readings sync.Map // tag + "\x00" + symbols → *reading

// Reading returns the tag's Reading (with symbols resolved), extracted once
// per test process, or once for every test binary while the extractor's code
// is unchanged: see cachedExtract. Callers share it and must not modify it.
func Reading(tb testing.TB, tag string, symbols []string) *extractor.Reading {
	tb.Helper()
	v, _ := readings.LoadOrStore(tag+"\x00"+strings.Join(symbols, "\x00"), &reading{})
	r := v.(*reading)
	r.once.Do(func() { r.r, r.err = cachedExtract(tb, tag, symbols) })
	if r.err != nil {
		tb.Fatalf("extract %s: %v", tag, r.err)
	}
	return r.r
}

func extract(path, tag string, symbols []string) (*extractor.Reading, error) {
	zr, err := zip.OpenReader(path)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	root, err := fs.Sub(zr, extractor.Module+"@"+tag)
	if err != nil {
		return nil, err
	}
	return extractor.Extract(root, tag, symbols)
}

// modCache is where the go command keeps downloads: GOMODCACHE, else the
// first GOPATH entry's pkg/mod, else ~/go/pkg/mod.
func modCache() string {
	if d := os.Getenv("GOMODCACHE"); d != "" {
		return d
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		home, _ := os.UserHomeDir()
		gopath = filepath.Join(home, "go")
	}
	return filepath.Join(filepath.SplitList(gopath)[0], "pkg", "mod")
}

func downloadDir() string { return filepath.Join(os.TempDir(), "syncloop-test-zips") }

func findOrFetch(tag string) (string, error) {
	for _, p := range []string{
		filepath.Join(modCache(), "cache", "download", "k8s.io", "kubernetes", "@v", tag+".zip"),
		filepath.Join(downloadDir(), tag+".zip"),
	} {
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p, check(p, tag)
		}
	}
	return fetch(tag)
}

// check compares the default tag's zip with the hash pinned in the code. The
// hash recorded beside the zip (.ziphash, as the go command writes after
// verifying a download) stands for the zip: hashing 20 MB under -race takes
// tens of seconds.
func check(path, tag string) error {
	if tag != extractor.DefaultTag {
		return nil
	}
	ziphash := strings.TrimSuffix(path, ".zip") + ".ziphash"
	sum := ""
	if b, err := os.ReadFile(ziphash); err == nil {
		sum = strings.TrimSpace(string(b))
	} else {
		if sum, err = dirhash.HashZip(path, dirhash.Hash1); err != nil {
			return fmt.Errorf("hash %s: %w", path, err)
		}
	}
	if sum != extractor.DefaultTagHash {
		return fmt.Errorf("%s has hash %s, want %s: remove it", path, sum, extractor.DefaultTagHash)
	}
	return nil
}

// proxy is the first http(s) entry of GOPROXY, as the go command would try.
func proxy() (string, error) {
	for _, e := range strings.FieldsFunc(os.Getenv("GOPROXY"), func(r rune) bool { return r == ',' || r == '|' }) {
		if e == "off" {
			return "", fmt.Errorf("not in the module cache, and GOPROXY=off")
		}
		if strings.HasPrefix(e, "http://") || strings.HasPrefix(e, "https://") {
			return strings.TrimSuffix(e, "/"), nil
		}
	}
	return "https://proxy.golang.org", nil
}

func fetch(tag string) (string, error) {
	base, err := proxy()
	if err != nil {
		return "", err
	}
	url := base + "/k8s.io/kubernetes/@v/" + tag + ".zip"
	resp, err := (&http.Client{Timeout: 3 * time.Minute}).Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(downloadDir(), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(downloadDir(), tag+".*.tmp")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, resp.Body); err != nil {
		tmp.Close()
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	// Only a whole, readable (and, for the default tag, verified) zip takes
	// the final name that later runs reuse.
	zr, err := zip.OpenReader(tmp.Name())
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	zr.Close()
	if err := check(tmp.Name(), tag); err != nil {
		return "", err
	}
	final := filepath.Join(downloadDir(), tag+".zip")
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	if tag == extractor.DefaultTag { // checked just now
		_ = os.WriteFile(strings.TrimSuffix(final, ".zip")+".ziphash", []byte(extractor.DefaultTagHash+"\n"), 0o644)
	}
	return final, nil
}

// Prefetch finds or downloads the tags' zips, four at a time (each is
// 15-30 MB; more at once only splits the same bandwidth). A tag that cannot
// be had fails the test that asks Zip for it. Later calls to Zip for these
// tags, in any test of the process, return at once; later processes find the
// zips in the download directory.
func Prefetch(tags ...string) {
	var g errgroup.Group
	g.SetLimit(4)
	for _, tag := range tags {
		v, _ := zips.LoadOrStore(tag, &once{})
		z := v.(*once)
		g.Go(func() error {
			z.once.Do(func() { z.path, z.err = findOrFetch(tag) })
			return nil // reported by Zip, to the test that needs the tag
		})
	}
	g.Wait()
}

// Tree unpacks the tag's module zip into a directory of the test's own, laid
// out as a Kubernetes checkout, for tests of --source-dir. Only the files
// extraction reads are written (go.mod and the Go files under pkg/ and
// cmd/kubelet/, where the writer derivation finds the kubelet's start-up),
// which keeps it to a few seconds.
func Tree(tb testing.TB, tag string) string {
	tb.Helper()
	root := FS(tb, tag)
	dir := tb.TempDir()
	err := fs.WalkDir(root, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name != "." && name != "pkg" && !strings.HasPrefix(name, "pkg/") &&
				name != "cmd" && name != "cmd/kubelet" && !strings.HasPrefix(name, "cmd/kubelet/") {
				return fs.SkipDir
			}
			return nil
		}
		if name != "go.mod" && !strings.HasSuffix(name, ".go") {
			return nil
		}
		b, err := fs.ReadFile(root, name)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		tb.Fatalf("unpack k8s.io/kubernetes@%s: %v", tag, err)
	}
	return dir
}

// NewestPatches is the newest version of every minor from v1.from to the
// newest the module proxy's @v/list serves, pre-releases included: the list's
// newest of each minor, by semver. A minor the list leaves out (it holds only
// the versions the proxy was asked for, and none of v1.20–v1.28 are there
// today) is read at its .0 release. The list is kept beside the downloaded
// zips for a day, so a warm run asks the proxy nothing.
func NewestPatches(tb testing.TB, from int) []string {
	tb.Helper()
	list, err := versionList()
	if err != nil {
		tb.Fatalf("list k8s.io/kubernetes versions: %v", err)
	}
	return newestPerMinor(list, from)
}

// newestPerMinor picks, from versions, the newest of each minor v1.from and
// later, and v1.N.0 for each minor in between that versions lacks.
func newestPerMinor(versions []string, from int) []string {
	best := map[int]string{}
	top := 0
	for _, v := range versions {
		var minor int
		if !semver.IsValid(v) || semver.Major(v) != "v1" {
			continue
		}
		if _, err := fmt.Sscanf(semver.MajorMinor(v), "v1.%d", &minor); err != nil || minor < from {
			continue
		}
		if b, ok := best[minor]; !ok || semver.Compare(v, b) > 0 {
			best[minor] = v
		}
		top = max(top, minor)
	}
	var out []string
	for m := from; m <= top; m++ {
		v, ok := best[m]
		if !ok {
			v = fmt.Sprintf("v1.%d.0", m)
		}
		out = append(out, v)
	}
	return out
}

// versionList is the proxy's @v/list for the module, from a copy less than a
// day old when there is one.
func versionList() ([]string, error) {
	file := filepath.Join(downloadDir(), "list")
	if st, err := os.Stat(file); err == nil && time.Since(st.ModTime()) < 24*time.Hour {
		if b, err := os.ReadFile(file); err == nil {
			return strings.Fields(string(b)), nil
		}
	}
	base, err := proxy()
	if err != nil {
		return nil, err
	}
	url := base + "/" + extractor.Module + "/@v/list"
	resp, err := (&http.Client{Timeout: time.Minute}).Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	// A copy that cannot be written costs the next run one request.
	if err := os.MkdirAll(downloadDir(), 0o755); err == nil {
		if f, err := os.CreateTemp(downloadDir(), "list.*.tmp"); err == nil {
			_, werr := f.Write(b)
			if cerr := f.Close(); werr == nil && cerr == nil {
				_ = os.Rename(f.Name(), file)
			}
			os.Remove(f.Name())
		}
	}
	return strings.Fields(string(b)), nil
}
