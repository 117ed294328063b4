package site

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/clients"
)

// proxiedSite is a site fetching from proxyURL, each client named as the
// server names it (clients.Identify: X-Forwarded-For believed from the
// test's own address, httptest's 192.0.2.1).
func proxiedSite(t *testing.T, proxyURL string, wait time.Duration) *Site {
	t.Helper()
	env := map[string]string{"GOPROXY": proxyURL, "GOSUMDB": "off", "GOMODCACHE": t.TempDir()}
	trusted := []netip.Prefix{netip.MustParsePrefix("192.0.2.1/32")}
	s, err := New(Config{
		DefaultTag:     "v1.20.0",
		CacheDir:       t.TempDir(),
		Getenv:         func(k string) string { return env[k] },
		Wait:           wait,
		NewTagsPerHour: 20,
		Identify:       clients.Identify{Trusted: trusted}.Client,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// defFrom asks /def at tag from the client address addr.
func defFrom(h http.Handler, addr, tag string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/k8s/"+tag+"/def?sym=pkg/kubelet.(*Kubelet).syncLoopIteration", nil)
	r.Header.Set("X-Forwarded-For", addr)
	h.ServeHTTP(w, r)
	return w
}

// TestDefSpendsTheClientsTags: /def at a tag no one has read fetches it
// (from a module proxy the test runs), and that costs the asking client
// one of its new tags an hour, as a page does: the 21st is refused with
// 429 and why, while another client still gets its tags, and a room's
// driver switching to a new tag spends the driver's own.
func TestDefSpendsTheClientsTags(t *testing.T) {
	proxy := newFakeProxy(t)
	s := proxiedSite(t, proxy.URL, 10*time.Second)
	h := defServer(s)
	for i := range 20 {
		tag := fmt.Sprintf("v1.%d.0", 21+i)
		if w := defFrom(h, "203.0.113.7", tag); w.Code == http.StatusTooManyRequests || w.Code == http.StatusServiceUnavailable || w.Code == http.StatusAccepted {
			t.Fatalf("new tag %d (%s): %d %s", i+1, tag, w.Code, w.Body)
		}
	}
	w := defFrom(h, "203.0.113.7", "v1.41.0")
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" || !strings.Contains(w.Body.String(), "at most 20 such tags an hour for one address") {
		t.Fatalf("the 21st new tag by /def: %d Retry-After %q %s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if got := proxy.zips.Load(); got != 21 { // and the default tag
		t.Errorf("%d zips downloaded, want 21", got)
	}
	// A tag read already costs nothing.
	if w := defFrom(h, "203.0.113.7", "v1.25.0"); w.Code == http.StatusTooManyRequests {
		t.Errorf("a tag read already, over the budget: %d %s", w.Code, w.Body)
	}
	if w := defFrom(h, "203.0.113.8", "v1.41.0"); w.Code == http.StatusTooManyRequests || w.Code == http.StatusServiceUnavailable {
		t.Errorf("another client's new tag: %d %s", w.Code, w.Body)
	}
	// A room's driver at 203.0.113.7 switching the room to a new tag is
	// refused for their own budget; another driver is not.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.TagReady(ctx, "203.0.113.7", "v1.42.0"); err == nil || !strings.Contains(err.Error(), "20 such tags an hour") {
		t.Errorf("the driver past its tags: %v", err)
	}
	if err := s.TagReady(ctx, "203.0.113.9", "v1.42.0"); err != nil {
		t.Errorf("another driver: %v", err)
	}
}

// TestOneClientCannotHoldTheLoads: one client asking for many new tags at
// once holds at most perClientLoads of the MaxLoading places (the others
// are refused, and cost it nothing), so another client's new tag still
// starts; once its loads are done, the first may start more.
func TestOneClientCannotHoldTheLoads(t *testing.T) {
	proxy := newFakeProxy(t)
	release := make(chan struct{})
	target, _ := url.Parse(proxy.URL)
	rp := httputil.NewSingleHostReverseProxy(target)
	held := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, ".zip") && !strings.Contains(r.URL.Path, "v1.20.0") {
			<-release
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(held.Close)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()
	s := proxiedSite(t, held.URL, time.Millisecond)
	h := defServer(s)

	var wg sync.WaitGroup
	codes := make([]int, MaxLoading+6)
	for i := range codes {
		wg.Go(func() { codes[i] = defFrom(h, "203.0.113.7", fmt.Sprintf("v1.%d.0", 21+i)).Code })
	}
	wg.Wait()
	started, refused := 0, 0
	for _, c := range codes {
		switch c {
		case http.StatusServiceUnavailable: // "still being fetched"
			started++
		case http.StatusTooManyRequests:
			refused++
		}
	}
	if started != perClientLoads || refused != len(codes)-perClientLoads {
		t.Fatalf("one client asking for %d new tags at once: %d started, %d refused (codes %v); want %d started", len(codes), started, refused, codes, perClientLoads)
	}
	if w := defFrom(h, "203.0.113.7", "v1.80.0"); w.Code != http.StatusTooManyRequests || !strings.Contains(w.Body.String(), "at once for one address") {
		t.Errorf("one more from that client: %d %s", w.Code, w.Body)
	}
	if w := defFrom(h, "203.0.113.8", "v1.81.0"); w.Code != http.StatusServiceUnavailable || !strings.Contains(w.Body.String(), "still being fetched") {
		t.Errorf("another client's new tag while the first holds its places: %d %s", w.Code, w.Body)
	}
	unblock()
	for i := range perClientLoads + 1 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := s.TagReady(ctx, "203.0.113.7", fmt.Sprintf("v1.%d.0", 21+i))
		cancel()
		if err != nil {
			t.Fatalf("once its loads are done, the first client's tag %d: %v", i, err)
		}
	}
}
