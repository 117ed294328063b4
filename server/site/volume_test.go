package site

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// volumeSite serves the second reading through load, a request waiting
// wait; h routes it as the server does.
func volumeSite(t *testing.T, load func(context.Context, extractor.Options) (*volume.Reading, error), wait time.Duration, perHour int) (*Site, http.Handler) {
	t.Helper()
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}}
	s, err := New(Config{DefaultTag: fixture.Tag, CacheDir: t.TempDir(), Getenv: func(string) string { return "" },
		Load: fl.Load, LoadVolume: load, Wait: wait, NewTagsPerHour: perHour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rt := chi.NewRouter()
	rt.Method("GET", "/k8s/{tag}/volume-manager.json", s.VolumeJSON())
	return s, rt
}

// TestVolumeJSONServesTheDerivation: the JSON is the derivation at the
// tag, with the contract's field names.
func TestVolumeJSONServesTheDerivation(t *testing.T) {
	extractortest.NeedNetwork(t)
	fsys := extractortest.FS(t, "v1.27.0")
	_, h := volumeSite(t, func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
		return volume.Derive(fsys, o.Tag)
	}, 30*time.Second, 0)
	w := get(h, "/k8s/v1.27.0/volume-manager.json")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("GET = %d %s: %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
	var r volume.Reading
	if err := json.Unmarshal(w.Body.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Entry.Func != "reconcileNew" || r.Entry.Gate != "NewVolumeManagerReconstruction" || r.Entry.Default == nil || !*r.Entry.Default || len(r.Parts) == 0 || len(r.Sets) != 2 {
		t.Errorf("entry %+v, %d parts, %d sets", r.Entry, len(r.Parts), len(r.Sets))
	}
	for _, s := range []string{`"entry": {`, `"parts": [`, `"direction": "add-missing"`, `"sets": [`, `"writers": [`, `"log_sites": [`} {
		if !strings.Contains(w.Body.String(), s) {
			t.Errorf("JSON lacks %s", s)
		}
	}
}

// TestVolumeJSONWhileLoading: a tag still loading answers the page that
// reloads, every request shares one load, and the JSON follows it.
func TestVolumeJSONWhileLoading(t *testing.T) {
	release := make(chan struct{})
	var loads atomic.Int64
	s, h := volumeSite(t, func(ctx context.Context, o extractor.Options) (*volume.Reading, error) {
		loads.Add(1)
		<-release
		return &volume.Reading{Schema: volume.Schema, Tag: o.Tag, Entry: volume.Entry{Func: "reconcile"}}, nil
	}, 10*time.Millisecond, 0)
	for range 3 {
		if w := get(h, "/k8s/v1.31.0/volume-manager.json"); w.Code != http.StatusAccepted || w.Header().Get("Retry-After") == "" {
			t.Fatalf("while loading: %d, Retry-After %q", w.Code, w.Header().Get("Retry-After"))
		}
	}
	close(release)
	<-s.volume("v1.31.0").done
	if w := get(h, "/k8s/v1.31.0/volume-manager.json"); w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"func": "reconcile"`) {
		t.Errorf("once loaded: %d %s", w.Code, w.Body)
	}
	if n := loads.Load(); n != 1 {
		t.Errorf("%d loads, want one shared by every request", n)
	}
}

// TestVolumeJSONErrors: a malformed tag, a tag the proxy does not serve,
// and a client past its budget of new tags each get their status page.
func TestVolumeJSONErrors(t *testing.T) {
	_, h := volumeSite(t, func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
		if o.Tag == "v1.99.0" {
			return nil, extractor.ErrUnknownTag
		}
		return &volume.Reading{Tag: o.Tag}, nil
	}, 30*time.Second, 1)
	if w := get(h, "/k8s/latest/volume-manager.json"); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "is not a Kubernetes tag") {
		t.Errorf("malformed tag: %d", w.Code)
	}
	if w := get(h, "/k8s/v1.99.0/volume-manager.json"); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "No tag v1.99.0") {
		t.Errorf("unknown tag: %d %s", w.Code, w.Body)
	}
	if w := get(h, "/k8s/v1.30.0/volume-manager.json"); w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Errorf("a second new tag within the hour (budget 1): %d", w.Code)
	}
}
