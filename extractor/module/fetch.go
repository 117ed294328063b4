package module

// fetch.go finds a tag's module zip, in order: the module zip in the local
// module cache, verified against the pinned hash, its .ziphash or the
// checksum database; the module zip from the module proxy, verified against
// the checksum database (and, for DefaultTag, the pinned hash).

import (
	"archive/zip"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/dirhash"
)

// DefaultClient fails fast on a proxy that cannot be reached or does not
// answer, and gives a 20 MB download on a slow link time to finish.
func DefaultClient() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	t.TLSHandshakeTimeout = 10 * time.Second
	t.ResponseHeaderTimeout = 30 * time.Second
	return &http.Client{Transport: t, Timeout: 10 * time.Minute}
}

// Zip is the module zip of a tag, found in the module cache or
// downloaded.
type Zip struct {
	Tag      string
	Path     string
	Kind     string // "proxy" or "modcache"
	Hash     string // the h1: hash, once verified
	Verified string // how: a Verified* value
	temp     bool   // Path is a download to remove when done
	// verify checks the zip's hash when that has not been done yet; it runs
	// beside the extraction, whose result is dropped if it fails.
	verify func() (string, error)
}

// Pending reports whether the zip's hash is still to be checked (Verify).
func (z *Zip) Pending() bool { return z.verify != nil }

// Verify checks the zip's hash if that is still to do, and sets Hash. It
// reads the zip, and may run beside a reader of it.
func (z *Zip) Verify() error {
	if z.verify == nil {
		return nil
	}
	h, err := z.verify()
	if err != nil {
		return err
	}
	z.Hash, z.verify = h, nil
	return nil
}

// Close removes a zip downloaded for this fetch.
func (z *Zip) Close() {
	if z.temp {
		os.Remove(z.Path)
	}
}

