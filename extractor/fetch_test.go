package extractor

import (
	"archive/zip"
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/mod/sumdb"
	"golang.org/x/mod/sumdb/dirhash"
	"golang.org/x/mod/sumdb/note"

	"github.com/syncloop/syncloop/extractor/module"
	"github.com/syncloop/syncloop/internal/testwait"
)

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
		w, err := zw.Create(Module + "@" + tag + "/" + name)
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

var kubeletFiles = map[string]string{
	"pkg/kubelet/kubelet.go": "package kubelet\n",
	"go.mod":                 "module k8s.io/kubernetes\n",
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

func withDelay(d time.Duration) func(*proxy) { return func(p *proxy) { p.delay = d } }

// withSumDB makes the proxy serve a checksum database (as proxy.golang.org
// does at /sumdb/<name>/) that claims hashes[tag] for each tag, and returns
// the GOSUMDB value that trusts it.
func (p *proxy) withSumDB(t testing.TB, hashes map[string]string) string {
	skey, vkey, err := note.GenerateKey(rand.Reader, "sum.test")
	if err != nil {
		t.Fatal(err)
	}
	db := sumdb.NewTestServer(skey, func(path, vers string) ([]byte, error) {
		h, ok := hashes[vers]
		if path != Module || !ok {
			return nil, fmt.Errorf("%s@%s: %w", path, vers, fs.ErrNotExist)
		}
		return fmt.Appendf(nil, "%s %s %s\n%s %s/go.mod h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", path, vers, h, path, vers), nil
	})
	p.mux.HandleFunc("/sumdb/sum.test/supported", func(w http.ResponseWriter, r *http.Request) {})
	p.mux.Handle("/sumdb/sum.test/", http.StripPrefix("/sumdb/sum.test", sumdb.NewServer(db)))
	return vkey
}

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

func TestCheckTag(t *testing.T) {
	for _, tc := range []struct {
		tag  string
		want error
	}{
		{"v1.20.0", nil},
		{"v1.37.2", nil},
		{"v1.38.0-beta.0", nil},
		{"v1.30.0-rc.1", nil},
		{"v2.0.0", nil}, // well-formed; the proxy decides
		{"v1.19.16", ErrUnsupportedTag},
		{"v1.20.0-rc.0", ErrUnsupportedTag}, // before v1.20.0
		{"v0.9.0", ErrUnsupportedTag},
		{"", ErrInvalidTag},
		{"1.30.0", ErrInvalidTag},
		{"v1.30", ErrInvalidTag},
		{"v1", ErrInvalidTag},
		{"v1.30.0+build.1", ErrInvalidTag},
		{"v01.30.0", ErrInvalidTag},
		{"v1.30.0-", ErrInvalidTag},
		{"v1.30.0-rc..1", ErrInvalidTag},
		{"latest", ErrInvalidTag},
		{"master", ErrInvalidTag},
		{"v1.30.0/../../etc", ErrInvalidTag},
		{"v1.30.0 ", ErrInvalidTag},
	} {
		err := CheckTag(tc.tag)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("CheckTag(%q) = %v, want %v", tc.tag, err, tc.want)
		}
		if errors.Is(err, ErrUnsupportedTag) && !strings.Contains(err.Error(), "before v1.20.0 is not supported") {
			t.Errorf("CheckTag(%q) = %q, want it to say tags before v1.20.0 are not supported", tc.tag, err)
		}
	}
}

func TestLoadRefusesBadTagsBeforeAnyRequest(t *testing.T) {
	p := newProxy(t, nil)
	for _, tag := range []string{"v1.2", "1.30.0", "v1.30.0+incompatible", "HEAD", "v1.19.0", "v1.30.0/../x"} {
		_, err := Load(t.Context(), Options{Tag: tag, CacheDir: t.TempDir(), Getenv: env("GOPROXY", p.URL, "GOMODCACHE", t.TempDir())})
		if !errors.Is(err, ErrInvalidTag) && !errors.Is(err, ErrUnsupportedTag) {
			t.Errorf("Load(%q) = %v, want ErrInvalidTag or ErrUnsupportedTag", tag, err)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Load(%q): error is not one line: %q", tag, err)
		}
	}
	if n := p.requests.Load(); n != 0 {
		t.Errorf("the proxy got %d requests for invalid tags, want none", n)
	}
}

