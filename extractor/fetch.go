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
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
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

func (o Options) withDefaults() Options {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = defaultClient()
	}
	if o.Tag == "" && o.SourceDir == "" {
		o.Tag = DefaultTag
	}
	return o
}

// defaultClient fails fast on a proxy that cannot be reached or does not
// answer, and gives a 20 MB download on a slow link time to finish.
func defaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: t, Timeout: 10 * time.Minute}
}

// load does one uncached Load of a tag: fetch (or find) the verified zip,
// extract, cache.
func load(ctx context.Context, opts Options, cacheDir, path string) (*Reading, error) {
	z, err := fetchZip(ctx, opts, cacheDir)
	if err != nil {
		return nil, err
	}
	defer z.close()
	r, err := z.extract(opts)
	if err != nil {
		return nil, err
	}
	if err := writeReading(path, r); err != nil {
		opts.Logger.Warn("cannot cache the Reading", "path", path, "err", err)
	}
	return r, nil
}

// moduleZip is the module zip of a tag, found in the module cache or
// downloaded.
type moduleZip struct {
	tag      string
	path     string
	source   string // "proxy" or "modcache"
	hash     string // the h1: hash, once verified
	verified string // how: a Verified* value
	temp     bool   // path is a download to remove when done
	// verify checks the zip's hash when that has not been done yet; it runs
	// beside the extraction, whose result is dropped if it fails.
	verify func() (string, error)
}

func (z *moduleZip) close() {
	if z.temp {
		os.Remove(z.path)
	}
}

// fetchZip returns the module zip for opts.Tag: from the module cache (see
// modCacheModuleZip) or downloaded through GOPROXY and verified against the
// checksum database and the pinned hash before it is returned.
func fetchZip(ctx context.Context, opts Options, cacheDir string) (*moduleZip, error) {
	tag := opts.Tag
	if zipPath, ziphashPath, ok := modCacheZip(opts.Getenv, tag); ok {
		return modCacheModuleZip(ctx, opts, cacheDir, zipPath, ziphashPath)
	}

	proxies, err := parseGOPROXY(opts.Getenv("GOPROXY"))
	if err != nil {
		return nil, err
	}
	opts.Logger.Info("downloading", "module", Module, "tag", tag, "goproxy", proxyList(proxies))
	file, proxyURL, err := downloadZip(ctx, opts.Client, proxies, tag, filepath.Join(cacheDir, "tmp"))
	if err != nil {
		return nil, err
	}
	z := &moduleZip{tag: tag, path: file, source: "proxy", temp: true}
	if err := z.verifyDownload(ctx, opts, proxies, cacheDir, proxyURL); err != nil {
		z.close()
		return nil, err
	}
	return z, nil
}

// modCacheModuleZip returns the module cache's zip for opts.Tag, to be
// verified beside the extraction against, in order of preference:
//   - for DefaultTag, the pinned hash (and the .ziphash must agree with it);
//   - the .ziphash beside the zip, which the go command writes once it has
//     checked the zip against go.sum or the checksum database;
//   - without a .ziphash, the checksum database, looked up now as for a
//     download (a zip copied into the cache, or whose .ziphash was lost, is
//     otherwise nothing but a file with the right name). The go command
//     does the same when it finds a zip without its .ziphash. When the
//     database cannot be reached the zip is refused; when GOSUMDB=off or
//     GONOSUMDB/GOPRIVATE exempt the module it is used unverified, as the
//     go command would.
//
// A zip verified before and unchanged since (its stamp) is not checked again.
func modCacheModuleZip(ctx context.Context, opts Options, cacheDir, zipPath, ziphashPath string) (*moduleZip, error) {
	tag := opts.Tag
	opts.Logger.Info("reading the module cache", "zip", zipPath)
	z := &moduleZip{tag: tag, path: zipPath, source: "modcache"}
	advice := "remove it (or run `go clean -modcache`) and try again"
	ziphash := ""
	if data, err := os.ReadFile(ziphashPath); err == nil {
		ziphash = strings.TrimSpace(string(data))
	}
	// want is the hash the zip must have, where says who says so, and
	// z.verified how the Reading will say it was checked.
	var want, where string
	switch {
	case tag == DefaultTag:
		if ziphash != "" && ziphash != DefaultTagHash {
			return nil, mismatchError(tag, "the module cache's .ziphash says", ziphash, "the pinned hash", DefaultTagHash,
				"the module cache's "+ziphashPath+" is corrupt; "+advice)
		}
		want, where, z.verified = DefaultTagHash, "the pinned hash", VerifiedPinned
	case ziphash != "":
		want, where, z.verified = ziphash, "its .ziphash", VerifiedZiphash
	}
	if st, ok := readStamp(cacheDir, tag, zipPath); ok && (want == "" || st.Hash == want) {
		z.hash, z.verified = st.Hash, st.Verified
		return z, nil
	}
	if want == "" {
		proxies, err := parseGOPROXY(opts.Getenv("GOPROXY"))
		if err != nil {
			return nil, err
		}
		h, db, err := sumDBHash(ctx, opts.Client, opts.Getenv, proxies, cacheDir, opts.Logger, tag,
			"the module cache's "+zipPath+" has no .ziphash to check it against, and syncloop does not use a zip it cannot verify: "+
				"let it reach the checksum database (check the network, GOPROXY and GOSUMDB), "+
				"set GONOSUMDB="+Module+" to use the zip unverified, or use --source-dir DIR")
		if err != nil {
			return nil, err
		}
		if h == "" {
			z.verified = VerifiedNone
		} else {
			want, where, z.verified = h, "checksum database "+db, VerifiedSumDB
		}
	}
	z.verify = func() (string, error) {
		got, err := dirhash.HashZip(zipPath, dirhash.Hash1)
		if err != nil {
			return "", newError(ErrChecksumMismatch, err, "the module cache's zip %s is unreadable: %v; %s", zipPath, err, advice)
		}
		if want == "" {
			opts.Logger.Warn("using the module cache's zip unverified", "zip", zipPath, "hash", got)
			return got, nil
		}
		if got != want {
			return "", mismatchError(tag, "the module cache's zip hashes to", got, where, want, "the module cache's "+zipPath+" is corrupt; "+advice)
		}
		if err := writeStamp(cacheDir, tag, zipPath, got, z.verified); err != nil {
			opts.Logger.Warn("cannot record the zip as verified", "err", err)
		}
		return got, nil
	}
	return z, nil
}

