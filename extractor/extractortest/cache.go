package extractortest

// The tests' Reading cache. A dozen test binaries read the same real
// Readings (classify's TestEveryTag alone reads 19 tags), and each took
// seconds to extract under -race. The extractor's own cache (Load) cannot
// serve them: it is keyed by Schema alone, right for a server but wrong for
// a test, which must see what the extractor as it is now makes of the source.
// So this cache is keyed by the extractor's code as well: the hash of its
// non-test source files, the versions of the modules it is built from
// (`go list -deps`: x/mod and x/sync today) and the Go version. A change to
// any of them extracts afresh; a dependency the extractor does not use,
// added to go.mod, does not.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// codeKey hashes what an extracted Reading depends on besides the tag and
// the symbols. It is "" when the extractor's source cannot be found (a
// binary built with -trimpath): then nothing is cached.
var codeKey = sync.OnceValue(func() string {
	_, self, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(self) {
		return ""
	}
	dir := filepath.Dir(filepath.Dir(self)) // extractor/
	// Every package under extractor/: the Reading is made by several
	// (module, the index, the flow engine, defs), not by extractor/ alone.
	var names []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			names = append(names, p)
		}
		return err
	})
	if err != nil || len(names) == 0 {
		return ""
	}
	deps, err := moduleDeps(dir)
	if err != nil {
		// Without the go command's answer, the whole go.mod stands in for
		// the versions: any change to it extracts afresh.
		names = append(names, filepath.Join(filepath.Dir(dir), "go.mod"))
	}
	slices.Sort(names)
	h := sha256.New()
	fmt.Fprintf(h, "%s schema%d\n%s", runtime.Version(), extractor.Schema, deps)
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := os.ReadFile(name)
		if err != nil {
			return ""
		}
		rel, _ := filepath.Rel(dir, name)
		fmt.Fprintf(h, "%s %d\n", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
})

// moduleDeps lists the modules other than the main one that the package in
// dir is built from, as "path version" lines in order, by asking the go
// command (which resolves them as the build does: go.mod, replacements,
// GOFLAGS).
func moduleDeps(dir string) (string, error) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{if not .Main}}{{.Path}} {{.Version}}{{with .Replace}} => {{.Path}} {{.Version}}{{end}}{{end}}{{end}}", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", err
	}
	var lines []string
	for l := range strings.Lines(string(out)) {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	return strings.Join(lines, "\n") + "\n", nil
}

// cacheDir is where the tests' Readings are kept between runs:
// os.UserCacheDir()/syncloop/test-readings.
func cacheDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "syncloop", "test-readings"), nil
}

// cachePath is the file of the tag's Reading with symbols, made by the
// extractor's code as it is, or "" when there is no such place.
func cachePath(tag string, symbols []string) string {
	key := codeKey()
	dir, err := cacheDir()
	if key == "" || err != nil {
		return ""
	}
	s := slices.Clone(symbols)
	slices.Sort(s)
	s = slices.Compact(s)
	sum := sha256.Sum256([]byte(strings.Join(s, "\n")))
	return filepath.Join(dir, tag, fmt.Sprintf("%s-%s.json", key, hex.EncodeToString(sum[:6])))
}

// cachedExtract returns the tag's Reading from the cache, or extracts it from
// the module zip and caches it. Either way the caller gets the Reading as
// decoded from its JSON, so every run sees the same value whether it
// extracted or not (and the same as a server reading its own cache).
func cachedExtract(tb testing.TB, tag string, symbols []string) (*extractor.Reading, error) {
	file := cachePath(tag, symbols)
	if file != "" {
		if b, err := os.ReadFile(file); err == nil {
			var r extractor.Reading
			if err := json.Unmarshal(b, &r); err == nil && r.Tag == tag && r.Schema == extractor.Schema {
				if d, ok := cachedDefs(file, tag); ok {
					r.Defs = d
					now := time.Now()
					_ = os.Chtimes(file, now, now) // in use: writeAtomic's pruning spares it
					return &r, nil
				}
			}
		}
	}
	fresh, err := extract(Zip(tb, tag), tag, symbols)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(fresh)
	if err != nil {
		return nil, err
	}
	var r extractor.Reading
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	// The definitions index is not part of the Reading's JSON: it is kept
	// in a file of its own, as the extractor's cache keeps it.
	db, err := json.Marshal(fresh.Defs)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(db, &r.Defs); err != nil {
		return nil, err
	}
	if file != "" {
		err := writeAtomic(defsFile(file), db)
		if err == nil {
			err = writeAtomic(file, b)
		}
		if err != nil {
			tb.Logf("the tests' Reading cache: %v (extracting every time)", err)
		}
	}
	return &r, nil
}

// defsFile is where the definitions index of the Reading cached in file is.
func defsFile(file string) string { return strings.TrimSuffix(file, ".json") + "-defs.json" }

// cachedDefs reads the definitions index cached beside the Reading in
// file; a Reading cached without one is extracted again.
func cachedDefs(file, tag string) (*extractor.Defs, bool) {
	b, err := os.ReadFile(defsFile(file))
	if err != nil {
		return nil, false
	}
	var d *extractor.Defs
	if err := json.Unmarshal(b, &d); err != nil || (d != nil && (d.Schema != extractor.Schema || d.Tag != tag)) {
		return nil, false
	}
	return d, true
}

// writeAtomic writes b to file through a temporary file and a rename, so a
// test binary reading concurrently sees a whole Reading or none, and drops
// the tag's entries left by other versions of the extractor over a week ago.
func writeAtomic(file string, b []byte) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if old, err := os.ReadDir(dir); err == nil {
		for _, e := range old {
			if fi, err := e.Info(); err == nil && time.Since(fi.ModTime()) > 7*24*time.Hour {
				os.Remove(filepath.Join(dir, e.Name()))
			}
		}
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), file)
}

// LoadCacheDir is a cache directory for extractor.Load (its CacheDir) that
// test binaries share between runs while the extractor's code is unchanged:
// os.UserCacheDir()/syncloop/test-load/<code key>. Tests of a command that
// loads real Readings pass it, so only the first run fetches, verifies and
// extracts; the extractor's own tests keep covering that path each run.
// Directories of other code keys unused for a week are removed. Without a
// code key it is a directory of the test's own.
func LoadCacheDir(tb testing.TB) string {
	tb.Helper()
	key := codeKey()
	root, err := os.UserCacheDir()
	if key == "" || err != nil {
		return tb.TempDir()
	}
	parent := filepath.Join(root, "syncloop", "test-load")
	dir := filepath.Join(parent, key)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	_ = os.Chtimes(dir, now, now)
	if old, err := os.ReadDir(parent); err == nil {
		for _, e := range old {
			if fi, err := e.Info(); err == nil && e.Name() != key && now.Sub(fi.ModTime()) > 7*24*time.Hour {
				os.RemoveAll(filepath.Join(parent, e.Name()))
			}
		}
	}
	return dir
}
