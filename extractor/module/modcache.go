package module

// The local module cache: the go command's $GOMODCACHE, where a module zip
// already downloaded (and verified) by `go mod download` can be read without
// any network access when its .ziphash is beside it. syncloop never runs the
// go command; it finds the cache the way the go command does.

import (
	"os"
	"path/filepath"

	"golang.org/x/mod/module"
)

// modCacheDir returns the module cache directory: $GOMODCACHE, else the
// first entry of $GOPATH plus /pkg/mod, else $HOME/go/pkg/mod. It returns ""
// when none can be determined.
func modCacheDir(getenv func(string) string) string {
	if d := getenv("GOMODCACHE"); d != "" {
		return d
	}
	if list := filepath.SplitList(getenv("GOPATH")); len(list) > 0 && list[0] != "" {
		return filepath.Join(list[0], "pkg", "mod")
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return ""
		}
	}
	return filepath.Join(home, "go", "pkg", "mod")
}

// ModCacheZip returns the paths of the module zip for tag in the module
// cache and of its .ziphash file (which the go command writes after checking
// the zip), and whether the zip exists.
func ModCacheZip(getenv func(string) string, tag string) (zipPath, ziphashPath string, ok bool) {
	dir := modCacheDir(getenv)
	if dir == "" {
		return "", "", false
	}
	epath, err := module.EscapePath(Path)
	if err != nil {
		return "", "", false
	}
	evers, err := module.EscapeVersion(tag)
	if err != nil {
		return "", "", false
	}
	base := filepath.Join(dir, "cache", "download", filepath.FromSlash(epath), "@v", evers)
	zipPath = base + ".zip"
	if fi, err := os.Stat(zipPath); err != nil || !fi.Mode().IsRegular() {
		return "", "", false
	}
	return zipPath, base + ".ziphash", true
}