func TestLoadErrors(t *testing.T) {
	notFound := newProxy(t, nil)
	for _, tc := range []struct {
		name    string
		goproxy string
		want    error
		texts   []string
	}{
		{"unknown tag on a local proxy", notFound.URL, ErrUnknownTag, []string{"tag v1.30.0 is not served by " + notFound.URL, "--source-dir"}},
		{"unknown tag, then direct", notFound.URL + ",direct", ErrUnknownTag, []string{"is not served by " + notFound.URL}},
		{"unreachable", "http://127.0.0.1:1", ErrProxyUnreachable, []string{"cannot reach the module proxy http://127.0.0.1:1", "--source-dir", "GOPROXY"}},
		{"off", "off", ErrNoProxy, []string{"GOPROXY=off forbids downloading k8s.io/kubernetes@v1.30.0", "--source-dir"}},
		{"direct", "direct", ErrNoProxy, []string{"GOPROXY=direct", "version control", "--source-dir"}},
		{"not a URL", "ftp://x.example", ErrNoProxy, []string{"ftp://x.example"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cache := t.TempDir()
			_, err := Load(t.Context(), Options{Tag: "v1.30.0", CacheDir: cache, Getenv: env("GOPROXY", tc.goproxy, "GOMODCACHE", t.TempDir())})
			if !errors.Is(err, tc.want) {
				t.Fatalf("Load = %v, want %v", err, tc.want)
			}
			for _, s := range tc.texts {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
			if files := cacheFiles(t, cache, "readings", "tmp"); len(files) != 0 {
				t.Errorf("failed Load left %v", files)
			}
		})
	}
}

func TestUnknownTagRealProxy(t *testing.T) {
	t.Parallel()
	_, err := Load(t.Context(), Options{Tag: "v1.99.0", CacheDir: t.TempDir(),
		Getenv: env("GOPROXY", "https://proxy.golang.org", "GOMODCACHE", t.TempDir())})
	if !errors.Is(err, ErrUnknownTag) || !strings.Contains(err.Error(), "tag v1.99.0 is not served by https://proxy.golang.org") {
		t.Fatalf("Load(v1.99.0) = %v, want ErrUnknownTag naming the proxy", err)
	}
}

// TestChecksumDatabase serves a module zip and a checksum database from a
// local proxy: a matching hash is accepted, a mismatch refused with nothing
// cached, and GOSUMDB=off / GONOSUMDB skip the check.
func TestChecksumDatabase(t *testing.T) {
	const tag = "v1.30.0"
	good, goodHash := fakeZip(t, tag, kubeletFiles)
	tampered, tamperedHash := fakeZip(t, tag, map[string]string{
		"pkg/kubelet/kubelet.go": "package kubelet\n\nfunc init() { panic(\"tampered\") }\n",
		"go.mod":                 "module k8s.io/kubernetes\n",
	})
	for _, tc := range []struct {
		name     string
		zip      []byte
		env      []string // beyond GOPROXY, GOSUMDB
		want     error
		verified string
	}{
		{"match", good, nil, nil, VerifiedSumDB},
		{"mismatch", tampered, nil, ErrChecksumMismatch, ""},
		{"mismatch, GOSUMDB=off", tampered, []string{"GOSUMDB", "off"}, nil, VerifiedNone},
		{"mismatch, GONOSUMDB", tampered, []string{"GONOSUMDB", "example.com,k8s.io"}, nil, VerifiedNone},
		{"mismatch, GOPRIVATE", tampered, []string{"GOPRIVATE", "k8s.io/kubernetes"}, nil, VerifiedNone},
		{"mismatch, GONOSUMDB elsewhere", tampered, []string{"GONOSUMDB", "k8s.io/api"}, ErrChecksumMismatch, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProxy(t, map[string][]byte{tag: tc.zip})
			gosumdb := p.withSumDB(t, map[string]string{tag: goodHash})
			if len(tc.env) > 0 && tc.env[0] == "GOSUMDB" {
				gosumdb = tc.env[1]
			}
			vars := append([]string{"GOPROXY", p.URL, "GOSUMDB", gosumdb, "GOMODCACHE", t.TempDir()}, tc.env...)
			cache := t.TempDir()
			opts := Options{Tag: tag, CacheDir: cache, Getenv: env(vars...)}.withDefaults()
			z, err := module.Fetch(t.Context(), opts.module(), cache)
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("fetchZip = %v, want %v", err, tc.want)
				}
				want := fmt.Sprintf("checksum mismatch for k8s.io/kubernetes@%s: downloaded %s, checksum database sum.test says %s; the proxy or your cache is corrupt", tag, tamperedHash, goodHash)
				if err.Error() != want {
					t.Errorf("error = %q\nwant    %q", err, want)
				}
				if files := cacheFiles(t, cache, "readings", "tmp"); len(files) != 0 {
					t.Errorf("failed fetch left %v", files)
				}
				// Load fails the same way and caches nothing.
				if _, err := Load(t.Context(), opts); !errors.Is(err, tc.want) {
					t.Errorf("Load = %v, want %v", err, tc.want)
				}
				if files := cacheFiles(t, cache, "readings", "tmp"); len(files) != 0 {
					t.Errorf("failed Load left %v", files)
				}
				return
			}
			if err != nil {
				t.Fatalf("fetchZip: %v", err)
			}
			defer z.Close()
			if z.Kind != "proxy" || z.Hash == "" || z.Pending() || z.Verified != tc.verified {
				t.Errorf("fetchZip = %+v, want a proxy download, hashed, verified %q", z, tc.verified)
			}
			if vars[3] != "off" && len(tc.env) == 0 {
				// The signed tree head is kept for the next check.
				if _, err := os.Stat(filepath.Join(cache, "sumdb", "config", "sum.test", "latest")); err != nil {
					t.Errorf("no signed tree head kept: %v", err)
				}
			}
			z.Close()
			if _, err := os.Stat(z.Path); !os.IsNotExist(err) {
				t.Errorf("temporary zip %s not removed: %v", z.Path, err)
			}
		})
	}
}