// Fetch returns the module zip for opts.Tag: from the module cache (see
// modCacheModuleZip) or downloaded through GOPROXY and verified against the
// checksum database and the pinned hash before it is returned.
func Fetch(ctx context.Context, opts Options, cacheDir string) (*Zip, error) {
	tag := opts.Tag
	if zipPath, ziphashPath, ok := ModCacheZip(opts.Getenv, tag); ok {
		return modCacheModuleZip(ctx, opts, cacheDir, zipPath, ziphashPath)
	}

	proxies, err := parseGOPROXY(opts.Getenv("GOPROXY"))
	if err != nil {
		return nil, err
	}
	opts.Logger.Info("downloading", "module", Path, "tag", tag, "goproxy", proxyList(proxies))
	file, proxyURL, err := downloadZip(ctx, opts.Client, proxies, tag, filepath.Join(cacheDir, "tmp"))
	if err != nil {
		return nil, err
	}
	z := &Zip{Tag: tag, Path: file, Kind: "proxy", temp: true}
	if err := z.verifyDownload(ctx, opts, proxies, cacheDir, proxyURL); err != nil {
		z.Close()
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
func modCacheModuleZip(ctx context.Context, opts Options, cacheDir, zipPath, ziphashPath string) (*Zip, error) {
	tag := opts.Tag
	opts.Logger.Info("reading the module cache", "zip", zipPath)
	z := &Zip{Tag: tag, Path: zipPath, Kind: "modcache"}
	advice := "remove it (or run `go clean -modcache`) and try again"
	ziphash := ""
	if data, err := os.ReadFile(ziphashPath); err == nil {
		ziphash = strings.TrimSpace(string(data))
	}
	// want is the hash the zip must have, where says who says so, and
	// z.Verified how the Reading will say it was checked.
	var want, where string
	switch {
	case tag == DefaultTag:
		if ziphash != "" && ziphash != DefaultTagHash {
			return nil, mismatchError(tag, "the module cache's .ziphash says", ziphash, "the pinned hash", DefaultTagHash,
				"the module cache's "+ziphashPath+" is corrupt; "+advice)
		}
		want, where, z.Verified = DefaultTagHash, "the pinned hash", VerifiedPinned
	case ziphash != "":
		want, where, z.Verified = ziphash, "its .ziphash", VerifiedZiphash
	}
	if st, ok := ReadStamp(cacheDir, tag, zipPath); ok && (want == "" || st.Hash == want) {
		z.Hash, z.Verified = st.Hash, st.Verified
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
				"set GONOSUMDB="+Path+" to use the zip unverified, or use --source-dir DIR")
		if err != nil {
			return nil, err
		}
		if h == "" {
			z.Verified = VerifiedNone
		} else {
			want, where, z.Verified = h, "checksum database "+db, VerifiedSumDB
		}
	}
	z.verify = func() (string, error) {
		got, err := dirhash.HashZip(zipPath, dirhash.Hash1)
		if err != nil {
			return "", Errorf(ErrChecksumMismatch, err, "the module cache's zip %s is unreadable: %v; %s", zipPath, err, advice)
		}
		if want == "" {
			opts.Logger.Warn("using the module cache's zip unverified", "zip", zipPath, "hash", got)
			return got, nil
		}
		if got != want {
			return "", mismatchError(tag, "the module cache's zip hashes to", got, where, want, "the module cache's "+zipPath+" is corrupt; "+advice)
		}
		if err := WriteStamp(cacheDir, tag, zipPath, got, z.Verified); err != nil {
			opts.Logger.Warn("cannot record the zip as verified", "err", err)
		}
		return got, nil
	}
	return z, nil
}

// verifyDownload checks a downloaded zip's hash against the pinned hash (for
// DefaultTag) and the checksum database.
func (z *Zip) verifyDownload(ctx context.Context, opts Options, proxies []proxySpec, cacheDir, proxyURL string) error {
	// Hashing inflates every file: a zip over Go's limits is refused first.
	if err := z.CheckSizes(); err != nil {
		return err
	}
	got, err := dirhash.HashZip(z.Path, dirhash.Hash1)
	if err != nil {
		return Errorf(ErrChecksumMismatch, err,
			"the module zip %s served by %s is not a valid zip: %v; the proxy is misbehaving: try again, set GOPROXY, or use --source-dir DIR", Path+"@"+z.Tag, proxyURL, err)
	}
	pinned := z.Tag == DefaultTag
	if pinned && got != DefaultTagHash {
		return mismatchError(z.Tag, "downloaded", got, "the pinned hash", DefaultTagHash, "the proxy "+proxyURL+" or your cache is corrupt")
	}
	checked, err := checkSumDB(ctx, opts.Client, opts.Getenv, proxies, cacheDir, opts.Logger, z.Tag, got)
	if err != nil {
		return err
	}
	switch {
	case pinned && checked:
		z.Verified = VerifiedPinnedSumDB
	case pinned:
		z.Verified = VerifiedPinned
	case checked:
		z.Verified = VerifiedSumDB
	default:
		z.Verified = VerifiedNone
	}
	z.Hash = got
	opts.Logger.Info("verified", "module", Path, "tag", z.Tag, "hash", got, "proxy", proxyURL, "verified", z.Verified)
	return nil
}

// checkSizes checks the sizes the zip's entries declare (checkZipSizes).
// A zip that is not a zip at all is left to the verification and the
// extraction, which say why.
func (z *Zip) CheckSizes() error {
	zr, err := zip.OpenReader(z.Path)
	if err != nil {
		return nil
	}
	defer zr.Close()
	return checkZipSizes(&zr.Reader, z.Tag)
}

// Root is the module's tree inside its zip: the k8s.io/kubernetes@TAG/
// directory, checked to hold the kubelet.
func Root(zr *zip.Reader, tag string) (fs.FS, error) {
	fsys, err := fs.Sub(boundedFS{zr, tag}, Path+"@"+tag)
	if err != nil {
		return nil, err
	}
	if _, err := fs.Stat(fsys, KubeletPath); errors.Is(err, ErrZipTooLarge) {
		return nil, err
	} else if err != nil {
		return nil, Errorf(ErrUnsupportedTag, err, "the module zip of %s@%s has no %s; syncloop cannot read this tag", Path, tag, KubeletPath)
	}
	return fsys, nil
}

// GitTag returns the release tag a git checkout at dir has checked out, if
// HEAD is exactly at one, by reading .git directly (no git command).
func GitTag(dir string) string {
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
