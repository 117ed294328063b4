package module

// Verification against the Go checksum database (GOSUMDB), reached the way
// the go command reaches it: through the first proxy in GOPROXY that answers
// $proxy/sumdb/<name>/supported, else directly. The latest signed tree head
// and the tiles read are kept under CacheDir/sumdb, so later checks are
// consistent with earlier ones and need less network.
//
// GOSUMDB, GONOSUMDB and GOPRIVATE are honoured as by the go command.
// GOINSECURE has no effect here: it only relaxes HTTPS for direct (version
// control) fetches, which syncloop never does, and like the go command it
// never disables checksum verification.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/mod/module"
	"golang.org/x/mod/sumdb"
)

// knownSumDBs are the go command's built-in checksum databases and keys
// (cmd/go/internal/modfetch/key.go).
var knownSumDBs = map[string]string{
	"sum.golang.org": "sum.golang.org+033de0ae+Ac4zctda0e5eza+HJyk9SxEdh+s3Ux18htTTAD8OuAn8",
}

// sumdbConfig is a parsed GOSUMDB.
type sumdbConfig struct {
	name   string // e.g. sum.golang.org
	key    string // verifier key
	direct string // URL to use when no proxy serves the database
}

// parseGOSUMDB parses GOSUMDB like the go command: "" means sum.golang.org,
// "off" disables (nil config), otherwise "NAME", "KEY" or "KEY URL".
func parseGOSUMDB(gosumdb string) (*sumdbConfig, error) {
	gosumdb = strings.TrimSpace(gosumdb)
	if gosumdb == "" {
		gosumdb = "sum.golang.org"
	}
	if gosumdb == "off" {
		return nil, nil
	}
	if gosumdb == "sum.golang.google.cn" { // the go command's alias
		gosumdb = "sum.golang.org https://sum.golang.google.cn"
	}
	fields := strings.Fields(gosumdb)
	if len(fields) > 2 {
		return nil, fmt.Errorf("invalid GOSUMDB %q: too many fields; want NAME, KEY or \"KEY URL\"", gosumdb)
	}
	key := fields[0]
	if k, ok := knownSumDBs[key]; ok {
		key = k
	}
	name, _, ok := strings.Cut(key, "+")
	if !ok {
		return nil, fmt.Errorf("invalid GOSUMDB %q: key missing; set GOSUMDB=sum.golang.org, a NAME+KEY, or off", gosumdb)
	}
	direct := "https://" + name
	if len(fields) == 2 {
		u, err := url.Parse(fields[1])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
			return nil, fmt.Errorf("invalid GOSUMDB URL %q: want http(s)://…", fields[1])
		}
		direct = strings.TrimSuffix(fields[1], "/")
	}
	return &sumdbConfig{name: name, key: key, direct: direct}, nil
}

// noSumDB reports whether GONOSUMDB (or, when unset, GOPRIVATE) exempts the
// module from checksum database verification.
func noSumDB(getenv func(string) string) bool {
	list := getenv("GONOSUMDB")
	if list == "" {
		list = getenv("GOPRIVATE")
	}
	return module.MatchPrefixPatterns(list, Path)
}

// sumdbOps implements sumdb.ClientOps over HTTP and the cache directory.
type sumdbOps struct {
	ctx     context.Context
	client  *http.Client
	cfg     *sumdbConfig
	proxies []proxySpec
	dir     string // CacheDir/sumdb
	logger  *slog.Logger

	baseOnce sync.Once
	base     string
	baseErr  error

	mu       sync.Mutex // serializes WriteConfig's compare-and-swap in-process
	security []string
}

// resolveBase finds where to read the database: the first proxy that says it
// supports it (404/410 fall through a comma, anything falls through a pipe),
// else the database's own URL.
func (o *sumdbOps) resolveBase() (string, error) {
	o.baseOnce.Do(func() {
		for _, p := range o.proxies {
			if p.url == "off" || p.url == "direct" {
				break
			}
			u := p.url + "/sumdb/" + o.cfg.name
			resp, err := httpGet(o.ctx, o.client, u+"/supported")
			if err == nil {
				resp.Body.Close()
				o.base = u
				return
			}
			var se *httpStatusError
			if errors.As(err, &se) && se.notFound() || p.fallBackOnError {
				continue
			}
			o.baseErr = err
			return
		}
		o.base = o.cfg.direct
	})
	return o.base, o.baseErr
}

func (o *sumdbOps) ReadRemote(path string) ([]byte, error) {
	base, err := o.resolveBase()
	if err != nil {
		return nil, err
	}
	resp, err := httpGet(o.ctx, o.client, base+path)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return io.ReadAll(io.LimitReader(resp.Body, 1<<20))
}

