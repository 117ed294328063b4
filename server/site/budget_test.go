package site

import (
	"archive/zip"
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
)

// fakeProxy is a Go module proxy the test starts: it serves a tiny
// k8s.io/kubernetes module zip at every tag, and counts the zips served.
type fakeProxy struct {
	*httptest.Server
	zips atomic.Int64
}

func newFakeProxy(t *testing.T) *fakeProxy {
	t.Helper()
	p := &fakeProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tag, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/k8s.io/kubernetes/@v/"), ".zip")
		if !ok || extractor.CheckTag(tag) != nil {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var b bytes.Buffer
		zw := zip.NewWriter(&b)
		for name, body := range map[string]string{
			"go.mod":                     "module k8s.io/kubernetes\n",
			"pkg/kubelet/pod_workers.go": "package kubelet\n",
			"pkg/kubelet/kubelet.go": `package kubelet

// syncLoopIteration reads from two channels.
func (kl *Kubelet) syncLoopIteration(configCh <-chan int, syncCh <-chan bool) bool {
	select {
	case u := <-configCh:
		_ = u
	case <-syncCh:
	}
	return true
}
`,
		} {
			f, _ := zw.Create("k8s.io/kubernetes@" + tag + "/" + name)
			f.Write([]byte(body))
		}
		zw.Close()
		p.zips.Add(1)
		w.Write(b.Bytes())
	}))
	t.Cleanup(p.Close)
	return p
}

// TestManyTags: one site is asked for 70 tags never fetched, from a few
// clients through a real module proxy the test runs. It keeps at most
// MaxTags in memory, forgetting the least used; a forgotten tag is still
// served, read again from the disk cache, not downloaded. A client past
// its tags an hour is answered 429 with when to retry, and still gets
// the tags already read.
func TestManyTags(t *testing.T) {
	const perHour = 20
	proxy := newFakeProxy(t)
	env := map[string]string{"GOPROXY": proxy.URL, "GOSUMDB": "off", "GOMODCACHE": t.TempDir()}
	s, err := New(Config{
		DefaultTag:     "v1.20.0",
		CacheDir:       t.TempDir(),
		Getenv:         func(k string) string { return env[k] },
		Wait:           10 * time.Second,
		NewTagsPerHour: perHour,
		Identify:       func(r *http.Request) string { return r.Header.Get("X-Test-Client") },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := chi.NewRouter()
	h.Method("GET", "/k8s/{tag}/", s.TagPage(PageIndex))
	get := func(client, tag string) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/k8s/"+tag+"/", nil)
		r.Header.Set("X-Test-Client", client)
		h.ServeHTTP(w, r)
		return w
	}

	const n = 70
	tags := make([]string, n)
	for i := range n {
		tags[i] = fmt.Sprintf("v1.%d.0", 21+i)
		client := fmt.Sprintf("client-%d", i/perHour)
		if w := get(client, tags[i]); w.Code != http.StatusOK {
			t.Fatalf("tag %d (%s) for %s: %d\n%s", i+1, tags[i], client, w.Code, w.Body)
		}
	}
	s.mu.Lock()
	held := len(s.tags)
	s.mu.Unlock()
	if held > MaxTags {
		t.Errorf("%d tags held in memory, want at most %d", held, MaxTags)
	}
	downloads := proxy.zips.Load()
	if downloads != n+1 { // and the default tag
		t.Errorf("%d zips downloaded for %d tags", downloads, n+1)
	}
	// The first tags were forgotten in memory: still served, from disk.
	for _, tag := range []string{tags[0], tags[1], "v1.20.0"} {
		if w := get("someone-else", tag); w.Code != http.StatusOK {
			t.Errorf("a cached tag %s after %d others: %d\n%.500s", tag, n, w.Code, w.Body)
		}
	}
	if got := proxy.zips.Load(); got != downloads {
		t.Errorf("%d more zips downloaded to serve cached tags", got-downloads)
	}

	// client-0 had its 20: a 21st new tag waits, but what is read is served.
	w := get("client-0", "v1.99.0")
	retry, _ := strconv.Atoi(w.Header().Get("Retry-After"))
	if w.Code != http.StatusTooManyRequests || retry < 3000 || retry > 3600 || !strings.Contains(w.Body.String(), "Too many new tags from your address") {
		t.Errorf("client-0's 21st new tag: %d Retry-After %q\n%.500s", w.Code, w.Header().Get("Retry-After"), w.Body)
	}
	if w := get("client-0", tags[5]); w.Code != http.StatusOK {
		t.Errorf("client-0 over its budget, a cached tag: %d", w.Code)
	}
	if w := get("client-9", "v1.99.0"); w.Code != http.StatusOK {
		t.Errorf("another client's new tag: %d", w.Code)
	}
}

func TestBudget(t *testing.T) {
	b := newBudget(2, time.Hour)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, tc := range []struct {
		client string
		at     time.Duration
		ok     bool
		retry  time.Duration
	}{
		{"a", 0, true, 0},
		{"a", time.Minute, true, 0},
		{"a", 2 * time.Minute, false, 58 * time.Minute},
		{"b", 2 * time.Minute, true, 0},
		{"a", 60 * time.Minute, true, 0}, // the first is an hour old
		{"a", 61 * time.Minute, true, 0},
		{"a", 62 * time.Minute, false, 58 * time.Minute},
	} {
		retry, ok := b.take(tc.client, t0.Add(tc.at))
		if ok != tc.ok || retry != tc.retry {
			t.Errorf("%d: take(%s, +%v) = %v, %v; want %v, %v", i, tc.client, tc.at, retry, ok, tc.retry, tc.ok)
		}
	}
}
