package extractor

// The Reading cache: one JSON file per tag, schema and symbol list, under
// CacheDir(opts)/readings/<tag>/schema<N>-<symbols hash>.json. Files are
// written atomically (temporary file, then rename), so a reader sees a whole
// Reading or none, and a failed Load leaves nothing behind.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/syncloop/syncloop/extractor/module"
	"golang.org/x/mod/semver"
)

// readingPath is where the Reading for tag and symbols is cached in dir.
func readingPath(dir, tag string, symbols []string) string {
	return filepath.Join(dir, "readings", tag, fmt.Sprintf("schema%d-%s.json", Schema, symbolsKey(symbols)))
}

// symbolsKey is a short hash of the sorted, de-duplicated symbol list, so a
// Reading asked for with other Symbols is cached apart.
func symbolsKey(symbols []string) string {
	s := slices.Clone(symbols)
	slices.Sort(s)
	s = slices.Compact(s)
	sum := sha256.Sum256([]byte(strings.Join(s, "\n")))
	return hex.EncodeToString(sum[:6])
}

// Cached returns the cached Reading for opts.Tag (DefaultTag when empty) and
// opts.Symbols, without any network access. It reports false for a source
// directory, an invalid tag, a missing or unreadable cache entry.
func Cached(opts Options) (*Reading, bool) {
	if opts.SourceDir != "" {
		return nil, false
	}
	tag := opts.Tag
	if tag == "" {
		tag = DefaultTag
	}
	if CheckTag(tag) != nil {
		return nil, false
	}
	dir, err := CacheDir(opts)
	if err != nil {
		return nil, false
	}
	return readCachedReading(readingPath(dir, tag, opts.Symbols), tag)
}

func readCachedReading(path, tag string) (*Reading, bool) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, false
	}
	var r Reading
	if err := json.Unmarshal(data, &r); err != nil || r.Schema != Schema || r.Tag != tag || r.Module != Module {
		return nil, false
	}
	return &r, true
}

// CachedTags returns the tags that have a cached Reading of the current
// Schema in cacheDir ("" means CacheDir(Options{})), newest first.
func CachedTags(cacheDir string) ([]string, error) {
	if cacheDir == "" {
		var err error
		if cacheDir, err = CacheDir(Options{}); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(filepath.Join(cacheDir, "readings"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var tags []string
	prefix := fmt.Sprintf("schema%d-", Schema)
	for _, e := range entries {
		if !e.IsDir() || CheckTag(e.Name()) != nil {
			continue
		}
		files, err := os.ReadDir(filepath.Join(cacheDir, "readings", e.Name()))
		if err != nil {
			continue
		}
		for _, f := range files {
			if strings.HasPrefix(f.Name(), prefix) && strings.HasSuffix(f.Name(), ".json") {
				tags = append(tags, e.Name())
				break
			}
		}
	}
	semver.Sort(tags)
	slices.Reverse(tags)
	return tags, nil
}

// writeReading caches r at path atomically, and its Defs beside it.
func writeReading(path string, r *Reading) error {
	if r.Defs != nil {
		data, err := json.Marshal(r.Defs)
		if err != nil {
			return err
		}
		if err := module.WriteFileAtomic(defsPath(path), data); err != nil {
			return err
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return module.WriteFileAtomic(path, data)
}

// defsPath is where the Defs of the Reading cached at readingPath are.
func defsPath(readingPath string) string {
	return strings.TrimSuffix(readingPath, ".json") + "-defs.json"
}

// CachedDefs returns the definitions index cached with the Reading for
// opts.Tag and opts.Symbols, without any network access.
func CachedDefs(opts Options) (*Defs, bool) {
	if opts.SourceDir != "" || CheckTag(opts.Tag) != nil {
		return nil, false
	}
	dir, err := CacheDir(opts)
	if err != nil {
		return nil, false
	}
	data, err := os.ReadFile(defsPath(readingPath(dir, opts.Tag, opts.Symbols)))
	if err != nil {
		return nil, false
	}
	var d Defs
	if err := json.Unmarshal(data, &d); err != nil || d.Schema != Schema || d.Tag != opts.Tag {
		return nil, false
	}
	return &d, true
}
