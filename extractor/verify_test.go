package extractor

// How a module-cache zip without a .ziphash is verified: against the
// checksum database, as a download is (and as the go command does when it
// finds a zip without its .ziphash), or refused when the database cannot be
// reached; and what each Reading records in Verified.

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor/module"
)

// closedURL is an http URL on which nothing listens.
func closedURL(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr
}

// TestModCacheWithoutZiphash: a module-cache zip with no .ziphash is looked
// up in the checksum database (served here by a local proxy, as
// proxy.golang.org serves sum.golang.org), used when the database agrees,
// refused when it disagrees or cannot be reached, and used unverified only
// when GOSUMDB=off, GONOSUMDB or GOPRIVATE say so.
func TestModCacheWithoutZiphash(t *testing.T) {
	const tag = "v1.30.0"
	good, goodHash := fakeZip(t, tag, miniKubernetes)
	tampered, tamperedHash := fakeZip(t, tag, map[string]string{
		"go.mod":                     miniKubernetes["go.mod"],
		"pkg/kubelet/pod_workers.go": miniKubernetes["pkg/kubelet/pod_workers.go"],
		"pkg/kubelet/kubelet.go":     miniKubernetes["pkg/kubelet/kubelet.go"] + "\nfunc init() { panic(\"tampered\") }\n",
	})
	for _, tc := range []struct {
		name     string
		zip      []byte
		env      func(p *proxy, gosumdb string) []string // beyond GOMODCACHE
		want     error                                   // nil: Load succeeds
		msg      []string                                // in the error
		verified string                                  // when Load succeeds
		lookups  bool                                    // the database is asked
	}{
		{name: "database agrees", zip: good, verified: VerifiedSumDB, lookups: true,
			env: func(p *proxy, gosumdb string) []string { return []string{"GOPROXY", p.URL, "GOSUMDB", gosumdb} }},
		{name: "database disagrees", zip: tampered, want: ErrChecksumMismatch, lookups: true,
			env: func(p *proxy, gosumdb string) []string { return []string{"GOPROXY", p.URL, "GOSUMDB", gosumdb} },
			msg: []string{fmt.Sprintf("checksum mismatch for k8s.io/kubernetes@%s: the module cache's zip hashes to %s, checksum database sum.test says %s", tag, tamperedHash, goodHash)}},
		{name: "database disagrees, GONOSUMDB elsewhere", zip: tampered, want: ErrChecksumMismatch, lookups: true,
			env: func(p *proxy, gosumdb string) []string {
				return []string{"GOPROXY", p.URL, "GOSUMDB", gosumdb, "GONOSUMDB", "k8s.io/api"}
			},
			msg: []string{"checksum database sum.test says " + goodHash}},
		{name: "proxy cannot serve the database", zip: good, want: ErrProxyUnreachable, lookups: true,
			// A proxy that answers /sumdb/ with an error other than 404 or
			// 410 means the database is unavailable (the go command's rule).
			env: func(p *proxy, gosumdb string) []string {
				p.mux.HandleFunc("/sumdb/sum.golang.org/", func(w http.ResponseWriter, r *http.Request) {
					http.Error(w, "checksum database down", http.StatusServiceUnavailable)
				})
				return []string{"GOPROXY", p.URL}
			},
			msg: []string{"cannot verify k8s.io/kubernetes@" + tag + " against the checksum database sum.golang.org", "503 Service Unavailable",
				"has no .ziphash to check it against, and syncloop does not use a zip it cannot verify", "GONOSUMDB=k8s.io/kubernetes", "--source-dir"}},
		{name: "offline", zip: good, want: ErrProxyUnreachable,
			// GOPROXY=off sends the go command, and syncloop, straight to
			// the database's own URL: here one where nothing listens.
			env: func(p *proxy, gosumdb string) []string {
				return []string{"GOPROXY", "off", "GOSUMDB", "sum.golang.org " + closedURL(t)}
			},
			msg: []string{"cannot verify k8s.io/kubernetes@" + tag + " against the checksum database sum.golang.org", "connection refused",
				"has no .ziphash", "GONOSUMDB=k8s.io/kubernetes"}},
		{name: "GOSUMDB=off", zip: tampered, verified: VerifiedNone,
			env: func(p *proxy, gosumdb string) []string { return []string{"GOPROXY", p.URL, "GOSUMDB", "off"} }},
		{name: "GONOSUMDB", zip: tampered, verified: VerifiedNone,
			env: func(p *proxy, gosumdb string) []string {
				return []string{"GOPROXY", p.URL, "GOSUMDB", gosumdb, "GONOSUMDB", "example.com,k8s.io"}
			}},
		{name: "GOPRIVATE", zip: tampered, verified: VerifiedNone,
			env: func(p *proxy, gosumdb string) []string {
				return []string{"GOPROXY", p.URL, "GOSUMDB", gosumdb, "GOPRIVATE", "k8s.io/kubernetes"}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProxy(t, nil) // serves no zip: the module cache has it
			gosumdb := p.withSumDB(t, map[string]string{tag: goodHash})
			mod := writeModCache(t, tag, tc.zip, "")
			zipPath := filepath.Join(mod, "cache", "download", "k8s.io", "kubernetes", "@v", tag+".zip")
			cache := t.TempDir()
			opts := Options{Tag: tag, CacheDir: cache, Getenv: env(append(tc.env(p, gosumdb), "GOMODCACHE", mod)...)}
			r, err := Load(t.Context(), opts)
			if asked := p.requests.Load() > 0; asked != tc.lookups {
				t.Errorf("checksum database asked: %v, want %v", asked, tc.lookups)
			}
			if p.zipRequests.Load() != 0 {
				t.Errorf("%d zip requests; the zip is in the module cache", p.zipRequests.Load())
			}
			if tc.want != nil {
				if !errors.Is(err, tc.want) {
					t.Fatalf("Load = %v, want %v", err, tc.want)
				}
				t.Logf("refused: %v", err)
				for _, m := range tc.msg {
					if !strings.Contains(err.Error(), m) {
						t.Errorf("error %q\nlacks %q", err, m)
					}
				}
				if files := cacheFiles(t, cache, "readings", "tmp", "verified"); len(files) != 0 {
					t.Errorf("refused zip left %v", files)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			hash := goodHash
			if tc.verified == VerifiedNone {
				hash = tamperedHash // used as it is, hashed but not checked
			}
			if r.Source != "modcache" || r.Verified != tc.verified || r.ModuleHash != hash {
				t.Errorf("Reading = %s %s %s, want modcache %s %s", r.Source, r.Verified, r.ModuleHash, tc.verified, hash)
			}
			st, stamped := module.ReadStamp(cache, tag, zipPath)
			if tc.verified == VerifiedNone {
				// Nothing verified, nothing stamped: with the database back
				// on, the zip is looked up like any other.
				if stamped {
					t.Errorf("unverified zip stamped %+v", st)
				}
				return
			}
			if !stamped || st.Hash != goodHash || st.Verified != VerifiedSumDB {
				t.Fatalf("stamp = %+v, %v; want the zip stamped verified by the checksum database", st, stamped)
			}
			// Verified once: another Reading of the unchanged zip needs
			// neither the database nor a hash.
			p.Close()
			z, err := module.Fetch(t.Context(), opts.withDefaults().module(), cache)
			if err != nil || z.Pending() || z.Hash != goodHash || z.Verified != VerifiedSumDB {
				t.Fatalf("fetchZip of the stamped zip = %+v, %v; want it verified by its stamp", z, err)
			}
			other, err := Load(t.Context(), Options{Tag: tag, CacheDir: cache, Getenv: opts.Getenv, Symbols: []string{"pkg/kubelet.(*Kubelet).syncLoopIteration"}})
			if err != nil || other.Verified != VerifiedSumDB {
				t.Fatalf("Load with other symbols, database gone = %v, %v; want it from the stamped zip", other, err)
			}
		})
	}
}

// TestModCacheWithoutZiphashRealSumDB puts v1.20.0's real zip into an empty
// module cache with no .ziphash and verifies it against the real checksum
// database, reached through the real proxy's /sumdb/ endpoint; a zip of
// other contents under the same name is refused.
func TestModCacheWithoutZiphashRealSumDB(t *testing.T) {
	t.Parallel() // mostly hashing and waiting on the network
	const tag = "v1.20.0"
	t.Run("real zip", func(t *testing.T) {
		mod := t.TempDir()
		at := filepath.Join(mod, "cache", "download", "k8s.io", "kubernetes", "@v")
		if err := os.MkdirAll(at, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(realZip(t, tag), filepath.Join(at, tag+".zip")); err != nil {
			t.Fatal(err)
		}
		r, err := Load(t.Context(), Options{Tag: tag, CacheDir: t.TempDir(), Getenv: env("GOPROXY", "https://proxy.golang.org", "GOMODCACHE", mod)})
		if err != nil {
			t.Fatal(err)
		}
		if r.Source != "modcache" || r.Verified != VerifiedSumDB || r.ModuleHash != realZipHashes[tag] {
			t.Errorf("Reading = %s %s %s, want modcache sumdb %s", r.Source, r.Verified, r.ModuleHash, realZipHashes[tag])
		}
	})
	t.Run("other contents", func(t *testing.T) {
		z, hash := fakeZip(t, tag, miniKubernetes)
		mod := writeModCache(t, tag, z, "")
		cache := t.TempDir()
		_, err := Load(t.Context(), Options{Tag: tag, CacheDir: cache, Getenv: env("GOPROXY", "https://proxy.golang.org", "GOMODCACHE", mod)})
		want := fmt.Sprintf("checksum mismatch for k8s.io/kubernetes@%s: the module cache's zip hashes to %s, checksum database sum.golang.org says %s", tag, hash, realZipHashes[tag])
		if !errors.Is(err, ErrChecksumMismatch) || !strings.HasPrefix(err.Error(), want) {
			t.Fatalf("Load = %v\nwant %s…", err, want)
		}
		if files := cacheFiles(t, cache, "readings", "tmp", "verified"); len(files) != 0 {
			t.Errorf("refused zip left %v", files)
		}
	})
}

// TestVerifiedSourceDir: a checkout has no hash, and says so.
func TestVerifiedSourceDir(t *testing.T) {
	dir := t.TempDir()
	for name, body := range miniKubernetes {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r, err := Load(t.Context(), Options{SourceDir: dir, CacheDir: t.TempDir(), Getenv: env("GOPROXY", "off")})
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != "dir" || r.Verified != VerifiedNone || r.ModuleHash != "" {
		t.Errorf("Reading = %s %s %q, want dir none and no hash", r.Source, r.Verified, r.ModuleHash)
	}
}
