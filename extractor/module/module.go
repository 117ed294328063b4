// Package module is where the Kubernetes source comes from: the
// k8s.io/kubernetes module zip of a tag, found in the Go module cache or
// downloaded through GOPROXY (fetch.go, proxy.go), verified against the
// pinned hash, the module cache's .ziphash or the checksum database
// (sumdb.go, stamp.go), read within Go's limits on module zips
// (zipbounds.go), or a checkout given as a directory (source.go). It knows
// nothing of what is read in the tree.
package module

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
)

// Path is the module path of Kubernetes.
const Path = "k8s.io/kubernetes"

// DefaultTag is the Kubernetes tag syncloop reads when none is given: the
// newest stable tag served when it was pinned. DefaultTagHash is the h1: hash
// of its module zip, checked in addition to the checksum database.
const (
	DefaultTag     = "v1.37.2"
	DefaultTagHash = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
)

// KubeletPath is the file every Kubernetes tree syncloop reads must have.
const KubeletPath = "pkg/kubelet/kubelet.go"

// How a source was checked (Source.Verified, Zip.Verified). Every zip is
// checked before it is read; these say against what.
const (
	// VerifiedSumDB: the hash the Go checksum database ($GOSUMDB) lists for
	// the tag.
	VerifiedSumDB = "sumdb"
	// VerifiedPinnedSumDB: DefaultTagHash, pinned in syncloop, and the hash
	// the checksum database lists.
	VerifiedPinnedSumDB = "pinned+sumdb"
	// VerifiedPinned: DefaultTagHash, with no checksum database lookup
	// (GOSUMDB=off, or the module exempt from it).
	VerifiedPinned = "pinned"
	// VerifiedZiphash: the hash in the module cache's .ziphash beside the
	// zip, which the go command writes once it has checked the zip.
	VerifiedZiphash = "ziphash"
	// VerifiedNone: not checked. Either a source directory, or a zip the
	// checksum database was told not to check (GOSUMDB=off, GONOSUMDB).
	VerifiedNone = "none"
)

// Options says which tree to open and how.
type Options struct {
	Tag       string
	SourceDir string // a local Kubernetes checkout instead of the proxy; no hash check
	CacheDir  string // where stamps, the checksum database's tiles and downloads go; "" means os.UserCacheDir()/syncloop
	// Getenv reads GOPROXY, GOSUMDB, GONOSUMDB, GOPRIVATE, GOMODCACHE,
	// GOPATH and HOME, as the go command does; nil means os.Getenv.
	Getenv func(string) string
	Client *http.Client // nil means DefaultClient()
	Logger *slog.Logger // nil means discard
}

// WithDefaults fills what Options leaves to its defaults.
func (o Options) WithDefaults() Options {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Client == nil {
		o.Client = DefaultClient()
	}
	if o.Tag == "" && o.SourceDir == "" {
		o.Tag = DefaultTag
	}
	return o
}

// CacheDir returns the directory syncloop caches into: dir, or
// os.UserCacheDir()/syncloop.
func CacheDir(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory: %v; use --cache-dir DIR", err)
	}
	return filepath.Join(d, "syncloop"), nil
}
