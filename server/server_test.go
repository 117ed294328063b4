package server

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/site"
)

// get runs one request against h and returns the recorded response.
func get(t testing.TB, h http.Handler, path string, header ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest("GET", path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

func TestRoutes(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	tests := []struct {
		path     string
		status   int
		ctype    string // prefix
		location string
		contains []string
	}{
		{path: "/", status: 302, location: "/k8s/v1.37.2/"},
		{path: "/k8s?tag=v1.31.0", status: 303, location: "/k8s/v1.31.0/"},
		{path: "/k8s?tag=1.31.0", status: 303, location: "/k8s/v1.31.0/"},
		{path: "/k8s?tag=v1.31.0%2F..%2Fx", status: 303, location: "/k8s/v1.31.0%2F..%2Fx/"},
		{path: "/k8s", status: 303, location: "/k8s/v1.37.2/"},
		{path: "/k8s/v1.37.2", status: 301, location: "/k8s/v1.37.2/"},
		{path: "/k8s/v1.37.2/", status: 200, ctype: "text/html", contains: []string{
			`id="case-config" data-case="config" data-start="1014" data-end="1019"`,
			`<span class="case-count" data-case-count="pleg" title="lines of this case in the live pane">0</span>`,
			`data-case-select="pleg" data-hue="1"`,
			`id="L1020"`, `href="#L1020"`,
			`<aside id="live" data-feed="default" data-tag="v1.37.2" data-cases="[{&#34;key&#34;:&#34;config&#34;,&#34;start&#34;:1014,&#34;end&#34;:1019,&#34;hue&#34;:&#34;0&#34;}`,
			`<script type="module" src="/static/live.js?v=`, `<script type="module" src="/static/reader.js?v=`,
			"https://github.com/kubernetes/kubernetes/blob/v1.37.2/pkg/kubelet/tiny.go#L1014-L1019",
			"No note yet for this case.",               // mystery has no note
			"Not at this tag", `id="absent-container"`, // container's note, no container case
			"Tiny cleanup &lt;failed&gt; &amp;", // log messages escaped
			"5 channels in the doc comment, 7 cases in the select",
			`<span class="s">&#34;Tiny ADD&#34;</span>`, // chroma classes
			"DesiredStateOfWorld", "desired_state_of_world.go:45",
			`<a href="/k8s/v1.37.2/volume-manager">the second reading, its reconciler at v1.37.2</a>`, // the two sets lead to the second reading
			`<details class="helper" id="helper-tinyProbeSync">`,
		}},
		{path: "/k8s/v1.37.2/pod-workers", status: 200, ctype: "text/html", contains: []string{
			`<pre class="doc">podWork is &lt;one&gt; unit of work &amp; more.</pre>`, "No doc comment.", "pod_workers.go:40",
		}},
		{path: "/k8s/v1.37.2/reading.json", status: 200, ctype: "application/json", contains: []string{`"tag": "v1.37.2"`}},
		// the second reading's route, answered before any load for a tag it cannot read
		{path: "/k8s/v1.19.0/volume-manager.json", status: 404, ctype: "text/html", contains: []string{"Tag v1.19.0 cannot be read here"}},
		{path: "/k8s/v1.19.0/volume-manager", status: 404, ctype: "text/html", contains: []string{"Tag v1.19.0 cannot be read here"}},
		{path: "/k8s/v1.37.2/worksheet.md", status: 200, ctype: "text/markdown", contains: []string{
			"- **config** (pkg/kubelet/tiny.go:1014): channel `configCh`, element type `tiny.Update`, written by",
			"- **mystery** (pkg/kubelet/tiny.go:1029)",
			"[pkg/kubelet/volumemanager/cache/desired_state_of_world.go:45](",
			"level-triggered",
		}},
		{path: "/static/style.css", status: 200, ctype: "text/css"},
		{path: "/static/reader.js", status: 200, ctype: "text/javascript"},
		{path: "/static/chroma.css", status: 200, ctype: "text/css", contains: []string{"@media screen and (prefers-color-scheme: dark)", ".chroma .k {"}},
		{path: "/static/nope.css", status: 404},
		{path: "/static/../server.go", status: 400},
		{path: "/static/%2e%2e/server.go", status: 404},
		{path: "/static/..%2fserver.go", status: 400},
		{path: "/nowhere", status: 404, contains: []string{"/nowhere"}},
		{path: "/k8s/v1.2/", status: 404, contains: []string{"&#34;v1.2&#34; is not a Kubernetes tag"}},
		{path: "/k8s/v1.19.0/", status: 404, contains: []string{"v1.19.0", "v1.20.0 and later"}},
		{path: "/k8s/%3Cscript%3E/", status: 404, contains: []string{"&lt;script&gt;"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			w := get(t, s, tt.path)
			if w.Code != tt.status {
				t.Fatalf("status %d, want %d; body:\n%.500s", w.Code, tt.status, w.Body)
			}
			if got := w.Header().Get("Content-Type"); !strings.HasPrefix(got, tt.ctype) {
				t.Errorf("Content-Type %q, want %q…", got, tt.ctype)
			}
			if got := w.Header().Get("Location"); got != tt.location {
				t.Errorf("Location %q, want %q", got, tt.location)
			}
			for _, want := range tt.contains {
				if !strings.Contains(w.Body.String(), want) {
					t.Errorf("body lacks %q", want)
				}
			}
		})
	}
}

func TestEveryCaseHasOneBlock(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	body := get(t, s, "/k8s/v1.37.2/").Body.String()
	r := fixture.Reading(t)
	blocks := regexp.MustCompile(`<section class="seg case" id="case-([a-z]+)"`).FindAllStringSubmatch(body, -1)
	if len(blocks) != len(r.Function.Cases) {
		t.Fatalf("%d case blocks, want %d", len(blocks), len(r.Function.Cases))
	}
	for i, c := range r.Function.Cases {
		if blocks[i][1] != c.Key {
			t.Errorf("block %d is %s, want %s", i, blocks[i][1], c.Key)
		}
	}
	// Every line of the function and of the helper is there, once, with its id.
	for n := r.Function.DocStart; n <= r.Function.End; n++ {
		if c := strings.Count(body, fmt.Sprintf(`id="L%d"`, n)); c != 1 {
			t.Errorf("line %d appears %d times", n, c)
		}
	}
	h := r.Function.Helpers[0]
	if !strings.Contains(body, fmt.Sprintf(`id="L%d"`, h.End)) {
		t.Errorf("helper's last line %d missing", h.End)
	}
}

// TestCSPHolds checks what the Content-Security-Policy forbids is absent:
// inline style attributes, inline scripts, and anything from another host.
func TestCSPHolds(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	for _, path := range []string{"/k8s/v1.37.2/", "/k8s/v1.37.2/pod-workers", "/nowhere", "/k8s/v1.2/", "/k8s/compare/v1.37.2...v1.37.2"} {
		body := get(t, s, path).Body.String()
		if regexp.MustCompile(`(?i)\sstyle=`).MatchString(body) || strings.Contains(body, "<style") {
			t.Errorf("%s has inline style", path)
		}
		for _, m := range regexp.MustCompile(`<script[^>]*>`).FindAllString(body, -1) {
			if !strings.Contains(m, `src="/static/`) {
				t.Errorf("%s has a script not from /static/: %s", path, m)
			}
		}
		for _, m := range regexp.MustCompile(`src="([^"]*)"`).FindAllStringSubmatch(body, -1) {
			if !strings.HasPrefix(m[1], "/static/") {
				t.Errorf("%s loads %s", path, m[1])
			}
		}
		for _, m := range regexp.MustCompile(`<link[^>]*href="([^"]*)"`).FindAllStringSubmatch(body, -1) {
			if !strings.HasPrefix(m[1], "/static/") && !strings.HasPrefix(m[1], "data:") {
				t.Errorf("%s links %s", path, m[1])
			}
		}
	}
}

func TestSecurityHeaders(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	for _, path := range []string{"/", "/k8s/v1.37.2/", "/k8s/v1.37.2/reading.json", "/static/style.css", "/nowhere", "/k8s/v0.1.0/", "/healthz", "/k8s/compare/v1.37.2...v1.37.2"} {
		w := get(t, s, path)
		for h, want := range map[string]string{
			"Content-Security-Policy": csp,
			"X-Content-Type-Options":  "nosniff",
			"Referrer-Policy":         "no-referrer",
		} {
			if got := w.Header().Get(h); got != want {
				t.Errorf("%s: %s = %q, want %q", path, h, got, want)
			}
		}
	}
	if strings.Contains(csp, "unsafe-inline") {
		t.Error("CSP allows unsafe-inline")
	}
}

func TestETagAndGzip(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	for _, path := range []string{"/k8s/v1.37.2/", "/k8s/v1.37.2/reading.json", "/static/reader.js"} {
		t.Run(path, func(t *testing.T) {
			plain := get(t, s, path)
			zipped := get(t, s, path, "Accept-Encoding", "br;q=1.0, gzip;q=0.8")
			if plain.Header().Get("Content-Encoding") != "" {
				t.Errorf("encoded without Accept-Encoding")
			}
			if zipped.Header().Get("Content-Encoding") != "gzip" {
				t.Fatalf("not gzipped: %v", zipped.Header())
			}
			for _, w := range []*httptest.ResponseRecorder{plain, zipped} {
				if w.Header().Get("Vary") != "Accept-Encoding" {
					t.Errorf("Vary = %q", w.Header().Get("Vary"))
				}
				if !regexp.MustCompile(`^"[A-Za-z0-9_-]+"$`).MatchString(w.Header().Get("Etag")) {
					t.Errorf("ETag %q is not strong", w.Header().Get("Etag"))
				}
			}
			if plain.Header().Get("Etag") == zipped.Header().Get("Etag") {
				t.Error("gzip and identity share an ETag")
			}
			zr, err := gzip.NewReader(zipped.Body)
			if err != nil {
				t.Fatal(err)
			}
			unz, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(unz, plain.Body.Bytes()) {
				t.Error("gzip body differs from identity body")
			}
			if zipped.Body.Len() >= plain.Body.Len() {
				t.Errorf("gzip %d bytes, identity %d", zipped.Body.Len(), plain.Body.Len())
			}
			for _, h := range []http.Header{plain.Header(), zipped.Header()} {
				again := get(t, s, path, "If-None-Match", h.Get("Etag"), "Accept-Encoding", "gzip")
				if again.Code != http.StatusNotModified || again.Body.Len() != 0 {
					t.Errorf("If-None-Match %s: %d with %d bytes, want 304 and none", h.Get("Etag"), again.Code, again.Body.Len())
				}
			}
			if w := get(t, s, path, "If-None-Match", `"stale"`); w.Code != 200 {
				t.Errorf("stale ETag: %d", w.Code)
			}
			if w := get(t, s, path, "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" {
				t.Error("gzip;q=0 got gzip")
			}
		})
	}
}

func TestStaticCaching(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	// The versioned address the pages link to.
	versioned := regexp.MustCompile(`/static/style\.css\?v=[^"]+`).FindString(get(t, s, "/k8s/"+fixture.Tag+"/").Body.String())
	if versioned == "" {
		t.Fatal("the page links to no versioned style.css")
	}
	if w := get(t, s, versioned); !strings.Contains(w.Header().Get("Cache-Control"), "immutable") {
		t.Errorf("%s: Cache-Control %q", versioned, w.Header().Get("Cache-Control"))
	}
	for _, path := range []string{"/static/style.css", "/static/style.css?v=old"} {
		if w := get(t, s, path); w.Header().Get("Cache-Control") != "no-cache" {
			t.Errorf("%s: Cache-Control %q", path, w.Header().Get("Cache-Control"))
		}
	}
}

// TestFetchingThenFailing: a tag not yet loaded answers at once with a page
// that reloads itself, its Load runs once however many ask, and its failure
// is then a page naming the tag with the right status.
func TestFetchingThenFailing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tag    string
		err    error
		status int
		want   []string
	}{
		{"v1.99.0", &fixture.TagError{Kind: extractor.ErrUnknownTag, Msg: "tag v1.99.0: the module proxy does not serve it"}, 404, []string{"No tag v1.99.0 of k8s.io/kubernetes", "the module proxy does not serve it"}},
		{"v1.30.1", &fixture.TagError{Kind: extractor.ErrProxyUnreachable, Msg: "fetch v1.30.1: dial tcp: connection refused"}, 502, []string{"Could not fetch v1.30.1", "Try again in a little while", "a local Kubernetes checkout"}},
		{"v1.30.2", &fixture.TagError{Kind: extractor.ErrChecksumMismatch, Msg: "v1.30.2: h1: mismatch"}, 502, []string{"did not verify"}},
		{"v1.30.3", fmt.Errorf("something else broke"), 500, []string{"Could not read v1.30.3", "something else broke"}},
	}
	for _, tt := range tests {
		t.Run(tt.tag, func(t *testing.T) {
			release := make(chan struct{})
			fl := &fixture.Loader{Errs: map[string]error{tt.tag: tt.err}, Hold: map[string]chan struct{}{tt.tag: release}}
			s := newTestServer(t, fl)
			base := fl.Calls.Load()
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					w := get(t, s, "/k8s/"+tt.tag+"/")
					if w.Code != http.StatusAccepted {
						t.Errorf("while loading: %d, want 202", w.Code)
					}
					body := w.Body.String()
					for _, want := range []string{"Fetching k8s.io/kubernetes@" + tt.tag, `<meta http-equiv="refresh" content="2">`} {
						if !strings.Contains(body, want) {
							t.Errorf("fetching page lacks %q", want)
						}
					}
					if w.Header().Get("Retry-After") != "2" {
						t.Errorf("fetching page Retry-After %q", w.Header().Get("Retry-After"))
					}
					if w.Header().Get("Cache-Control") != "no-store" {
						t.Errorf("fetching page Cache-Control %q", w.Header().Get("Cache-Control"))
					}
				}()
			}
			wg.Wait()
			close(release)
			waitLoaded(t, s, tt.tag)
			if n := fl.Calls.Load() - base; n != 1 {
				t.Errorf("Load called %d times for one tag, want 1", n)
			}
			w := get(t, s, "/k8s/"+tt.tag+"/pod-workers")
			if w.Code != tt.status {
				t.Errorf("after failure: %d, want %d", w.Code, tt.status)
			}
			for _, want := range tt.want {
				if !strings.Contains(w.Body.String(), want) {
					t.Errorf("error page lacks %q:\n%s", want, w.Body)
				}
			}
		})
	}
}

