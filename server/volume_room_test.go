package server

// The second reading in rooms and classes: a room made to read the volume
// manager shows it at /rooms/{id}, its worksheet is its own (checked
// against the derived model, handed in as worksheet.md), a class can
// assign it and counts its items; and in quiz mode no route gives its
// answers away (quiz_leak_test.go's approach, on the new routes).

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// serveVolume serves the real first reading and the second derived from
// the same module, in quiz mode when quiz is set.
func serveVolume(t *testing.T, quiz bool) (*httptest.Server, *volume.Reading) {
	t.Helper()
	r := realReading(t)
	fsys := extractortest.FS(t, r.Tag)
	vr, err := volume.Derive(fsys, r.Tag)
	if err != nil {
		t.Fatal(err)
	}
	s, err := openTuned(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Getenv: func(string) string { return "" },
		Load: (&fixture.Loader{Readings: map[string]*extractor.Reading{r.Tag: r}}).Load,
		LoadVolume: func(_ context.Context, o extractor.Options) (*volume.Reading, error) {
			return volume.Derive(fsys, o.Tag)
		},
		DemoPeriod: -1, Quiz: quiz}, func(p *Plan) {
		p.Notes.ChecksPerMinute, p.Notes.WriteRate, p.Notes.WriteBurst = 100000, 1000, 1000
	})
	if err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, s, r.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return ts, vr
}

// createVolumeRoom makes a room that reads the volume manager at tag.
func createVolumeRoom(t *testing.T, ts *httptest.Server, tag string) string {
	t.Helper()
	id, _ := createVolumeRoomKey(t, ts, tag)
	return id
}

