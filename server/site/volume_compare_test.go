package site

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// realVolumes derives the second reading from each tag's real zip.
func realVolumes(t *testing.T) func(context.Context, extractor.Options) (*volume.Reading, error) {
	t.Helper()
	extractortest.NeedNetwork(t)
	return func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
		return volume.Derive(extractortest.FS(t, o.Tag), o.Tag)
	}
}

// TestVolumeCompareAcrossTheMove: v1.26.0 → v1.27.0 follows the entry from
// reconcile in reconciler.go to reconcileNew in reconciler_new.go, and says
// so; the phases are laid out both ways with their notes.
func TestVolumeCompareAcrossTheMove(t *testing.T) {
	_, h := volumeSite(t, realVolumes(t), 60*time.Second, 0)
	w := get(h, "/k8s/volume-manager/compare/v1.26.0...v1.27.0")
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("GET = %d: %.2000s", w.Code, body)
	}
	entry := sectionOf(body, "part-entry")
	for _, s := range []string{
		"moved from pkg/kubelet/volumemanager/reconciler/reconciler.go to pkg/kubelet/volumemanager/reconciler/reconciler_new.go",
		"renamed from reconcile to reconcileNew", `<table class="sbs">`, `<table class="uni">`, "<code>reconcileNew</code> pkg/kubelet/volumemanager/reconciler/reconciler_new.go:33",
	} {
		if !strings.Contains(entry, s) {
			t.Errorf("the entry's section lacks %q:\n%.1500s", s, entry)
		}
	}
	if sec := sectionOf(body, "part-processReconstructedVolumes"); !strings.Contains(sec, `<span class="st">removed</span>`) {
		t.Errorf("processReconstructedVolumes is not removed at v1.27.0:\n%.800s", sec)
	}
	if sec := sectionOf(body, "part-cleanOrphanVolumes"); !strings.Contains(sec, `<span class="st">added</span>`) || !strings.Contains(sec, "Direction: remove-extra") {
		t.Errorf("cleanOrphanVolumes is not added with its note:\n%.800s", sec)
	}
	w = get(h, "/k8s/volume-manager/compare/v1.23.0...v1.24.0")
	if sec := sectionOf(w.Body.String(), "part-mountOrAttachVolumes"); !strings.Contains(sec, "renamed from (*reconciler).mountAttachVolumes to (*reconciler).mountOrAttachVolumes (matched by the note&#39;s older name)") {
		t.Errorf("v1.24's rename is not followed:\n%.1500s", sec)
	}
	if w := get(h, "/k8s/volume-manager/compare?from=v1.26.0&to=1.27.0"); w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/k8s/volume-manager/compare/v1.26.0...v1.27.0" {
		t.Errorf("the form: %d to %q", w.Code, w.Header().Get("Location"))
	}
	if w := get(h, "/k8s/volume-manager/compare/v1.26.0..v1.27.0"); w.Code != http.StatusNotFound {
		t.Errorf("a malformed range: %d", w.Code)
	}
}