func (o *sumdbOps) ReadConfig(file string) ([]byte, error) {
	if file == "key" {
		return []byte(o.cfg.key), nil
	}
	data, err := os.ReadFile(o.configPath(file))
	if errors.Is(err, os.ErrNotExist) {
		return []byte{}, nil // start from an empty tree
	}
	return data, err
}

func (o *sumdbOps) WriteConfig(file string, old, new []byte) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur, err := os.ReadFile(o.configPath(file))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if !bytes.Equal(cur, old) {
		return sumdb.ErrWriteConflict
	}
	return WriteFileAtomic(o.configPath(file), new)
}

func (o *sumdbOps) configPath(file string) string {
	return filepath.Join(o.dir, "config", filepath.FromSlash(file))
}

func (o *sumdbOps) ReadCache(file string) ([]byte, error) {
	return os.ReadFile(filepath.Join(o.dir, "cache", filepath.FromSlash(file)))
}

func (o *sumdbOps) WriteCache(file string, data []byte) {
	if err := WriteFileAtomic(filepath.Join(o.dir, "cache", filepath.FromSlash(file)), data); err != nil {
		o.logger.Warn("cannot cache checksum database file", "file", file, "err", err)
	}
}

func (o *sumdbOps) Log(msg string) { o.logger.Debug(msg) }

func (o *sumdbOps) SecurityError(msg string) {
	o.logger.Error("checksum database security error", "msg", msg)
	o.mu.Lock()
	o.security = append(o.security, msg)
	o.mu.Unlock()
}

// sumDBHash looks up the h1: hash the checksum database lists for the
// module zip of tag, and returns it with the database's name. It returns no
// hash and no error, without a lookup, when GOSUMDB=off or GONOSUMDB or
// GOPRIVATE exempt the module. advice ends the error when the database
// cannot be reached: what the caller's user can do about it.
func sumDBHash(ctx context.Context, client *http.Client, getenv func(string) string, proxies []proxySpec, cacheDir string, logger *slog.Logger, tag, advice string) (hash, db string, err error) {
	cfg, err := parseGOSUMDB(getenv("GOSUMDB"))
	if err != nil {
		return "", "", Errorf(ErrChecksumMismatch, err, "%v", err)
	}
	if cfg == nil || noSumDB(getenv) {
		logger.Warn("checksum database verification disabled by GOSUMDB, GONOSUMDB or GOPRIVATE", "module", Path, "tag", tag)
		return "", "", nil
	}
	ops := &sumdbOps{ctx: ctx, client: client, cfg: cfg, proxies: proxies, dir: filepath.Join(cacheDir, "sumdb"), logger: logger}
	lines, err := sumdb.NewClient(ops).Lookup(Path, tag)
	if err != nil {
		if ctx.Err() != nil {
			return "", cfg.name, ctx.Err()
		}
		kind := ErrProxyUnreachable
		if errors.Is(err, sumdb.ErrSecurity) {
			kind = ErrChecksumMismatch
		}
		return "", cfg.name, Errorf(kind, err,
			"cannot verify %s@%s against the checksum database %s: %v; %s", Path, tag, cfg.name, err, advice)
	}
	want := Path + " " + tag + " "
	for _, line := range lines {
		if h, ok := strings.CutPrefix(line, want); ok {
			return h, cfg.name, nil
		}
	}
	return "", cfg.name, Errorf(ErrChecksumMismatch, nil,
		"the checksum database %s has no hash for %s@%s; syncloop will not use a module zip the database does not know", cfg.name, Path, tag)
}

// checkSumDB verifies hash as the h1: hash of the downloaded module zip for
// tag against the checksum database. It reports whether the database was
// consulted: not when GOSUMDB=off or GONOSUMDB/GOPRIVATE exempt the module.
func checkSumDB(ctx context.Context, client *http.Client, getenv func(string) string, proxies []proxySpec, cacheDir string, logger *slog.Logger, tag, hash string) (bool, error) {
	want, db, err := sumDBHash(ctx, client, getenv, proxies, cacheDir, logger, tag,
		"check GOPROXY/GOSUMDB (GOSUMDB=off skips this check) or use --source-dir DIR")
	if err != nil || want == "" {
		return false, err
	}
	if want != hash {
		return false, mismatchError(tag, "downloaded", hash, "checksum database "+db, want, "the proxy or your cache is corrupt")
	}
	return true, nil
}

// mismatchError says that what (e.g. "downloaded") is hash got where says want.
func mismatchError(tag, what, got, where, want, advice string) error {
	return Errorf(ErrChecksumMismatch, nil,
		"checksum mismatch for %s@%s: %s %s, %s says %s; %s", Path, tag, what, got, where, want, advice)
}
