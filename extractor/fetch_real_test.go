package extractor

// Tests against real Kubernetes module zips: from the module cache with no
// network, and from the real module proxy with checksum database
// verification. They need Extract to work.

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/syncloop/syncloop/extractor/module"
)

// realZipHashes are the h1: hashes of the real zips these tests use, as the
// checksum database has them.
var realZipHashes = map[string]string{
	"v1.20.0": "h1:mnc69esJC3PJgSptxNJomGz2gBthyGLSEy18WiyRH4U=",
	"v1.37.2": DefaultTagHash,
}

var realZipOnce sync.Map // tag → *realZipResult

type realZipResult struct {
	once sync.Once
	path string
	err  error
}

// realZip returns the path of the real module zip for tag: the one in the
// go command's module cache when the environment names one that holds it
// (found as the extractor finds it), else one downloaded (and verified)
// through the real proxy once per test binary.
func realZip(t testing.TB, tag string) string {
	t.Helper()
	if p, _, ok := module.ModCacheZip(os.Getenv, tag); ok {
		return p
	}
	v, _ := realZipOnce.LoadOrStore(tag, &realZipResult{})
	res := v.(*realZipResult)
	res.once.Do(func() {
		dir, err := os.MkdirTemp("", "syncloop-test-zip-")
		if err != nil {
			res.err = err
			return
		}
		opts := Options{Tag: tag, CacheDir: dir, Getenv: env("GOPROXY", "https://proxy.golang.org", "GOMODCACHE", dir)}.withDefaults()
		z, err := module.Fetch(t.Context(), opts.module(), dir)
		if err != nil {
			res.err = err
			return
		}
		res.path = z.Path // a temporary download, left for the process
	})
	if res.err != nil {
		t.Fatalf("cannot get the %s zip: %v", tag, res.err)
	}
	return res.path
}

// linkModCache makes a module cache holding only the real zip for tag (and
// its .ziphash) and returns its directory.
func linkModCache(t testing.TB, tag string) string {
	t.Helper()
	src := realZip(t, tag)
	dir := t.TempDir()
	at := filepath.Join(dir, "cache", "download", "k8s.io", "kubernetes", "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(src, filepath.Join(at, tag+".zip")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, tag+".ziphash"), []byte(realZipHashes[tag]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func caseKeys(r *Reading) []string {
	var keys []string
	for _, c := range r.Function.Cases {
		keys = append(keys, c.Key)
	}
	return keys
}

var keys1372 = []string{"config", "pleg", "sync", "liveness", "readiness", "startup", "container", "housekeeping"}

// TestLoadFromModCache: with GOPROXY=off and the zip in the module cache,
// Load extracts, verifies and caches; the next Load needs neither.
func TestLoadFromModCache(t *testing.T) {
	mod := linkModCache(t, DefaultTag)
	cache := t.TempDir()
	opts := Options{CacheDir: cache, Getenv: env("GOPROXY", "off", "GOMODCACHE", mod)}
	// Hashing the real zip takes ~25 s under -race (inflating ~100 MB), so
	// stamp it verified as a first Load would; TestModCacheVerified and
	// TestModCacheMismatch test the hashing itself, TestLoadRealProxy hashes
	// a real zip.
	zipPath, _, _ := module.ModCacheZip(opts.Getenv, DefaultTag)
	if err := module.WriteStamp(cache, DefaultTag, zipPath, DefaultTagHash, VerifiedPinned); err != nil {
		t.Fatal(err)
	}
	r, err := Load(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tag != DefaultTag || r.Source != "modcache" || r.ModuleHash != DefaultTagHash || r.Verified != VerifiedPinned || r.Module != Module || r.Schema != Schema {
		t.Errorf("Reading = %s %s %s %s %d, want %s modcache %s", r.Module, r.Tag, r.Source, r.ModuleHash, r.Schema, DefaultTag, DefaultTagHash)
	}
	if got := caseKeys(r); !slices.Equal(got, keys1372) {
		t.Errorf("case keys = %v, want %v", got, keys1372)
	}
	if tags, err := CachedTags(cache); err != nil || !slices.Equal(tags, []string{DefaultTag}) {
		t.Errorf("CachedTags = %v, %v; want [%s]", tags, err, DefaultTag)
	}
	// Cached, and served from the cache with the module cache gone.
	if err := os.RemoveAll(mod); err != nil {
		t.Fatal(err)
	}
	for _, load := range []func() (*Reading, error){
		func() (*Reading, error) { return Load(t.Context(), opts) },
		func() (*Reading, error) {
			r, ok := Cached(opts)
			if !ok {
				return nil, errors.New("Cached: not cached")
			}
			return r, nil
		},
	} {
		again, err := load()
		if err != nil {
			t.Fatal(err)
		}
		if again.ModuleHash != r.ModuleHash || again.Source != "modcache" || !slices.Equal(caseKeys(again), keys1372) || again.Function.Text != r.Function.Text {
			t.Errorf("cached Reading differs from the one extracted")
		}
	}
	// Other symbols are another cache entry, which needs the zip.
	if _, err := Load(t.Context(), Options{Symbols: []string{"pkg/kubelet.(*Kubelet).syncLoop"}, CacheDir: cache, Getenv: opts.Getenv}); !errors.Is(err, ErrNoProxy) {
		t.Errorf("Load with other symbols and no zip = %v, want ErrNoProxy (GOPROXY=off)", err)
	}
}

// TestLoadRealProxy fetches v1.20.0 (the smallest zip) through the real
// module proxy into an empty module cache, verifying it against the real
// checksum database reached through the proxy's /sumdb/ endpoint.
func TestLoadRealProxy(t *testing.T) {
	t.Parallel() // mostly waiting on the network
	const tag = "v1.20.0"
	cache := t.TempDir()
	opts := Options{Tag: tag, CacheDir: cache, Getenv: env("GOPROXY", "https://proxy.golang.org", "GOMODCACHE", t.TempDir())}
	r, err := Load(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if r.Tag != tag || r.Source != "proxy" || r.ModuleHash != realZipHashes[tag] || r.Verified != VerifiedSumDB {
		t.Errorf("Reading = %s %s %s %s, want %s proxy %s sumdb", r.Tag, r.Source, r.ModuleHash, r.Verified, tag, realZipHashes[tag])
	}
	want := []string{"config", "pleg", "sync", "liveness", "housekeeping"} // v1.20.0 had one probe manager
	if got := caseKeys(r); !slices.Equal(got, want) {
		t.Errorf("case keys = %v, want %v", got, want)
	}
	latest, err := os.ReadFile(filepath.Join(cache, "sumdb", "config", "sum.golang.org", "latest"))
	if err != nil || !strings.HasPrefix(string(latest), "go.sum database tree\n") {
		t.Errorf("signed tree head not kept: %q, %v", latest, err)
	}
	if files := cacheFiles(t, cache, "tmp"); len(files) != 0 {
		t.Errorf("downloads left behind: %v", files)
	}
	// The checksum database lookup is cached: a re-verification (as after a
	// schema change) needs only the zip, not the database.
	lookups, err := filepath.Glob(filepath.Join(cache, "sumdb", "cache", "sum.golang.org", "lookup", "k8s.io", "kubernetes@"+tag))
	if err != nil || len(lookups) != 1 {
		t.Errorf("checksum database lookup not cached: %v, %v", lookups, err)
	}
}
