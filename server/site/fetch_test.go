package site

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// newTestSite serves fl's readings (the fixture's at its tag when it has
// none) with the default tag loaded, a request waiting wait for a Load;
// h routes the compare and history pages as the server does.
func newTestSite(t testing.TB, fl *fixture.Loader, wait time.Duration) (*Site, http.Handler) {
	t.Helper()
	if fl.Readings == nil {
		fl.Readings = map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}
	}
	s, err := New(Config{DefaultTag: fixture.Tag, CacheDir: t.TempDir(), Getenv: func(string) string { return "" }, Load: fl.Load, Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	waitLoaded(t, s, fixture.Tag)
	rt := chi.NewRouter()
	rt.Method("GET", "/k8s/compare/{range}", s.Compare())
	rt.Method("GET", "/k8s/history/{key}", s.History())
	return s, rt
}

// waitLoaded waits until tag's Load has finished, successfully or not.
func waitLoaded(t testing.TB, s *Site, tag string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.TagReady(ctx, "test", tag); err != nil && ctx.Err() != nil {
		t.Fatalf("tag %s still loading after 30s", tag)
	}
}

func get(h http.Handler, path string) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
	return w
}

// TestCompareFetchesBothTagsAtOnce: a compare of two tags neither cached
// answers the page that reloads, and both tags' fetches are under way, not
// only the first's (which the 202 returns on).
func TestCompareFetchesBothTagsAtOnce(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	fl := &fixture.Loader{Hold: map[string]chan struct{}{"v1.35.0": release, "v1.36.0": release}}
	s, h := newTestSite(t, fl, time.Millisecond)
	w := get(h, "/k8s/compare/v1.35.0...v1.36.0")
	if w.Code != 202 || !strings.Contains(w.Body.String(), `<meta http-equiv="refresh" content="2">`) {
		t.Fatalf("%d\n%s", w.Code, w.Body)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, tag := range []string{"v1.35.0", "v1.36.0"} {
		st, ok := s.tags[tag]
		if !ok {
			t.Errorf("%s is not being fetched after the first request", tag)
			continue
		}
		select {
		case <-st.done:
			t.Errorf("%s done while held", tag)
		default:
		}
	}
}

// TestHistoryWhileFetching: the history page of a case needs every minor
// release; until they are all read it answers the page that reloads, first
// naming the newest minor while that one is fetched, then counting how many
// are ready, and once they are, the history.
func TestHistoryWhileFetching(t *testing.T) {
	tags := diff.MinorTags(fixture.Tag) // v1.20.0 … v1.37.0
	newest, middle := tags[len(tags)-1], "v1.25.0"
	releaseNewest, releaseMiddle := make(chan struct{}), make(chan struct{})
	fl := &fixture.Loader{
		Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)},
		Hold:     map[string]chan struct{}{newest: releaseNewest, middle: releaseMiddle},
	}
	for _, tag := range tags {
		r := *fixture.Reading(t)
		r.Tag = tag
		fl.Readings[tag] = &r
	}
	s, h := newTestSite(t, fl, 10*time.Millisecond)
	reloads := func(w *httptest.ResponseRecorder, says string) {
		t.Helper()
		body := w.Body.String()
		if w.Code != 202 || !strings.Contains(body, `<meta http-equiv="refresh" content="2">`) || !strings.Contains(body, says) {
			t.Fatalf("%d, want 202 that reloads, saying %q\n%s", w.Code, says, body)
		}
	}

	w := get(h, "/k8s/history/config")
	reloads(w, fmt.Sprintf("Fetching k8s.io/kubernetes@%s and %d other minor releases (", newest, len(tags)-1))
	// The newest is fetched first; the history holds no more of the load
	// places than one client may.
	s.mu.Lock()
	if _, ok := s.tags[newest]; !ok {
		t.Errorf("%s is not being fetched", newest)
	}
	if n := s.loading(); n > perClientLoads {
		t.Errorf("%d tags being fetched for one history page, want at most %d", n, perClientLoads)
	}
	s.mu.Unlock()

	close(releaseNewest)
	for _, tag := range tags {
		if tag != middle {
			waitLoaded(t, s, tag)
		}
	}
	reloads(get(h, "/k8s/history/config"), fmt.Sprintf("%d of %d minor releases (v1.20.0 to %s) are ready", len(tags)-1, len(tags), newest))

	close(releaseMiddle)
	waitLoaded(t, s, middle)
	if w := get(h, "/k8s/history/config"); w.Code != 200 || !strings.Contains(w.Body.String(), "At v1.20.0 the case is there") {
		t.Errorf("once all are read: %d\n%s", w.Code, w.Body)
	}
}
