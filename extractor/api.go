package extractor

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"
)

// DefaultTag is the Kubernetes tag syncloop reads when none is given: the
// newest stable tag served when it was pinned. DefaultTagHash is the h1: hash
// of its module zip, checked in addition to the checksum database.
const (
	DefaultTag     = "v1.37.2"
	DefaultTagHash = "h1:A2VDEiObzkYqFTKhSsn0ZEb0RlLEXpHWj93gi2HqEwE="
)

// Options says where a Reading comes from and where it is cached.
type Options struct {
	Tag       string
	SourceDir string // a local Kubernetes checkout instead of the proxy; no hash check
	CacheDir  string // where Readings are cached; "" means os.UserCacheDir()/syncloop
	// Symbols are extra declarations to locate at the tag, written
	// "pkg/kubelet/prober/results.(*manager).Set"; see Reading.Symbols.
	Symbols []string
	// Getenv reads GOPROXY, GOSUMDB, GONOSUMDB, GOPRIVATE, GOMODCACHE,
	// GOPATH and HOME, as the go command does (GOINSECURE only affects
	// direct fetches, which syncloop never makes); nil means os.Getenv.
	Getenv func(string) string
	Client *http.Client // nil means a client with sane timeouts
	Logger *slog.Logger // nil means discard
}

// The package's two entry points, documented where they are written: Load
// (fetch.go) returns the Reading for opts.Tag or opts.SourceDir, from the
// cache when present, otherwise fetched, verified, extracted and cached;
// Extract (parse.go) builds a Reading from a Kubernetes source tree. Cached,
// CachedTags and CacheDir (cache.go) answer from the cache alone, CheckTag
// (tag.go) says whether a tag is one Load would try, and the errors Load's
// match with errors.Is are in tag.go.

// The entry points' shapes, checked at compile time, so that fetch.go and
// parse.go agree with what callers are told above.
var (
	_ func(context.Context, Options) (*Reading, error) = Load
	_ func(fs.FS, string, []string) (*Reading, error)  = Extract
)
