package module

// The module proxy protocol (https://go.dev/ref/mod#goproxy-protocol), as
// much of it as syncloop needs: GET $proxy/k8s.io/kubernetes/@v/TAG.zip,
// walking the GOPROXY list the way the go command does.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// DefaultGOPROXY is the go command's default, used when GOPROXY is unset.
const DefaultGOPROXY = "https://proxy.golang.org,direct"

// proxySpec is one entry of GOPROXY. fallBackOnError is true when the entry
// is followed by "|": any error falls through to the next entry; after ","
// only "not found" (404 or 410) does.
type proxySpec struct {
	url             string // a URL, "direct" or "off"
	fallBackOnError bool
}

// parseGOPROXY splits a GOPROXY value as the go command does: "off" and
// "direct" end the list, a bare host gets https://, and an empty value means
// DefaultGOPROXY.
func parseGOPROXY(goproxy string) ([]proxySpec, error) {
	if strings.TrimSpace(goproxy) == "" {
		goproxy = DefaultGOPROXY
	}
	var list []proxySpec
	for goproxy != "" {
		var u string
		fallBack := false
		if i := strings.IndexAny(goproxy, ",|"); i >= 0 {
			u, fallBack, goproxy = goproxy[:i], goproxy[i] == '|', goproxy[i+1:]
		} else {
			u, goproxy = goproxy, ""
		}
		u = strings.TrimSpace(u)
		switch {
		case u == "":
			continue
		case u == "off" || u == "direct":
			return append(list, proxySpec{url: u}), nil
		}
		if strings.ContainsAny(u, ".:/") && !strings.Contains(u, ":/") && !filepath.IsAbs(u) && !path.IsAbs(u) {
			u = "https://" + u
		}
		pu, err := url.Parse(u)
		if err != nil || (pu.Scheme != "http" && pu.Scheme != "https") || pu.Host == "" {
			return nil, Errorf(ErrNoProxy, err,
				"GOPROXY entry %q is not an http(s) URL syncloop can use; set GOPROXY=https://proxy.golang.org or use --source-dir DIR", u)
		}
		list = append(list, proxySpec{url: strings.TrimSuffix(u, "/"), fallBackOnError: fallBack})
	}
	if len(list) == 0 {
		return nil, Errorf(ErrNoProxy, nil, "GOPROXY lists no proxy; set GOPROXY=https://proxy.golang.org or use --source-dir DIR")
	}
	return list, nil
}

// httpStatusError is a non-200 answer from a proxy.
type httpStatusError struct {
	url    string
	status string
	code   int
	body   string // first line of the body, which proxies use for the reason
}

func (e *httpStatusError) Error() string {
	if e.body != "" {
		return fmt.Sprintf("%s: %s: %s", e.url, e.status, e.body)
	}
	return fmt.Sprintf("%s: %s", e.url, e.status)
}

// notFound is the go command's rule for falling through a "," in GOPROXY.
func (e *httpStatusError) notFound() bool { return e.code == 404 || e.code == 410 }

// zipURL is the URL of the module zip for tag on the proxy at base.
func zipURL(base, tag string) (string, error) {
	epath, err := module.EscapePath(Path)
	if err != nil {
		return "", err
	}
	evers, err := module.EscapeVersion(tag)
	if err != nil {
		return "", err
	}
	return base + "/" + epath + "/@v/" + evers + ".zip", nil
}

// httpGet GETs u and returns the response if its status is 200.
func httpGet(ctx context.Context, client *http.Client, u string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		line, _, _ := strings.Cut(strings.TrimSpace(string(body)), "\n")
		return nil, &httpStatusError{url: u, status: resp.Status, code: resp.StatusCode, body: line}
	}
	return resp, nil
}