// TestNewTagJoinsSwitcher: once another tag loads, pages list it.
func TestNewTagJoinsSwitcher(t *testing.T) {
	t.Parallel()
	other := fixture.Reading(t)
	other.Tag = "v1.31.0"
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t), "v1.31.0": other}}
	s := newTestServer(t, fl)
	first := get(t, s, "/k8s/v1.37.2/")
	if strings.Contains(first.Body.String(), `<option value="v1.31.0">`) {
		t.Fatal("v1.31.0 listed before it was loaded")
	}
	get(t, s, "/k8s/v1.31.0/")
	waitLoaded(t, s, "v1.31.0")
	if w := get(t, s, "/k8s/v1.31.0/reading.json"); w.Code != 200 || !strings.Contains(w.Body.String(), `"tag": "v1.31.0"`) {
		t.Fatalf("v1.31.0 reading.json: %d", w.Code)
	}
	second := get(t, s, "/k8s/v1.37.2/", "If-None-Match", first.Header().Get("Etag"))
	if second.Code != 200 || !strings.Contains(second.Body.String(), `<option value="v1.31.0">`) {
		t.Errorf("after v1.31.0 loaded: %d, switcher lists it: %v", second.Code, strings.Contains(second.Body.String(), `<option value="v1.31.0">`))
	}
}

