package server

import (
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestCachedReadingAsRouted: a rendered reading page answered before the
// router (ServeHTTP's fast path) is the response the routes give, byte
// for byte and header for header, for every way it is asked; and
// nothing else is answered that way.
func TestCachedReadingAsRouted(t *testing.T) {
	t.Parallel()
	s := newTestServer(t, &fixture.Loader{})
	path := "/k8s/" + fixture.Tag + "/"
	if s.cachedReading(httptest.NewRequest("GET", path, nil)) != nil {
		t.Fatal("a page not rendered yet is answered before the router")
	}
	first := get(t, s, path, "Accept-Encoding", "gzip")
	if first.Code != 200 {
		t.Fatalf("GET %s: %d", path, first.Code)
	}
	etag := first.Header().Get("Etag")
	for _, c := range []struct {
		method, target string
		header         []string
	}{
		{"GET", path, nil},
		{"GET", path, []string{"Accept-Encoding", "gzip, deflate, br"}},
		{"GET", path + "?from=a-link", []string{"Accept-Encoding", "gzip"}},
		{"HEAD", path, []string{"Accept-Encoding", "gzip"}},
		{"GET", path, []string{"Accept-Encoding", "gzip", "If-None-Match", etag}},
		{"GET", path, []string{"If-None-Match", `"not-it"`}},
	} {
		req := func() *http.Request {
			r := httptest.NewRequest(c.method, c.target, nil)
			for i := 0; i+1 < len(c.header); i += 2 {
				r.Header.Set(c.header[i], c.header[i+1])
			}
			return r
		}
		if s.cachedReading(req()) == nil {
			t.Errorf("%s %s %q: not answered before the router", c.method, c.target, c.header)
			continue
		}
		fast, routed := httptest.NewRecorder(), httptest.NewRecorder()
		s.ServeHTTP(fast, req())
		s.router.ServeHTTP(routed, req())
		if fast.Code != routed.Code {
			t.Errorf("%s %s %q: status %d, routed %d", c.method, c.target, c.header, fast.Code, routed.Code)
		}
		if !maps.EqualFunc(fast.Header(), routed.Header(), slices.Equal) {
			t.Errorf("%s %s %q: headers\n%v\nrouted\n%v", c.method, c.target, c.header, fast.Header(), routed.Header())
		}
		if fast.Body.String() != routed.Body.String() {
			t.Errorf("%s %s %q: %d bytes of body, routed %d", c.method, c.target, c.header, fast.Body.Len(), routed.Body.Len())
		}
	}
	if got := first.Header().Get("Content-Security-Policy"); got != csp {
		t.Errorf("Content-Security-Policy %q", got)
	}

	for _, r := range []*http.Request{
		httptest.NewRequest("POST", path, strings.NewReader("x=1")),
		httptest.NewRequest("GET", path, strings.NewReader("a body")),
		httptest.NewRequest("GET", "/k8s/"+fixture.Tag, nil),
		httptest.NewRequest("GET", "/k8s/"+fixture.Tag+"/pod-workers", nil),
		httptest.NewRequest("GET", "/k8s/v1.99.0/", nil),
		httptest.NewRequest("GET", "/k8s//", nil),
		httptest.NewRequest("GET", "/k8s/compare/", nil),
		httptest.NewRequest("GET", "/k8s/"+fixture.Tag+"%2F/", nil),
	} {
		if s.cachedReading(r) != nil {
			t.Errorf("%s %s: answered before the router", r.Method, r.URL)
		}
	}

	// A server that logs its requests gives them all to the router, whose
	// middleware logs them.
	var log syncBuffer
	logged := newTestServerTuned(t, &fixture.Loader{}, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	get(t, logged, path)
	if logged.cachedReading(httptest.NewRequest("GET", path, nil)) != nil {
		t.Error("a server logging at debug level answers a page before the router")
	}
	get(t, logged, path)
	if n := strings.Count(log.String(), "msg=request"); n < 2 {
		t.Errorf("%d requests logged, want both:\n%s", n, log.String())
	}
}