// TestVolumeHistoryFollowsTheEntry: the entry's history names at each
// minor the function that runs and its file; an older name finds its
// phase; the definitions the page opens are served with their
// implementations.
func TestVolumeHistoryFollowsTheEntry(t *testing.T) {
	extractortest.NeedNetwork(t)
	extractortest.Prefetch(diff.MinorTags("v1.37.2")...)
	_, h := volumeSite(t, realVolumes(t), 120*time.Second, 0)
	w := get(h, "/k8s/volume-manager/history/entry")
	body := w.Body.String()
	if w.Code != http.StatusOK {
		t.Fatalf("GET = %d: %.2000s", w.Code, body)
	}
	for _, s := range []string{
		"v1.27.0: moved from pkg/kubelet/volumemanager/reconciler/reconciler.go to pkg/kubelet/volumemanager/reconciler/reconciler_new.go; renamed from reconcile to reconcileNew",
		"v1.30.0: moved from pkg/kubelet/volumemanager/reconciler/reconciler_new.go to pkg/kubelet/volumemanager/reconciler/reconciler.go; Run no longer chooses it by the feature gate (NewVolumeManagerReconstruction)",
		"v1.31.0: renamed from reconcileNew to reconcile",
		`href="/k8s/volume-manager/compare/v1.30.0...v1.31.0#part-entry"`,
	} {
		if !strings.Contains(body, s) {
			t.Errorf("the entry's history lacks %q", s)
		}
	}
	w = get(h, "/k8s/volume-manager/history/mountAttachVolumes")
	if body := w.Body.String(); w.Code != http.StatusOK || !strings.Contains(body, "<code>(*reconciler).mountAttachVolumes</code>") || !strings.Contains(body, "v1.24.0: renamed from (*reconciler).mountAttachVolumes to (*reconciler).mountOrAttachVolumes") {
		t.Errorf("the old name's history: %d %.1500s", w.Code, body)
	}
	if w := get(h, "/k8s/volume-manager/history/noSuchPhase"); w.Code != http.StatusNotFound {
		t.Errorf("an unknown phase: %d", w.Code)
	}

	w = get(h, "/k8s/v1.37.0/volume-manager/def?sym="+"pkg/volume/util/operationexecutor.ActualStateOfWorldAttacherUpdater.MarkVolumeAsDetached")
	var d defView
	if err := json.Unmarshal(w.Body.Bytes(), &d); err != nil || w.Code != http.StatusOK {
		t.Fatalf("def = %d %s", w.Code, w.Body)
	}
	if d.Kind != "interface method" || len(d.Impls) != 1 || d.Impls[0].Sym != "pkg/kubelet/volumemanager/cache.(*actualStateOfWorld).MarkVolumeAsDetached" || !strings.Contains(d.Impls[0].HTML, `class="chroma code peek-code"`) {
		t.Errorf("def %+v", d)
	}
	if w := get(h, "/k8s/v1.37.0/volume-manager/def?sym=pkg/nope.X"); w.Code != http.StatusNotFound {
		t.Errorf("an unknown symbol: %d", w.Code)
	}
}

// TestTwoSetsNoteLinksTheSecondReading: the first reading's two-sets note
// links its volume manager sighting to the second reading at the same tag.
func TestTwoSetsNoteLinksTheSecondReading(t *testing.T) {
	extractortest.NeedNetwork(t)
	r := extractortest.Reading(t, "v1.31.0", content.Symbols())
	v, err := newReadingView(r)
	if err != nil {
		t.Fatal(err)
	}
	if h := string(v.TwoSetsNote.HTML); !strings.Contains(h, `<a href="/k8s/v1.31.0/volume-manager">The second reading</a>`) {
		t.Errorf("the two-sets note does not link the second reading:\n%s", h)
	}
	if _, ok := readingURL("v1.31.0", "elsewhere"); ok {
		t.Error("a reading the site does not have resolves")
	}
}

// TestVolumeCompareQuiz: in quiz mode the compare keeps the source and
// the moves, and leaves out the notes and a phase's change of direction.
func TestVolumeCompareQuiz(t *testing.T) {
	at := func(tag, file, dir string) *volume.Reading {
		return &volume.Reading{Schema: volume.Schema, Tag: tag,
			Entry: volume.Entry{Func: "reconcile", File: file, Line: 1, End: 3, Text: "func (rc *reconciler) reconcile() {\n\trc.unmountVolumes()\n}"},
			Parts: []volume.Part{{Key: "unmountVolumes", Func: "(*reconciler).unmountVolumes", File: file, Line: 5, End: 5, Direction: dir, Text: "func (rc *reconciler) unmountVolumes() {}"}}}
	}
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}}
	s, err := New(Config{DefaultTag: fixture.Tag, CacheDir: t.TempDir(), Getenv: func(string) string { return "" }, Load: fl.Load, Quiz: func(*http.Request) bool { return true },
		LoadVolume: func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
			if o.Tag == "v1.30.0" {
				return at(o.Tag, "a.go", volume.RemoveExtra), nil
			}
			return at(o.Tag, "b.go", volume.AddMissing), nil
		}, Wait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	rt := chi.NewRouter()
	rt.Method("GET", "/k8s/volume-manager/compare/{range}", s.VolumeCompare())
	w := get(rt, "/k8s/volume-manager/compare/v1.30.0...v1.31.0")
	page := w.Body.String()
	if !strings.Contains(page, "moved from a.go to b.go") {
		t.Errorf("the quiz compare lost the move:\n%s", page)
	}
	for _, answer := range []string{"remove-extra", "add-missing", "direction", "Direction:", `class="prose"`} {
		if strings.Contains(page, answer) {
			t.Errorf("the quiz compare shows %q", answer)
		}
	}
}