// TestPinnedHash: a zip for DefaultTag whose hash is not DefaultTagHash is
// refused even with the checksum database off.
func TestPinnedHash(t *testing.T) {
	bad, badHash := fakeZip(t, DefaultTag, kubeletFiles)
	p := newProxy(t, map[string][]byte{DefaultTag: bad})
	cache := t.TempDir()
	_, err := Load(t.Context(), Options{CacheDir: cache, Getenv: env("GOPROXY", p.URL, "GOSUMDB", "off", "GOMODCACHE", t.TempDir())})
	want := fmt.Sprintf("checksum mismatch for k8s.io/kubernetes@%s: downloaded %s, the pinned hash says %s", DefaultTag, badHash, DefaultTagHash)
	if !errors.Is(err, ErrChecksumMismatch) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Load = %v\nwant %s…", err, want)
	}
	if files := cacheFiles(t, cache, "readings", "tmp", "verified"); len(files) != 0 {
		t.Errorf("failed Load left %v", files)
	}
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

func TestModCacheMismatch(t *testing.T) {
	const tag = "v1.30.0"
	_, hash := fakeZip(t, tag, kubeletFiles)
	for _, tc := range []struct {
		name, tag, ziphash, where string
	}{
		{"ziphash", tag, "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", "its .ziphash says h1:AAAA"},
		{"pinned, no ziphash", DefaultTag, "", "the pinned hash says " + DefaultTagHash},
		{"ziphash not the pinned one", DefaultTag, hash, "the pinned hash says " + DefaultTagHash},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z, _ := fakeZip(t, tc.tag, kubeletFiles)
			mod := writeModCache(t, tc.tag, z, tc.ziphash)
			cache := t.TempDir()
			_, err := Load(t.Context(), Options{Tag: tc.tag, CacheDir: cache, Getenv: env("GOPROXY", "off", "GOMODCACHE", mod)})
			if !errors.Is(err, ErrChecksumMismatch) || !strings.Contains(err.Error(), tc.where) || !strings.Contains(err.Error(), "module cache") {
				t.Fatalf("Load = %v, want a checksum mismatch where %q, blaming the module cache", err, tc.where)
			}
			if files := cacheFiles(t, cache, "readings", "tmp", "verified"); len(files) != 0 {
				t.Errorf("failed Load left %v", files)
			}
		})
	}
	// A module-cache zip that is not a zip at all.
	mod := writeModCache(t, tag, []byte("PK\x03\x04 truncated"), hash)
	_, err := Load(t.Context(), Options{Tag: tag, CacheDir: t.TempDir(), Getenv: env("GOPROXY", "off", "GOMODCACHE", mod)})
	if !errors.Is(err, ErrChecksumMismatch) || !strings.Contains(err.Error(), "is unreadable") {
		t.Errorf("Load of a truncated module-cache zip = %v, want ErrChecksumMismatch saying it is unreadable", err)
	}
}