// createVolumeRoomKey is createVolumeRoom, with the driver link it
// redirects to.
func createVolumeRoomKey(t *testing.T, ts *httptest.Server, tag string) (id, driverLink string) {
	t.Helper()
	resp := postForm(t, ts, "/rooms", url.Values{"tag": {tag}, "reading": {"volume-manager"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /rooms reading=volume-manager: %d", resp.StatusCode)
	}
	loc := resp.Header.Get("Location")
	u, _ := url.Parse(loc)
	return strings.TrimPrefix(u.Path, "/rooms/"), loc
}

// volumeAnswers are what the second reading's worksheet asks for, as a
// page, the JSON or a check could spell them: each writer of each set,
// each phase's direction, the generators each phase starts.
func volumeAnswers(r *volume.Reading) []string {
	var out []string
	phase := map[string]bool{} // where a phase is: the page shows it as the phase's place
	for _, p := range r.Parts {
		phase[fmt.Sprintf("%s:%d", p.File, p.Line)] = true
	}
	for _, s := range r.Sets {
		for _, w := range s.Writers {
			out = append(out, w.Func, path.Base(w.Func))
			if at := fmt.Sprintf("%s:%d", w.File, w.Line); !phase[at] {
				out = append(out, at)
			}
		}
	}
	for _, p := range r.Parts {
		if p.Direction != "" {
			out = append(out, "direction-"+p.Direction, `"direction":"`+p.Direction+`"`)
		}
		if len(p.Tests) > 0 { // which sets its loop tests: the direction, derived
			out = append(out, "; tests <code>", `"tests":[`)
		}
		for _, s := range p.Starts {
			out = append(out, s.Generators...)
		}
	}
	return out
}

func TestVolumeRoom(t *testing.T) {
	t.Parallel()
	ts, vr := serveVolume(t, false)
	if resp := postForm(t, ts, "/rooms", url.Values{"tag": {vr.Tag}, "reading": {"plugin-manager"}}); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("POST /rooms reading=plugin-manager: %d, want 400", resp.StatusCode)
	}
	room := createVolumeRoom(t, ts, vr.Tag)
	_, page := getUntil200(t, ts.URL+"/rooms/"+room)
	for _, want := range []string{`id="room"`, `data-page="volume-manager"`, `<aside id="live" data-feed="room-` + room, `id="worksheet"`,
		`data-vm-note="vm.desired"`, `data-vm-note="vm.controllers"`, `/rooms/` + room + `/worksheet.md`, `volume-manager/answer-key.md`} {
		if !strings.Contains(page, want) {
			t.Errorf("the volume room's page has no %s", want)
		}
	}
	for _, p := range vr.Parts {
		if !strings.Contains(page, `data-vm-note="vmphase.`+p.Key+`"`) || !strings.Contains(page, `id="part-`+p.Key+`"`) {
			t.Errorf("the volume room's page has no section or question for phase %s", p.Key)
		}
	}
	// A room of the first reading is as it was.
	resp := postForm(t, ts, "/rooms", url.Values{"tag": {vr.Tag}})
	u, _ := url.Parse(resp.Header.Get("Location"))
	first := strings.TrimPrefix(u.Path, "/rooms/")
	if _, p := getUntil200(t, ts.URL+"/rooms/"+first); !strings.Contains(p, `data-page="index"`) || strings.Contains(p, `id="worksheet"`) {
		t.Errorf("a room made without reading= is not the first reading's")
	}

	if code, _ := (roomNotes{}).put(t, ts.URL, first, annotations.VolumeDesired, "the populator"); code != http.StatusBadRequest {
		t.Errorf("an answer of the volume worksheet in a room of the first reading: %d, want 400", code)
	}

	// The worksheet: answers checked against the derived model.
	var add, remove volume.Part
	for _, p := range vr.Parts {
		if p.Direction == volume.AddMissing && len(p.Starts) > 0 && add.Key == "" {
			add = p
		}
		if p.Direction == volume.RemoveExtra && remove.Key == "" {
			remove = p
		}
	}
	revs := roomNotes{}
	checks := func(id, text string) string {
		code, body := revs.put(t, ts.URL, room, id, text)
		if code != 200 {
			t.Fatalf("PUT %s: %d %s", id, code, body)
		}
		return body
	}
	if b := checks(annotations.VolumePhaseID(add.Key), "add-missing: it starts "+add.Starts[0].Call); !strings.Contains(b, "The direction is right") || strings.Contains(b, `"warn"`) {
		t.Errorf("a right answer for %s: %s", add.Key, b)
	}
	if b := checks(annotations.VolumePhaseID(remove.Key), "add-missing"); !strings.Contains(b, "not the one the source gives") {
		t.Errorf("a wrong direction for %s is not warned: %s", remove.Key, b)
	}
	if b := checks(annotations.VolumeActual, "the operation generator (operationexecutor)"); !strings.Contains(b, `"ok"`) {
		t.Errorf("the actual state's writers named by their package: %s", b)
	}
	if b := checks(annotations.VolumeDesired, "the kubelet"); !strings.Contains(b, "names none of the functions") {
		t.Errorf("no writer named is not warned: %s", b)
	}
	checks(annotations.VolumeControllers, "the ReplicaSet controller")
	if code, _ := revs.put(t, ts.URL, room, "vmphase.no/such", "x"); code == 200 {
		t.Errorf("a note id that is no item was kept")
	}
	_, md := getUntil200(t, ts.URL+"/rooms/"+room+"/worksheet.md")
	for _, want := range []string{"the volume manager's reconciler", fmt.Sprintf("## The %d phases", len(vr.Parts)), "### " + add.Key,
		"add-missing: it starts " + add.Starts[0].Call, "### ActualStateOfWorld", "the ReplicaSet controller", "- check: The direction is not the one"} {
		if !strings.Contains(md, want) {
			t.Errorf("the hand-in has no %q:\n%s", want, md)
		}
	}
	if _, j := getUntil200(t, ts.URL+"/rooms/"+room+"/worksheet.json"); !strings.Contains(j, "the volume manager's reconciler") {
		t.Errorf("worksheet.json's heading is not the second reading's: %s", j)
	}
	code, key := getUntil200(t, ts.URL+"/k8s/"+vr.Tag+"/volume-manager/answer-key.md")
	if code != 200 || !strings.Contains(key, "direction") || len(leaks(volumeAnswers(vr), key, "")) == 0 {
		t.Errorf("the answer key: %d, with no derived answer:\n%.400s", code, key)
	}
}

// A class assigns the reading: its rooms read it, its grid's columns are
// that worksheet's items and count its answers.
func TestVolumeClass(t *testing.T) {
	t.Parallel()
	ts, vr := serveVolume(t, false)
	class, key := createClass(t, ts, url.Values{"name": {"Volumes"}, "reading": {"volume-manager"}, "tag": {vr.Tag}})
	room, _, code := startClassRoom(t, ts, class)
	if code != http.StatusSeeOther {
		t.Fatalf("start a room of the class: %d", code)
	}
	if _, p := getUntil200(t, ts.URL+"/rooms/"+room); !strings.Contains(p, `data-page="volume-manager"`) {
		t.Fatalf("the class's room does not read the volume manager")
	}
	revs := roomNotes{}
	if code, body := revs.put(t, ts.URL, room, annotations.VolumeControllers, "the Deployment controller"); code != 200 {
		t.Fatalf("PUT: %d %s", code, body)
	}
	want := len(annotations.VolumeExpected(vr))
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, body := instructorGet(t, ts, "/classes/"+class+"/progress.json", key)
		if strings.Contains(string(body), `"vm.controllers":"confirmed"`) && strings.Contains(string(body), fmt.Sprintf(`"expected":%d`, want)) &&
			strings.Contains(string(body), `"id":"vmphase.`+vr.Parts[0].Key+`"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("progress.json never counted the volume worksheet (%d items):\n%.600s", want, body)
		}
		time.Sleep(100 * time.Millisecond) // sleep: the grid is read again until the note's write is seen
	}
	// The instructor's other views read the same worksheet: the column of
	// an item, a room's results, and the hand-ins.
	code, body := instructorGet(t, ts, "/classes/"+class+"/items/"+annotations.VolumeControllers+".json", key)
	if code != 200 || !strings.Contains(string(body), `"state":"confirmed"`) || !strings.Contains(string(body), "the Deployment controller") {
		t.Errorf("items/vm.controllers.json: %d %s", code, body)
	}
	if code, body := instructorGet(t, ts, "/classes/"+class+"/rooms/"+room+"/results.json", key); code != 200 || !strings.Contains(string(body), `"name":"P4 controllers","score":1`) {
		t.Errorf("results.json: %d %.300s", code, body)
	}
	found := false
	for _, md := range zipFiles(t, ts.URL, class, key) {
		found = found || strings.Contains(md, "the volume manager's reconciler") && strings.Contains(md, "the Deployment controller")
	}
	if !found {
		t.Errorf("handins.zip holds no worksheet of the volume manager with the room's answer")
	}
}

// In quiz mode, and in a hide-notes class's room, the second reading's
// routes give no answer away; without it, the same routes do (so that the
// test tests).
func TestVolumeQuizGivesNothingAway(t *testing.T) {
	t.Parallel()
	plain, vr := serveVolume(t, false)
	quiz, _ := serveVolume(t, true)
	answers := volumeAnswers(vr)
	if len(answers) < 20 {
		t.Fatalf("%d answer strings: the derivation found too little to test with", len(answers))
	}
	fetch := func(ts *httptest.Server) map[string]string {
		out := map[string]string{}
		_, out["page"] = getUntil200(t, ts.URL+"/k8s/"+vr.Tag+"/volume-manager")
		_, j := getUntil200(t, ts.URL+"/k8s/"+vr.Tag+"/volume-manager.json")
		out["json"] = withoutSource(t, j)
		room := createVolumeRoom(t, ts, vr.Tag)
		_, out["room page"] = getUntil200(t, ts.URL+"/rooms/"+room)
		return out
	}
	before, after := fetch(plain), fetch(quiz)
	for name, body := range before {
		if len(leaks(answers, body, "")) == 0 {
			t.Errorf("without quiz mode, %s holds no answer: the test would test nothing", name)
		}
		if l := leaks(answers, after[name], ""); len(l) > 0 {
			t.Errorf("in quiz mode, %s gives away %q", name, l)
		}
	}
	if code, _ := httpGet(t, quiz.URL+"/k8s/"+vr.Tag+"/volume-manager/answer-key.md"); code != http.StatusForbidden {
		t.Errorf("the answer key in quiz mode: %d, want 403", code)
	}
	// A hide-notes class's room on the server without --quiz.
	class, _ := createClass(t, plain, url.Values{"name": {"Sealed"}, "hide_notes": {"1"}, "reading": {"volume-manager"}})
	room, _, code := startClassRoom(t, plain, class)
	if code != http.StatusSeeOther {
		t.Fatalf("start a room of the class: %d", code)
	}
	revs := roomNotes{}
	for _, p := range vr.Parts {
		if _, body := revs.put(t, plain.URL, room, annotations.VolumePhaseID(p.Key), "remove-extra"); len(leaks(answers, body, "")) > 0 {
			t.Errorf("the check of %s gives away %q", p.Key, leaks(answers, body, ""))
		}
	}
	_, body := revs.put(t, plain.URL, room, annotations.VolumeDesired, "the populator")
	if strings.Contains(body, "of the") {
		t.Errorf("in a hide-notes class the set's check counts the writers: %s", body)
	}
	for _, p := range []string{"/rooms/" + room, "/rooms/" + room + "/worksheet.md"} {
		_, b := getUntil200(t, plain.URL+p)
		if l := leaks(answers, b, ""); len(l) > 0 {
			t.Errorf("in a hide-notes class, %s gives away %q", p, l)
		}
		if strings.Contains(b, "answer-key.md") || strings.Contains(b, "volume-manager.json") {
			t.Errorf("in a hide-notes class, %s links to the answers", p)
		}
	}
	req, _ := http.NewRequest("GET", plain.URL+"/k8s/"+vr.Tag+"/volume-manager/answer-key.md", nil)
	resp, err := writerOf(room).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("the answer key to a student of a hide-notes class: %d, want 403", resp.StatusCode)
	}
}
