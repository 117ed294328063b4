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

	"golang.org/x/mod/semver"
)

// CacheDir returns the directory syncloop caches into: opts.CacheDir, or
// os.UserCacheDir()/syncloop.
func CacheDir(opts Options) (string, error) {
	if opts.CacheDir != "" {
		return opts.CacheDir, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %v; use --cache-dir DIR", err)
	}
	return filepath.Join(dir, "syncloop"), nil
}

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
		if err := writeFileAtomic(defsPath(path), data); err != nil {
			return err
		}
	}
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
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

// writeFileAtomic writes data to path through a temporary file in the same
// directory and a rename, so path never holds a partial file.
func writeFileAtomic(path string, data []byte) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// A verifiedStamp records that syncloop hashed a module-cache zip and found
// the hash it checked it against (Verified says which), so an unchanged zip
// (same path, size and modification time) is not hashed, nor looked up in the
// checksum database, again: hashing a 20 MB zip means inflating ~100 MB,
// several times the cost of extracting a Reading from it.
type verifiedStamp struct {
	Zip      string `json:"zip"`
	Size     int64  `json:"size"`
	ModTime  int64  `json:"mod_time_ns"`
	Hash     string `json:"hash"`
	Verified string `json:"verified"` // a Verified* value, never VerifiedNone
}

func stampPath(dir, tag string) string {
	return filepath.Join(dir, "verified", tag+".json")
}

// stampFor describes the zip at zipPath as it is now.
func stampFor(zipPath, hash, verified string) (verifiedStamp, error) {
	fi, err := os.Stat(zipPath)
	if err != nil {
		return verifiedStamp{}, err
	}
	return verifiedStamp{Zip: zipPath, Size: fi.Size(), ModTime: fi.ModTime().UnixNano(), Hash: hash, Verified: verified}, nil
}

// readStamp returns the stamp of the zip at zipPath if it was verified and
// has not changed since.
func readStamp(dir, tag, zipPath string) (verifiedStamp, bool) {
	data, err := os.ReadFile(stampPath(dir, tag))
	if err != nil {
		return verifiedStamp{}, false
	}
	var old verifiedStamp
	if json.Unmarshal(data, &old) != nil || old.Hash == "" || old.Verified == "" || old.Verified == VerifiedNone {
		return verifiedStamp{}, false
	}
	now, err := stampFor(zipPath, old.Hash, old.Verified)
	return old, err == nil && old == now
}

// writeStamp records that the zip at zipPath hashes to hash, checked as
// verified says.
func writeStamp(dir, tag, zipPath, hash, verified string) error {
	s, err := stampFor(zipPath, hash, verified)
	if err != nil {
		return err
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return writeFileAtomic(stampPath(dir, tag), data)
}