// verifyDownload checks a downloaded zip's hash against the pinned hash (for
// DefaultTag) and the checksum database.
func (z *moduleZip) verifyDownload(ctx context.Context, opts Options, proxies []proxySpec, cacheDir, proxyURL string) error {
	// Hashing inflates every file: a zip over Go's limits is refused first.
	if err := z.checkSizes(); err != nil {
		return err
	}
	got, err := dirhash.HashZip(z.path, dirhash.Hash1)
	if err != nil {
		return newError(ErrChecksumMismatch, err,
			"the module zip %s served by %s is not a valid zip: %v; the proxy is misbehaving: try again, set GOPROXY, or use --source-dir DIR", Module+"@"+z.tag, proxyURL, err)
	}
	pinned := z.tag == DefaultTag
	if pinned && got != DefaultTagHash {
		return mismatchError(z.tag, "downloaded", got, "the pinned hash", DefaultTagHash, "the proxy "+proxyURL+" or your cache is corrupt")
	}
	checked, err := checkSumDB(ctx, opts.Client, opts.Getenv, proxies, cacheDir, opts.Logger, z.tag, got)
	if err != nil {
		return err
	}
	switch {
	case pinned && checked:
		z.verified = VerifiedPinnedSumDB
	case pinned:
		z.verified = VerifiedPinned
	case checked:
		z.verified = VerifiedSumDB
	default:
		z.verified = VerifiedNone
	}
	z.hash = got
	opts.Logger.Info("verified", "module", Module, "tag", z.tag, "hash", got, "proxy", proxyURL, "verified", z.verified)
	return nil
}

// extract reads the Reading out of the zip, verifying it meanwhile if that
// is still to do.
func (z *moduleZip) extract(opts Options) (*Reading, error) {
	if err := z.checkSizes(); err != nil {
		return nil, err
	}
	type verified struct {
		hash string
		err  error
	}
	var done chan verified
	if z.verify != nil {
		done = make(chan verified, 1)
		go func() {
			h, err := z.verify()
			done <- verified{h, err}
		}()
	}
	r, err := z.extractOnly(opts.Symbols)
	if done != nil {
		v := <-done // wait even when extraction failed: verify reads the zip
		if v.err != nil {
			return nil, v.err
		}
		z.hash = v.hash
	}
	if err != nil {
		return nil, err
	}
	r.ModuleHash = z.hash
	r.Source = z.source
	r.Verified = z.verified
	return r, nil
}

// checkSizes checks the sizes the zip's entries declare (checkZipSizes).
// A zip that is not a zip at all is left to the verification and the
// extraction, which say why.
func (z *moduleZip) checkSizes() error {
	zr, err := zip.OpenReader(z.path)
	if err != nil {
		return nil
	}
	defer zr.Close()
	return checkZipSizes(&zr.Reader, z.tag)
}