// TestLoadSharesOneFetch: concurrent Loads of one tag make one request.
func TestLoadSharesOneFetch(t *testing.T) {
	release := make(chan struct{})
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		<-release
		http.NotFound(w, r)
	}))
	defer srv.Close()
	opts := Options{Tag: "v1.30.0", CacheDir: t.TempDir(), Getenv: env("GOPROXY", srv.URL, "GOMODCACHE", t.TempDir())}
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = Load(t.Context(), opts) })
	}
	// Every Load has joined the one in flight: the fetch's request is made,
	// and each of the eight waits for its result, as their stacks say.
	joined := testwait.Until(10*time.Second, func() bool {
		return requests.Load() > 0 && loadsWaiting() == len(errs)
	})
	close(release)
	if !joined {
		wg.Wait()
		t.Fatalf("%d of %d Loads waited on a fetch in flight (%d requests)", loadsWaiting(), len(errs), requests.Load())
	}
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, ErrUnknownTag) {
			t.Errorf("Load %d = %v, want ErrUnknownTag", i, err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests for 8 concurrent Loads, want 1", n)
	}
}

// TestLoadWaitHonoursContext: a caller that gives up gets its context's
// error at once, whatever the fetch it waits on is doing.
func TestLoadWaitHonoursContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		http.NotFound(w, r)
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	_, err := Load(ctx, Options{Tag: "v1.30.0", CacheDir: t.TempDir(), Getenv: env("GOPROXY", srv.URL, "GOMODCACHE", t.TempDir())})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Load = %v, want context.DeadlineExceeded", err)
	}
}

func TestLoadDirNotKubernetes(t *testing.T) {
	dir := t.TempDir()
	_, err := Load(t.Context(), Options{SourceDir: dir})
	if !errors.Is(err, ErrNotKubernetes) || !strings.Contains(err.Error(), dir+" is not a Kubernetes source tree") {
		t.Fatalf("Load = %v, want ErrNotKubernetes naming %s", err, dir)
	}
	_, err = Load(t.Context(), Options{SourceDir: filepath.Join(dir, "missing")})
	if !errors.Is(err, ErrNotKubernetes) {
		t.Fatalf("Load(missing dir) = %v, want ErrNotKubernetes", err)
	}
}

// miniKubernetes is the least Kubernetes tree Extract reads: a kubelet.go
// with a syncLoopIteration of two cases.
var miniKubernetes = map[string]string{
	"go.mod": "module k8s.io/kubernetes\n",
	"pkg/kubelet/kubelet.go": `package kubelet

// syncLoopIteration reads from two channels.
func (kl *Kubelet) syncLoopIteration(configCh <-chan int, syncCh <-chan bool) bool {
	select {
	case u := <-configCh:
		_ = u
	case <-syncCh:
	}
	return true
}
`,
	"pkg/kubelet/pod_workers.go": "package kubelet\n",
}