// downloadZip fetches the module zip for tag into a new temporary file in
// tmpDir, walking the GOPROXY list. It returns the file's path and the proxy
// that served it. The caller removes the file.
func downloadZip(ctx context.Context, client *http.Client, proxies []proxySpec, tag, tmpDir string) (file, proxyURL string, err error) {
	var notFound []string // proxies that said 404/410 (or refused, 403)
	var lastNotFound error
	for _, p := range proxies {
		switch p.url {
		case "off":
			if len(notFound) > 0 {
				return "", "", unknownTagError(tag, notFound, lastNotFound)
			}
			return "", "", Errorf(ErrNoProxy, nil,
				"GOPROXY=off forbids downloading %s@%s, and it is not in the module cache; unset GOPROXY, run `go mod download %s@%s`, or use --source-dir DIR with a Kubernetes checkout",
				Path, tag, Path, tag)
		case "direct":
			if len(notFound) > 0 {
				return "", "", unknownTagError(tag, notFound, lastNotFound)
			}
			return "", "", Errorf(ErrNoProxy, nil,
				"GOPROXY=direct means fetching from version control, which syncloop does not do; set GOPROXY to a module proxy (e.g. https://proxy.golang.org) or use --source-dir DIR with a Kubernetes checkout")
		}
		file, err := downloadOne(ctx, client, p.url, tag, tmpDir)
		if err == nil {
			return file, p.url, nil
		}
		var se *httpStatusError
		isStatus := errors.As(err, &se)
		switch {
		case ctx.Err() != nil:
			return "", "", ctx.Err()
		case isStatus && (se.notFound() || se.code == http.StatusForbidden):
			// 403 is how some proxies (and mirrors) say a version is not
			// available; like the go command, only 404 and 410 fall through
			// a comma.
			notFound = append(notFound, p.url)
			lastNotFound = err
			if se.notFound() || p.fallBackOnError {
				continue
			}
			return "", "", unknownTagError(tag, notFound, err)
		case p.fallBackOnError:
			continue
		case isStatus:
			return "", "", Errorf(ErrProxyUnreachable, err,
				"the module proxy %s failed for %s@%s: %v; try again, set GOPROXY, or use --source-dir DIR with a Kubernetes checkout", p.url, Path, tag, err)
		default:
			cause := err
			var ue *url.Error
			if errors.As(err, &ue) {
				cause = ue.Err // the URL is the proxy's, named already
			}
			return "", "", Errorf(ErrProxyUnreachable, err,
				"cannot reach the module proxy %s: %v; set GOPROXY or use --source-dir DIR with a Kubernetes checkout", p.url, cause)
		}
	}
	if len(notFound) > 0 {
		return "", "", unknownTagError(tag, notFound, lastNotFound)
	}
	return "", "", Errorf(ErrProxyUnreachable, nil,
		"no module proxy in GOPROXY could serve %s@%s; set GOPROXY or use --source-dir DIR with a Kubernetes checkout", Path, tag)
}

func unknownTagError(tag string, proxies []string, cause error) error {
	return Errorf(ErrUnknownTag, cause,
		"tag %s is not served by %s; check the tag or use --source-dir DIR with a Kubernetes checkout", tag, strings.Join(proxies, " or "))
}

// downloadOne fetches the zip from one proxy into a temporary file.
func downloadOne(ctx context.Context, client *http.Client, base, tag, tmpDir string) (string, error) {
	u, err := zipURL(base, tag)
	if err != nil {
		return "", err
	}
	resp, err := httpGet(ctx, client, u)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if err := os.MkdirAll(tmpDir, 0o755); err != nil {
		return "", err
	}
	removeStale(tmpDir, time.Hour)
	f, err := os.CreateTemp(tmpDir, "kubernetes-"+tag+"-*.zip")
	if err != nil {
		return "", err
	}
	n, err := io.Copy(f, io.LimitReader(resp.Body, modzip.MaxZipFile+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n > modzip.MaxZipFile {
		err = fmt.Errorf("%s: larger than %d bytes", u, int64(modzip.MaxZipFile))
	}
	if err != nil {
		os.Remove(f.Name())
		return "", fmt.Errorf("download %s: %w", u, err)
	}
	return f.Name(), nil
}

// removeStale removes downloads older than age from tmpDir: those a killed
// process left behind (a live download is bounded by the client's timeout).
func removeStale(tmpDir string, age time.Duration) {
	entries, err := os.ReadDir(tmpDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() && time.Since(fi.ModTime()) > age {
			os.Remove(filepath.Join(tmpDir, e.Name()))
		}
	}
}

// proxyList writes proxies back as a GOPROXY value, for logs.
func proxyList(proxies []proxySpec) string {
	var b strings.Builder
	for i, p := range proxies {
		b.WriteString(p.url)
		if i < len(proxies)-1 {
			if p.fallBackOnError {
				b.WriteByte('|')
			} else {
				b.WriteByte(',')
			}
		}
	}
	return b.String()
}