func (z *moduleZip) extractOnly(symbols []string) (*Reading, error) {
	zr, err := zip.OpenReader(z.path)
	if err != nil {
		return nil, newError(ErrChecksumMismatch, err, "cannot open the module zip %s: %v; remove it and try again", z.path, err)
	}
	defer zr.Close()
	fsys, err := zipRoot(&zr.Reader, z.tag)
	if err != nil {
		return nil, err
	}
	r, err := Extract(fsys, z.tag, symbols)
	if err != nil {
		return nil, extractError(Module+"@"+z.tag, err)
	}
	return r, nil
}

// zipRoot is the module's tree inside its zip: the k8s.io/kubernetes@TAG/
// directory, checked to hold the kubelet.
func zipRoot(zr *zip.Reader, tag string) (fs.FS, error) {
	fsys, err := fs.Sub(boundedFS{zr, tag}, Module+"@"+tag)
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(fsys, kubeletPath); errors.Is(err, ErrZipTooLarge) {
		return nil, err
	} else if err != nil {
		return nil, newError(ErrUnsupportedTag, err, "the module zip of %s@%s has no %s; syncloop cannot read this tag", Module, tag, kubeletPath)
	}
	return fsys, nil
}

// kubeletPath is the file every Kubernetes tree syncloop reads must have.
const kubeletPath = "pkg/kubelet/kubelet.go"

func extractError(what string, err error) error {
	var le *loadError
	if errors.As(err, &le) || errors.Is(err, ErrUnsupportedTag) {
		return err
	}
	return fmt.Errorf("extract %s: %w", what, err)
}

// loadDir extracts the Reading of a Kubernetes checkout. The tag is
// opts.Tag, else the tag git has checked out, else "dir".
func loadDir(opts Options) (*Reading, error) {
	dir := opts.SourceDir
	if fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(kubeletPath))); err != nil || !fi.Mode().IsRegular() {
		return nil, newError(ErrNotKubernetes, err,
			"%s is not a Kubernetes source tree (no %s); give --source-dir the top of a kubernetes/kubernetes checkout", dir, kubeletPath)
	}
	tag := opts.Tag
	if tag != "" {
		if err := CheckTag(tag); err != nil {
			return nil, err
		}
	} else if tag = gitTag(dir); tag == "" {
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

// gitTag returns the release tag a git checkout at dir has checked out, if
// HEAD is exactly at one, by reading .git directly (no git command).
func gitTag(dir string) string {
	gitDir := filepath.Join(dir, ".git")
	head, err := os.ReadFile(filepath.Join(gitDir, "HEAD"))
	if err != nil {
		return ""
	}
	sha := strings.TrimSpace(string(head))
	if ref, ok := strings.CutPrefix(sha, "ref: "); ok {
		sha = resolveRef(gitDir, ref)
	}
	if len(sha) != 40 {
		return ""
	}
	var best string
	consider := func(tag string) {
		if CheckTag(tag) == nil && (best == "" || semverLess(best, tag)) {
			best = tag
		}
	}
	// packed-refs: "SHA refs/tags/vX", followed by "^PEELED" for annotated tags.
	if data, err := os.ReadFile(filepath.Join(gitDir, "packed-refs")); err == nil {
		var last string
		for line := range strings.Lines(string(data)) {
			line = strings.TrimSpace(line)
			if p, ok := strings.CutPrefix(line, "^"); ok {
				if p == sha {
					consider(last)
				}
				continue
			}
			s, ref, _ := strings.Cut(line, " ")
			last = strings.TrimPrefix(ref, "refs/tags/")
			if !strings.HasPrefix(ref, "refs/tags/") {
				last = ""
			} else if s == sha {
				consider(last)
			}
		}
	}
	// Loose lightweight tags.
	if entries, err := os.ReadDir(filepath.Join(gitDir, "refs", "tags")); err == nil {
		for _, e := range entries {
			if data, err := os.ReadFile(filepath.Join(gitDir, "refs", "tags", e.Name())); err == nil && strings.TrimSpace(string(data)) == sha {
				consider(e.Name())
			}
		}
	}
	return best
}

func resolveRef(gitDir, ref string) string {
	if data, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(ref))); err == nil {
		return strings.TrimSpace(string(data))
	}
	f, err := os.Open(filepath.Join(gitDir, "packed-refs"))
	if err != nil {
		return ""
	}
	defer f.Close()
	data, _ := io.ReadAll(f)
	for line := range strings.Lines(string(data)) {
		if s, r, ok := strings.Cut(strings.TrimSpace(line), " "); ok && r == ref {
			return s
		}
	}
	return ""
}
