package extractor

// Load: where a Reading comes from. In order: a source directory when one is
// given; the Reading cache; the module zip in the local module cache,
// verified against the pinned hash, its .ziphash or the checksum database;
// the module zip from the module proxy, verified against the checksum
// database (and, for DefaultTag, the pinned hash).

import (
	"archive/zip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/syncloop/syncloop/extractor/module"
	"golang.org/x/sync/singleflight"
)

// loads de-duplicates concurrent Loads of the same Reading in this process
// (the server calls Load from every request for a tag): one download and
// one extraction, whose result every caller shares. It is the package's only
// mutable state, and holds nothing once the calls return.
var loads singleflight.Group

// Load returns the Reading for opts.Tag (DefaultTag when empty) or for
// opts.SourceDir. Readings from the proxy or the module cache are cached in
// CacheDir(opts) and returned from there, with no network access, afterwards;
// Readings of a source directory are extracted afresh every time (a checkout
// changes under its path; extraction takes well under a second).
//
// Concurrent Loads of the same tag share one fetch and one *Reading, which
// callers must not modify. ctx bounds the caller's wait; a fetch in progress
// runs on to completion (and is cached) even if every caller gives up.
//
// Errors are one line that says what to do, and match one of ErrInvalidTag,
// ErrUnknownTag, ErrUnsupportedTag, ErrProxyUnreachable, ErrNoProxy,
// ErrChecksumMismatch or ErrNotKubernetes with errors.Is, except for
// failures to extract from a tree that was found and verified.
func Load(ctx context.Context, opts Options) (*Reading, error) {
	opts = opts.withDefaults()
	if opts.SourceDir != "" {
		return loadDir(opts)
	}
	if err := CheckTag(opts.Tag); err != nil {
		return nil, err
	}
	cacheDir, err := CacheDir(opts)
	if err != nil {
		return nil, err
	}
	path := readingPath(cacheDir, opts.Tag, opts.Symbols)
	if r, ok := readCachedReading(path, opts.Tag); ok {
		return r, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err // start no fetch for a caller already gone
	}
	ch := loads.DoChan(path, func() (any, error) {
		return load(context.WithoutCancel(ctx), opts, cacheDir, path)
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

// load does one uncached Load of a tag: fetch (or find) the verified zip,
// extract, cache.
func load(ctx context.Context, opts Options, cacheDir, path string) (*Reading, error) {
	z, err := module.Fetch(ctx, opts.module(), cacheDir)
	if err != nil {
		return nil, err
	}
	defer z.Close()
	r, err := extract(z, opts)
	if err != nil {
		return nil, err
	}
	if err := writeReading(path, r); err != nil {
		opts.Logger.Warn("cannot cache the Reading", "path", path, "err", err)
	}
	return r, nil
}

// extract reads the Reading out of the zip, verifying it meanwhile if that
// is still to do.
func extract(z *module.Zip, opts Options) (*Reading, error) {
	if err := z.CheckSizes(); err != nil {
		return nil, err
	}
	var done chan error
	if z.Pending() {
		done = make(chan error, 1)
		go func() { done <- z.Verify() }()
	}
	r, err := extractOnly(z, opts.Symbols)
	if done != nil {
		if verr := <-done; verr != nil { // wait even when extraction failed: Verify reads the zip
			return nil, verr
		}
	}
	if err != nil {
		return nil, err
	}
	r.ModuleHash = z.Hash
	r.Source = z.Kind
	r.Verified = z.Verified
	return r, nil
}

func extractOnly(z *module.Zip, symbols []string) (*Reading, error) {
	zr, err := zip.OpenReader(z.Path)
	if err != nil {
		return nil, module.Errorf(ErrChecksumMismatch, err, "cannot open the module zip %s: %v; remove it and try again", z.Path, err)
	}
	defer zr.Close()
	fsys, err := module.Root(&zr.Reader, z.Tag)
	if err != nil {
		return nil, err
	}
	r, err := Extract(fsys, z.Tag, symbols)
	if err != nil {
		return nil, extractError(Module+"@"+z.Tag, err)
	}
	return r, nil
}

func extractError(what string, err error) error {
	var le *module.Error
	if errors.As(err, &le) || errors.Is(err, ErrUnsupportedTag) {
		return err
	}
	return fmt.Errorf("extract %s: %w", what, err)
}

// loadDir extracts the Reading of a Kubernetes checkout. The tag is
// opts.Tag, else the tag git has checked out, else "dir".
func loadDir(opts Options) (*Reading, error) {
	dir := opts.SourceDir
	if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(module.KubeletPath))); err != nil || !fi.Mode().IsRegular() {
		return nil, module.Errorf(ErrNotKubernetes, err,
			"%s is not a Kubernetes source tree (no %s); give --source-dir the top of a kubernetes/kubernetes checkout", dir, module.KubeletPath)
	}
	tag := opts.Tag
	if tag != "" {
		if err := CheckTag(tag); err != nil {
			return nil, err
		}
	} else if tag = module.GitTag(dir); tag == "" {
		tag = "dir"
	}
	r, err := Extract(os.DirFS(dir), tag, opts.Symbols)
	if err != nil {
		return nil, extractError(dir, err)
	}
	r.ModuleHash = ""
	r.Source = "dir"
	r.Verified = VerifiedNone
	return r, nil
}
