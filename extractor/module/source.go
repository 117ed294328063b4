package module

// source.go opens the verified source tree of a tag as a file system: the
// module zip extractor.Load reads, found and verified the same way, for the
// readings that read the tree themselves (extractor/volume), or a checkout.

import (
	"archive/zip"
	"context"
	"io/fs"
	"os"
)

// Source is the source tree of one tag, verified as Load verifies it.
// Close it when done: a zip downloaded for it is removed then.
type Source struct {
	FS         fs.FS  // rooted at the top of the tree: pkg/kubelet/… at its root
	Tag        string // the tag, or "dir" for a checkout whose tag is unknown
	ModuleHash string // "h1:…"; empty for a source directory
	Kind       string // "proxy", "modcache" or "dir", as Reading.Source
	Verified   string // a Verified* value, as Reading.Verified
	// ZipPath is the module zip read ("" for a source directory); a zip
	// downloaded for this Source is removed by Close.
	ZipPath string
	close   func()
}

// Close releases the tree (and removes a downloaded zip).
func (s *Source) Close() {
	if s.close != nil {
		s.close()
		s.close = nil
	}
}

// Open opens the source tree of opts.Tag (DefaultTag when empty) or
// of opts.SourceDir: the module cache's zip or one downloaded through
// GOPROXY, verified against the pinned hash, the .ziphash or the checksum
// database before it is returned. Errors match the ones Load returns.
func Open(ctx context.Context, opts Options) (*Source, error) {
	opts = opts.WithDefaults()
	if opts.SourceDir != "" {
		return openDir(opts)
	}
	if err := CheckTag(opts.Tag); err != nil {
		return nil, err
	}
	cacheDir, err := CacheDir(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	z, err := Fetch(ctx, opts, cacheDir)
	if err != nil {
		return nil, err
	}
	if err := z.CheckSizes(); err != nil {
		z.Close()
		return nil, err
	}
	if err := z.Verify(); err != nil { // a module-cache zip not checked yet: check it first
		z.Close()
		return nil, err
	}
	zr, err := zip.OpenReader(z.Path)
	if err != nil {
		z.Close()
		return nil, Errorf(ErrChecksumMismatch, err, "cannot open the module zip %s: %v; remove it and try again", z.Path, err)
	}
	fsys, err := Root(&zr.Reader, z.Tag)
	if err != nil {
		zr.Close()
		z.Close()
		return nil, err
	}
	return &Source{
		FS: fsys, Tag: z.Tag, ModuleHash: z.Hash, Kind: z.Kind, Verified: z.Verified, ZipPath: z.Path,
		close: func() { zr.Close(); z.Close() },
	}, nil
}

// openDir opens a Kubernetes checkout as loadDir reads it.
func openDir(opts Options) (*Source, error) {
	dir := opts.SourceDir
	if fi, err := os.Stat(dir + "/" + KubeletPath); err != nil || !fi.Mode().IsRegular() {
		return nil, Errorf(ErrNotKubernetes, err,
			"%s is not a Kubernetes source tree (no %s); give --source-dir the top of a kubernetes/kubernetes checkout", dir, KubeletPath)
	}
	tag := opts.Tag
	if tag != "" {
		if err := CheckTag(tag); err != nil {
			return nil, err
		}
	} else if tag = GitTag(dir); tag == "" {
		tag = "dir"
	}
	return &Source{FS: os.DirFS(dir), Tag: tag, Kind: "dir", Verified: VerifiedNone}, nil
}
