package site

import (
	"context"
	"encoding/json"
	"net/http"
	"regexp"
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
	rt.Method("GET", "/k8s/{tag}/volume-manager", s.VolumePage())
	rt.Method("GET", "/k8s/{tag}/volume-manager/def", s.VolumeDef())
	rt.Method("GET", "/k8s/volume-manager/compare", s.VolumeCompareForm())
	rt.Method("GET", "/k8s/volume-manager/compare/{range}", s.VolumeCompare())
	rt.Method("GET", "/k8s/volume-manager/history/{key}", s.VolumeHistory())
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

// TestVolumePage: the page has the entry's source, a section#part-{key}
// per phase with its direction and what it starts, and the sets'
// writers; ids of lines from different files never clash.
func TestVolumePage(t *testing.T) {
	extractortest.NeedNetwork(t)
	fsys := extractortest.FS(t, "v1.27.0")
	_, h := volumeSite(t, func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
		return volume.Derive(fsys, o.Tag)
	}, 30*time.Second, 0)
	w := get(h, "/k8s/v1.27.0/volume-manager")
	body := w.Body.String()
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Type"), "text/html") {
		t.Fatalf("GET = %d: %s", w.Code, body)
	}
	for _, s := range []string{
		`<code>(*reconciler).reconcileNew</code>`, `id="entry-L33"`, "NewVolumeManagerReconstruction</code>, on by default at v1.27.0",
		`<section class="vm-unit part" id="part-unmountVolumes"`, `<span class="direction direction-remove-extra">remove-extra</span>`,
		`<section class="vm-unit part" id="part-mountOrAttachVolumes"`, `<span class="direction direction-add-missing">add-missing</span>`,
		`id="part-cleanOrphanVolumes"`, `id="part-unmountVolumes-L160"`, "It runs only once <code>readyToUnmount()</code> holds",
		"<code>operationExecutor.MountVolume</code>", "<code>GenerateMountVolumeFunc</code>", "ActualStateOfWorld.MarkVolumeAsMounted",
		`<section class="sets" id="sets"`, "pkg/volume/util/operationexecutor.(*operationGenerator).GenerateMountVolumeFunc",
		"through operationexecutor.ActualStateOfWorldMounterUpdater", `href="/static/volume.css?v=`,
		"started on a goroutine of its own by", "<code>go vm.reconciler.Run(stopCh)</code>",
	} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %s", s)
		}
	}
	// Each phase's note is in its section's margin, as it reads at the tag;
	// its calls are controls that open their definitions.
	for key, says := range map[string]string{
		"entry":                   "At this tag the pass is <a href=",
		"part-unmountVolumes":     "<strong>Direction: remove-extra.</strong>",
		"part-cleanOrphanVolumes": "cleanupMounts",
	} {
		sec := sectionOf(body, key)
		if !strings.Contains(sec, `<div class="prose note">`) || !strings.Contains(sec, says) {
			t.Errorf("section %s has no note saying %q:\n%.600s", key, says, sec)
		}
	}
	for _, s := range []string{"reconcileNew</code></a>, the new body", `data-def-base="/k8s/v1.27.0/volume-manager/def"`,
		`data-def="pkg/kubelet/volumemanager/reconciler.(*reconciler).unmountVolumes"`,
		`data-def="pkg/kubelet/volumemanager/cache.ActualStateOfWorld.GetAllMountedVolumes"`,
		`href="/k8s/volume-manager/compare/v1.26.0...v1.27.0#part-mountOrAttachVolumes"`, `href="/k8s/volume-manager/history/unmountVolumes"`,
		`<button type="button" class="def" data-def="pkg/volume/util/operationexecutor.(*operationGenerator).GenerateMountVolumeFunc" aria-expanded="false" title="Open (*operationGenerator).GenerateMountVolumeFunc here"><code>(*operationGenerator).GenerateMountVolumeFunc</code></button> <span class="pkg">operationexecutor</span>`} {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %s", s)
		}
	}
	for _, s := range []string{"runs the old <code>reconcile</code> above", ":::"} { // v1.26's block, and no fence
		if strings.Contains(body, s) {
			t.Errorf("page at v1.27.0 shows %q, a note's text for other tags", s)
		}
	}
	ids := map[string]bool{}
	for _, m := range idRE.FindAllStringSubmatch(body, -1) {
		if ids[m[1]] {
			t.Errorf("id %q twice", m[1])
		}
		ids[m[1]] = true
	}
}

var idRE = regexp.MustCompile(` id="([^"]+)"`)

// sectionOf is the HTML of the section with id, up to the next section.
func sectionOf(body, id string) string {
	i := strings.Index(body, ` id="`+id+`"`)
	if i < 0 {
		return ""
	}
	rest := body[i:]
	if j := strings.Index(rest[1:], "<section "); j >= 0 {
		return rest[:j+1]
	}
	return rest
}

// TestVolumePageQuiz: in quiz mode the page and the JSON keep the source
// and leave out the derived answers: directions, starts, writers.
func TestVolumePageQuiz(t *testing.T) {
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}}
	r := &volume.Reading{Schema: volume.Schema, Tag: "v1.31.0",
		Entry: volume.Entry{Func: "reconcile", Text: "func (rc *reconciler) reconcile() {\n\trc.unmountVolumes()\n}", Line: 30, End: 32},
		Parts: []volume.Part{{Key: "unmountVolumes", Direction: volume.RemoveExtra, Text: "func (rc *reconciler) unmountVolumes() {}", Line: 40, End: 40,
			Starts: []volume.Start{{Call: "UnmountVolume", Generators: []string{"GenerateUnmountVolumeFunc"}}}}},
		Sets: []volume.Set{{Name: "ActualStateOfWorld", Writers: []volume.Caller{{Func: "pkg/x.(*og).GenerateUnmountVolumeFunc", Calls: []volume.Call{{Method: "MarkVolumeAsUnmounted"}}}}}},
	}
	s, err := New(Config{DefaultTag: fixture.Tag, CacheDir: t.TempDir(), Getenv: func(string) string { return "" }, Load: fl.Load, Quiz: func(*http.Request) bool { return true },
		LoadVolume: func(context.Context, extractor.Options) (*volume.Reading, error) { return r, nil }, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rt := chi.NewRouter()
	rt.Method("GET", "/k8s/{tag}/volume-manager", s.VolumePage())
	rt.Method("GET", "/k8s/{tag}/volume-manager.json", s.VolumeJSON())
	page := get(rt, "/k8s/v1.31.0/volume-manager").Body.String()
	js := get(rt, "/k8s/v1.31.0/volume-manager.json").Body.String()
	if !strings.Contains(page, `id="part-unmountVolumes"`) || !strings.Contains(page, "Quiz mode: who writes") || !strings.Contains(js, `"key": "unmountVolumes"`) {
		t.Errorf("quiz page or JSON lost the phases:\n%s\n%s", page, js)
	}
	if !strings.Contains(page, "The class hides the site's notes: what unmountVolumes does is yours to write.") {
		t.Errorf("the quiz page does not say the notes are hidden:\n%s", page)
	}
	for _, answer := range []string{"remove-extra", "GenerateUnmountVolumeFunc", "MarkVolumeAsUnmounted", "Direction:", `class="prose note"`} {
		if strings.Contains(page, answer) || strings.Contains(js, answer) {
			t.Errorf("quiz mode serves the answer %q", answer)
		}
	}
}