// TestLoadThroughProxy is Load end to end without the real proxy: eight
// concurrent Loads make one download, verified against a checksum database
// served by the proxy, and share one Reading, which is cached so a later
// Load and Cached need no proxy at all.
func TestLoadThroughProxy(t *testing.T) {
	const tag = "v1.30.0"
	data, hash := fakeZip(t, tag, miniKubernetes)
	// The delay lets every Load join the first before it is answered.
	p := newProxy(t, map[string][]byte{tag: data}, withDelay(50*time.Millisecond))
	gosumdb := p.withSumDB(t, map[string]string{tag: hash})
	cache := t.TempDir()
	opts := Options{Tag: tag, CacheDir: cache, Getenv: env("GOPROXY", p.URL, "GOSUMDB", gosumdb, "GOMODCACHE", t.TempDir())}

	readings := make([]*Reading, 8)
	errs := make([]error, 8)
	var wg sync.WaitGroup
	for i := range readings {
		wg.Go(func() { readings[i], errs[i] = Load(t.Context(), opts) })
	}
	wg.Wait()
	for i := range readings {
		if errs[i] != nil {
			t.Fatalf("Load %d: %v", i, errs[i])
		}
		if readings[i] != readings[0] {
			t.Errorf("Load %d returned another Reading than Load 0", i)
		}
	}
	r := readings[0]
	if r.Source != "proxy" || r.ModuleHash != hash || r.Verified != VerifiedSumDB || r.Tag != tag || len(r.Function.Cases) != 2 {
		t.Errorf("Reading = %s %s %s %s with %d cases, want proxy %s sumdb %s with 2", r.Source, r.ModuleHash, r.Verified, r.Tag, len(r.Function.Cases), hash, tag)
	}
	if n := p.zipRequests.Load(); n != 1 {
		t.Errorf("%d zip requests for 8 concurrent Loads, want 1", n)
	}
	reading := filepath.Join("readings", tag, fmt.Sprintf("schema%d-%s.json", Schema, symbolsKey(nil)))
	if files := cacheFiles(t, cache, "readings", "tmp"); !slices.Equal(files, []string{defsPath(reading), reading}) {
		t.Errorf("cache holds %v, want the one Reading, its definitions and no download", files)
	}

	p.Close()
	again, err := Load(t.Context(), opts)
	if err != nil || again.ModuleHash != hash || again.Source != "proxy" {
		t.Fatalf("Load from the cache = %+v, %v", again, err)
	}
	if d, ok := CachedDefs(opts); !ok || d.Tag != tag || d.Schema != Schema || len(d.Loop) != len(r.Defs.Loop) {
		t.Errorf("CachedDefs = %v, %v; want the definitions extracted with the Reading", d, ok)
	}
	if again.Defs != nil {
		t.Error("a Reading read from the cache carries Defs; they are read apart (CachedDefs)")
	}
	if c, ok := Cached(opts); !ok || c.ModuleHash != hash {
		t.Errorf("Cached = %v, %v", c, ok)
	}
	if tags, err := CachedTags(cache); err != nil || !slices.Equal(tags, []string{tag}) {
		t.Errorf("CachedTags = %v, %v", tags, err)
	}
}

// TestLoadFromModCacheMini: Load from a module cache, with no proxy at all,
// verifying the zip against its .ziphash beside the extraction.
func TestLoadFromModCacheMini(t *testing.T) {
	const tag = "v1.30.0"
	data, hash := fakeZip(t, tag, miniKubernetes)
	mod := writeModCache(t, tag, data, hash)
	cache := t.TempDir()
	r, err := Load(t.Context(), Options{Tag: tag, CacheDir: cache, Getenv: env("GOPROXY", "off", "GOMODCACHE", mod)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != "modcache" || r.ModuleHash != hash || r.Verified != VerifiedZiphash || len(r.Function.Cases) != 2 {
		t.Errorf("Reading = %s %s %s with %d cases, want modcache %s ziphash with 2", r.Source, r.ModuleHash, r.Verified, len(r.Function.Cases), hash)
	}
	if st, ok := module.ReadStamp(cache, tag, filepath.Join(mod, "cache", "download", "k8s.io", "kubernetes", "@v", tag+".zip")); !ok || st.Hash != hash || st.Verified != VerifiedZiphash {
		t.Errorf("stamp = %+v, %v; want the zip stamped verified by its .ziphash", st, ok)
	}
}

// loadsWaiting is how many goroutines wait in Load's select for a fetch.
func loadsWaiting() int {
	buf := make([]byte, 1<<20)
	n := 0
	for g := range strings.SplitSeq(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if strings.Contains(head, "[select") && strings.Contains(g, "/extractor.Load(") {
			n++
		}
	}
	return n
}