func TestReadingJSONRoundTrips(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	var got extractor.Reading
	if err := json.Unmarshal(get(t, s, "/k8s/v1.37.2/reading.json").Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := fixture.Reading(t)
	if got.Function.Text != want.Function.Text || len(got.Function.Cases) != len(want.Function.Cases) {
		t.Errorf("reading.json does not round-trip")
	}
}

// TestTooManyTags: a stream of made-up tags cannot grow the server without
// end; once the failed ones are forgotten there is room again.
// TestTooManyTags: at most site.MaxLoading tags are fetched at once,
// whoever asks (here one client per tag, named by a trusted proxy, so no
// client's own budget is reached); one more is answered 503 with when to
// retry, and taken once the others are done.
func TestTooManyTags(t *testing.T) {
	release := make(chan struct{})
	fl := &fixture.Loader{Hold: map[string]chan struct{}{}}
	for i := range site.MaxLoading + 1 {
		fl.Hold[fmt.Sprintf("v1.99.%d", i)] = release
	}
	s := newTestServerTuned(t, fl, func(c *Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")} // httptest's RemoteAddr
	}, func(p *Plan) { p.Site.Wait = time.Millisecond })
	client := func(i int) []string { return []string{"X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i)} }
	for i := range site.MaxLoading {
		if w := get(t, s, fmt.Sprintf("/k8s/v1.99.%d/", i), client(i)...); w.Code != http.StatusAccepted {
			t.Fatalf("tag %d: %d", i, w.Code)
		}
	}
	over := fmt.Sprintf("/k8s/v1.99.%d/", site.MaxLoading)
	if w := get(t, s, over, client(200)...); w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") == "" {
		t.Fatalf("tag past the limit: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
	}
	close(release) // every held tag now fails as unknown
	for i := range site.MaxLoading {
		waitLoaded(t, s, fmt.Sprintf("v1.99.%d", i))
	}
	// Taken now: its load starts and fails at once as unknown (404), or,
	// when the load has not finished within the site's 1 ms Wait (a
	// goroutine waiting for a CPU), the request is answered 202 as any
	// tag being fetched, and the next one gets the failure.
	w := get(t, s, over, client(200)...)
	if w.Code == http.StatusAccepted {
		waitLoaded(t, s, fmt.Sprintf("v1.99.%d", site.MaxLoading))
		w = get(t, s, over, client(200)...)
	}
	if w.Code != http.StatusNotFound {
		t.Errorf("once the others are done: %d, want 404", w.Code)
	}
}

func TestHead(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	for _, path := range []string{"/k8s/v1.37.2/", "/static/style.css"} {
		req := httptest.NewRequest("HEAD", path, nil)
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 || w.Body.Len() != 0 || w.Header().Get("Content-Length") == "" || w.Header().Get("Etag") == "" {
			t.Errorf("HEAD %s: %d, %d bytes, headers %v", path, w.Code, w.Body.Len(), w.Header())
		}
	}
}
