package volume

// derive.go puts the reading together, and Load serves it: from the cache
// when it is there, else derived from the tag's verified source
// (extractor.OpenSource, the module zip the first reading reads) and
// cached beside the first reading's cache.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"golang.org/x/sync/singleflight"

	"github.com/syncloop/syncloop/extractor"
)

// roots are the trees read: the kubelet and pkg/volume for the sets'
// callers, pkg/features for the gates.
var roots = []string{"pkg/kubelet", "pkg/volume", featuresDir}

// whole are the packages read in whole; of the others only the files that
// name a StateOfWorld type are.
var whole = map[string]bool{
	reconcilerDir: true, populatorDir: true, cacheDir: true, operationExecutorDir: true, featuresDir: true,
	path.Dir(volumeManagerFile): true,
}

// Derive reads the volume manager's reconciler out of fsys, a Kubernetes
// source tree at tag. It fills everything but ModuleHash and Verified.
func Derive(fsys fs.FS, tag string) (*Reading, error) {
	t, err := load(fsys, tag, roots, whole, func(src []byte) bool { return bytes.Contains(src, []byte("StateOfWorld")) })
	if err != nil {
		return nil, fmt.Errorf("read the volume manager at %s: %w", tag, err)
	}
	entry, fn, err := t.findEntry(t.readGates())
	if err != nil {
		return nil, fmt.Errorf("volume manager at %s: %w", tag, err)
	}
	sets, err := t.readSets()
	if err != nil {
		return nil, fmt.Errorf("volume manager at %s: %w", tag, err)
	}
	t.scanCallers(sets)
	r := &Reading{Schema: Schema, Tag: tag, Entry: entry, Parts: t.findParts(fn, sets), LogSites: t.logSites(), Goroutines: t.findGoroutines(), Decls: t.decls()}
	for _, s := range sets {
		r.Sets = append(r.Sets, s.Set)
	}
	return r, nil
}

// loads shares one derivation among concurrent Loads of a tag.
var loads singleflight.Group

// Load returns the volume manager's Reading at opts.Tag (or of
// opts.SourceDir, derived afresh): cached in CacheDir(opts)/volume-manager/,
// else derived from the source extractor.OpenSource opens, verified as
// the first reading's is. Errors are OpenSource's or the derivation's.
func Load(ctx context.Context, opts extractor.Options) (*Reading, error) {
	if opts.SourceDir == "" && opts.Tag == "" {
		opts.Tag = extractor.DefaultTag
	}
	if opts.SourceDir != "" {
		return derive(ctx, opts)
	}
	if err := extractor.CheckTag(opts.Tag); err != nil {
		return nil, err
	}
	if r, ok := Cached(opts); ok {
		return r, nil
	}
	ch := loads.DoChan(opts.Tag, func() (any, error) {
		r, err := derive(context.WithoutCancel(ctx), opts)
		if err != nil {
			return nil, err
		}
		if p, err := cachePath(opts); err == nil {
			if err := writeAtomic(p, r); err != nil && opts.Logger != nil {
				opts.Logger.Warn("cannot cache the volume manager's reading", "path", p, "err", err)
			}
		}
		return r, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return res.Val.(*Reading), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func derive(ctx context.Context, opts extractor.Options) (*Reading, error) {
	src, err := extractor.OpenSource(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	r, err := Derive(src.FS, src.Tag)
	if err != nil {
		return nil, err
	}
	r.ModuleHash, r.Verified = src.ModuleHash, src.Verified
	return r, nil
}

// Cached returns the cached Reading at opts.Tag, with no network access.
func Cached(opts extractor.Options) (*Reading, bool) {
	p, err := cachePath(opts)
	if err != nil || opts.SourceDir != "" {
		return nil, false
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, false
	}
	var r Reading
	if json.Unmarshal(data, &r) != nil || r.Schema != Schema || r.Tag != opts.Tag {
		return nil, false
	}
	return &r, true
}

func cachePath(opts extractor.Options) (string, error) {
	dir, err := extractor.CacheDir(opts)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "volume-manager", opts.Tag, fmt.Sprintf("schema%d.json", Schema)), nil
}

// writeAtomic writes r to p through a temporary file and a rename.
func writeAtomic(p string, r *Reading) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func upstream(tag, file string, from, to int) string {
	return extractor.UpstreamURL(tag, file, from, to)
}
