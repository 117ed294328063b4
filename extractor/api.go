package extractor

import (
	"context"
	"io/fs"
	"log/slog"
	"net/http"

	"github.com/syncloop/syncloop/extractor/defs"

	"github.com/syncloop/syncloop/extractor/flow"

	"github.com/syncloop/syncloop/extractor/module"
)

// DefaultTag is the Kubernetes tag syncloop reads when none is given: the
// newest stable tag served when it was pinned. DefaultTagHash is the h1: hash
// of its module zip, checked in addition to the checksum database.
const (
	DefaultTag     = module.DefaultTag
	DefaultTagHash = module.DefaultTagHash
)

// MinTag is the oldest tag syncloop reads.
const MinTag = module.MinTag

// Module is the module path the extractor reads.
const Module = module.Path

// DefaultGOPROXY is the proxy list used when GOPROXY is unset, as the go
// command's (module.DefaultGOPROXY).
const DefaultGOPROXY = module.DefaultGOPROXY

// Errors a caller can test for with errors.Is; module.ErrInvalidTag and the
// others say when each is returned.
var (
	ErrInvalidTag       = module.ErrInvalidTag
	ErrUnknownTag       = module.ErrUnknownTag
	ErrUnsupportedTag   = module.ErrUnsupportedTag
	ErrProxyUnreachable = module.ErrProxyUnreachable
	ErrNoProxy          = module.ErrNoProxy
	ErrChecksumMismatch = module.ErrChecksumMismatch
	ErrNotKubernetes    = module.ErrNotKubernetes
	ErrZipTooLarge      = module.ErrZipTooLarge
)

// CheckTag reports whether tag is one syncloop can read, before any request
// is made (module.CheckTag).
func CheckTag(tag string) error { return module.CheckTag(tag) }

// Source is the source tree of one tag, verified as Load verifies it.
type Source = module.Source

// OpenSource opens the source tree of opts.Tag (DefaultTag when empty) or
// of opts.SourceDir, verified before it is returned (module.Open). Errors
// match the ones Load returns.
func OpenSource(ctx context.Context, opts Options) (*Source, error) {
	return module.Open(ctx, opts.module())
}

// CacheDir returns the directory syncloop caches into: opts.CacheDir, or
// os.UserCacheDir()/syncloop.
func CacheDir(opts Options) (string, error) { return module.CacheDir(opts.CacheDir) }

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

// module is the part of opts that says where the source comes from.
func (o Options) module() module.Options {
	return module.Options{Tag: o.Tag, SourceDir: o.SourceDir, CacheDir: o.CacheDir, Getenv: o.Getenv, Client: o.Client, Logger: o.Logger}
}

// withDefaults fills what Options leaves to its defaults.
func (o Options) withDefaults() Options {
	m := o.module().WithDefaults()
	o.Tag, o.Getenv, o.Client, o.Logger = m.Tag, m.Getenv, m.Client, m.Logger
	return o
}

// The package's two entry points, documented where they are written: Load
// (fetch.go) returns the Reading for opts.Tag or opts.SourceDir, from the
// cache when present, otherwise fetched, verified, extracted and cached;
// Extract (parse.go) builds a Reading from a Kubernetes source tree. Cached,
// CachedTags and CacheDir (cache.go) answer from the cache alone, CheckTag
// says whether a tag is one Load would try, and the errors Load's match
// with errors.Is are above. Where the source comes from is package module.

// The entry points' shapes, checked at compile time, so that fetch.go and
// parse.go agree with what callers are told above.
var (
	_ func(context.Context, Options) (*Reading, error) = Load
	_ func(fs.FS, string, []string) (*Reading, error)  = Extract
)

// Site is one place in the source a case's channel passes (flow.Site).
type Site = flow.Site

// The definitions index (package defs): Defs of one tag, a Decl per
// symbol, a Ref per use of one.
type (
	Defs = defs.Defs
	Decl = defs.Decl
	Ref  = defs.Ref
)

// ShortSymbol is the symbol without its package path:
// "(*Kubelet).HandlePodAdditions".
func ShortSymbol(sym string) string { return defs.ShortSymbol(sym) }
