package module

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParseGOPROXY(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string // as proxyList writes it
		err  bool
	}{
		{"", "https://proxy.golang.org,direct", false},
		{"https://proxy.golang.org,direct", "https://proxy.golang.org,direct", false},
		{"https://a.example|https://b.example,off", "https://a.example|https://b.example,off", false},
		{"proxy.example.com/sub/", "https://proxy.example.com/sub", false},
		{"off,https://never.example", "off", false},
		{"direct|https://never.example", "direct", false},
		{" , https://a.example ,", "https://a.example", false},
		{"http://127.0.0.1:8080|https://b.example", "http://127.0.0.1:8080|https://b.example", false},
		{"file:///srv/proxy", "", true},
		{"noproxy", "", true},
		{",", "", true},
	} {
		list, err := parseGOPROXY(tc.in)
		if tc.err {
			if err == nil || !errors.Is(err, ErrNoProxy) {
				t.Errorf("parseGOPROXY(%q) = %v, %v; want ErrNoProxy", tc.in, list, err)
			}
			continue
		}
		if got := proxyList(list); err != nil || got != tc.want {
			t.Errorf("parseGOPROXY(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

// TestDownloadFallthrough checks the GOPROXY list walk: after a comma only
// 404 and 410 fall through; after a pipe any error does.
func TestDownloadFallthrough(t *testing.T) {
	const tag = "v1.30.0"
	good, _ := fakeZip(t, tag, kubeletFiles)
	for _, tc := range []struct {
		name     string
		status   int // the first proxy's answer
		sep      string
		wantErr  error // nil: the second proxy serves it
		second   int64 // requests the second proxy should get
		wantText string
	}{
		{"404 comma", 404, ",", nil, 1, ""},
		{"410 comma", 410, ",", nil, 1, ""},
		{"500 comma", 500, ",", ErrProxyUnreachable, 0, "500"},
		{"403 comma", 403, ",", ErrUnknownTag, 0, "is not served by"},
		{"404 pipe", 404, "|", nil, 1, ""},
		{"500 pipe", 500, "|", nil, 1, ""},
		{"403 pipe", 403, "|", nil, 1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			first := newProxy(t, nil, withStatus(tc.status))
			second := newProxy(t, map[string][]byte{tag: good})
			proxies, err := parseGOPROXY(first.URL + tc.sep + second.URL)
			if err != nil {
				t.Fatal(err)
			}
			tmp := t.TempDir()
			file, from, err := downloadZip(t.Context(), http.DefaultClient, proxies, tag, tmp)
			if tc.wantErr == nil {
				if err != nil || from != second.URL {
					t.Fatalf("downloadZip = %q from %q, %v; want it from the second proxy %s", file, from, err, second.URL)
				}
				if data, _ := os.ReadFile(file); !bytes.Equal(data, good) {
					t.Errorf("downloaded file differs from the zip served")
				}
			} else {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("downloadZip error = %v, want %v mentioning %q", err, tc.wantErr, tc.wantText)
				}
				if files := cacheFiles(t, tmp, "."); len(files) != 0 {
					t.Errorf("failed download left %v", files)
				}
			}
			if n := second.requests.Load(); n != tc.second {
				t.Errorf("second proxy got %d requests, want %d", n, tc.second)
			}
		})
	}
}

// TestModCacheVerified: a module-cache zip matching its .ziphash is used
// with no network (GOPROXY=off), hashed once, and stamped as verified.
func TestModCacheVerified(t *testing.T) {
	const tag = "v1.30.0"
	data, hash := fakeZip(t, tag, kubeletFiles)
	mod := writeModCache(t, tag, data, hash+"\n")
	cache := t.TempDir()
	opts := Options{Tag: tag, CacheDir: cache, Getenv: env("GOPROXY", "off", "GOMODCACHE", mod)}.WithDefaults()
	z, err := Fetch(t.Context(), opts, cache)
	if err != nil {
		t.Fatal(err)
	}
	if z.Kind != "modcache" || z.temp || !z.Pending() || z.Verified != VerifiedZiphash {
		t.Fatalf("Fetch = %+v, want a module-cache zip to verify against its .ziphash", z)
	}
	if got, err := z.verify(); err != nil || got != hash {
		t.Fatalf("verify = %q, %v; want %q", got, err, hash)
	}
	z, err = Fetch(t.Context(), opts, cache)
	if err != nil || z.Pending() || z.Hash != hash || z.Verified != VerifiedZiphash {
		t.Fatalf("second Fetch = %+v, %v; want it verified by the stamp", z, err)
	}
	// A changed zip is hashed again.
	later := time.Now().Add(time.Minute)
	zipPath, _, _ := ModCacheZip(opts.Getenv, tag)
	if err := os.Chtimes(zipPath, later, later); err != nil {
		t.Fatal(err)
	}
	if z, err = Fetch(t.Context(), opts, cache); err != nil || !z.Pending() {
		t.Fatalf("Fetch after the zip changed = %+v, %v; want it to hash again", z, err)
	}
}

func TestModCacheDir(t *testing.T) {
	for _, tc := range []struct {
		env  []string
		want string
	}{
		{[]string{"GOMODCACHE", "/m", "GOPATH", "/g", "HOME", "/h"}, "/m"},
		{[]string{"GOPATH", "/g1:/g2", "HOME", "/h"}, "/g1/pkg/mod"},
		{[]string{"HOME", "/h"}, "/h/go/pkg/mod"},
	} {
		if got := modCacheDir(env(tc.env...)); got != tc.want {
			t.Errorf("modCacheDir(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}

func TestParseGOSUMDB(t *testing.T) {
	for _, tc := range []struct {
		in                string
		name, key, direct string
		off, err          bool
	}{
		{in: "", name: "sum.golang.org", key: knownSumDBs["sum.golang.org"], direct: "https://sum.golang.org"},
		{in: "sum.golang.org", name: "sum.golang.org", key: knownSumDBs["sum.golang.org"], direct: "https://sum.golang.org"},
		{in: "off", off: true},
		{in: "sum.golang.google.cn", name: "sum.golang.org", key: knownSumDBs["sum.golang.org"], direct: "https://sum.golang.google.cn"},
		{in: "sum.example+abcd+KEY", name: "sum.example", key: "sum.example+abcd+KEY", direct: "https://sum.example"},
		{in: "sum.example+abcd+KEY https://db.example/x/", name: "sum.example", key: "sum.example+abcd+KEY", direct: "https://db.example/x"},
		{in: "sum.example", err: true},
		{in: "a+b c d", err: true},
		{in: "a+b ftp://x", err: true},
	} {
		cfg, err := parseGOSUMDB(tc.in)
		switch {
		case tc.err:
			if err == nil {
				t.Errorf("parseGOSUMDB(%q) = %+v, want an error", tc.in, cfg)
			}
		case tc.off:
			if cfg != nil || err != nil {
				t.Errorf("parseGOSUMDB(%q) = %+v, %v; want off", tc.in, cfg, err)
			}
		case err != nil || cfg.name != tc.name || cfg.key != tc.key || cfg.direct != tc.direct:
			t.Errorf("parseGOSUMDB(%q) = %+v, %v; want %s %s %s", tc.in, cfg, err, tc.name, tc.key, tc.direct)
		}
	}
}

func TestGitTag(t *testing.T) {
	const sha = "0123456789abcdef0123456789abcdef01234567"
	const other = "fedcba9876543210fedcba9876543210fedcba98"
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"detached at an annotated packed tag", map[string]string{
			"HEAD":        sha + "\n",
			"packed-refs": "# pack-refs with: peeled fully-peeled sorted\n" + other + " refs/tags/v1.30.0\n^" + sha + "\n" + other + " refs/tags/v1.29.0\n",
		}, "v1.30.0"},
		{"branch at a loose tag", map[string]string{
			"HEAD":                   "ref: refs/heads/master\n",
			"refs/heads/master":      sha + "\n",
			"refs/tags/v1.31.0":      sha + "\n",
			"refs/tags/v1.31.0-rc.0": sha + "\n",
		}, "v1.31.0"},
		{"between tags", map[string]string{
			"HEAD":        sha + "\n",
			"packed-refs": other + " refs/tags/v1.30.0\n",
		}, ""},
		{"not a release tag", map[string]string{
			"HEAD":              sha + "\n",
			"refs/tags/mytag":   sha + "\n",
			"refs/tags/v1.19.0": sha + "\n",
		}, ""},
		{"no git", map[string]string{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, body := range tc.files {
				p := filepath.Join(dir, ".git", filepath.FromSlash(name))
				os.MkdirAll(filepath.Dir(p), 0o755)
				if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if got := GitTag(dir); got != tc.want {
				t.Errorf("gitTag = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRemoveStaleDownloads(t *testing.T) {
	dir := t.TempDir()
	old, fresh := filepath.Join(dir, "kubernetes-v1.30.0-1.zip"), filepath.Join(dir, "kubernetes-v1.30.0-2.zip")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-2 * time.Hour)
	os.Chtimes(old, long, long)
	removeStale(dir, time.Hour)
	if files := cacheFiles(t, dir, "."); !slices.Equal(files, []string{filepath.Base(fresh)}) {
		t.Errorf("after removeStale: %v, want only the fresh download", files)
	}
}
