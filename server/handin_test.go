package server

// Hand-ins by a deadline (classes/handin.go): a room handed in is frozen,
// its notes refuse writes until the instructor reopens it, handins.zip
// holds the frozen worksheet and says who never handed in, progress.json
// says when and whether late; and a class's hidden notes released at the
// due time, not before.

import (
	"archive/zip"
	"bytes"
	"encoding/csv"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"
)

// settingsPost POSTs the JSON body to class's settings with key.
func settingsPost(t testing.TB, ts, class, key, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts+"/classes/"+class+"/settings", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// handIn POSTs a hand-in of room from browser c.
func handIn(t testing.TB, c *http.Client, ts, room string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts+"/rooms/"+room+"/handin", strings.NewReader(""))
	req.Header.Set("Origin", ts)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// zipFiles are the files of class's handins.zip by name.
func zipFiles(t testing.TB, ts, class, key string) map[string]string {
	t.Helper()
	req, _ := http.NewRequest("GET", ts+"/classes/"+class+"/handins.zip", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatalf("handins.zip: %d %v", resp.StatusCode, err)
	}
	out := map[string]string{}
	for _, f := range z.File {
		rc, _ := f.Open()
		md, _ := io.ReadAll(rc)
		rc.Close()
		out[f.Name] = string(md)
	}
	return out
}

func TestHandIn(t *testing.T) {
	_, ts := newRoomServer(t, "", nil)
	class, key := createClass(t, ts, url.Values{"name": {"Deadline"}, "budget": {"4"}})
	ann := student(t, ts.URL, class, "Ann")
	room, _, code := startRoomAs(t, ann, ts.URL, class)
	other, _, code2 := startRoomAs(t, student(t, ts.URL, class, "Bo"), ts.URL, class)
	if code != http.StatusSeeOther || code2 != http.StatusSeeOther {
		t.Fatalf("rooms: %d %d", code, code2)
	}
	putNote(t, ts, room, "case.config", "before the hand-in")
	file := func(n int, id string) string { return "room-" + string(rune('0'+n)) + "-" + id + ".md" }

	if code, body := handIn(t, http.DefaultClient, ts.URL, room); code != http.StatusForbidden {
		t.Errorf("a hand-in without the class's session: %d %s, want 403", code, body)
	}
	if code, body := handIn(t, ann, ts.URL, room); code != 200 || !strings.Contains(body, `"handed_in":"`) || strings.Contains(body, `"late":true`) {
		t.Fatalf("hand-in: %d %s", code, body)
	}
	if code, body := handIn(t, ann, ts.URL, room); code != http.StatusConflict || !strings.Contains(body, "handed in at") {
		t.Errorf("a second hand-in: %d %s, want 409 saying when", code, body)
	}
	if code := putNoteCode(t, ts, room, "case.config", "after the hand-in"); code != http.StatusLocked {
		t.Errorf("a write after the hand-in: %d, want 423", code)
	}
	files := zipFiles(t, ts.URL, class, key)
	frozen := files[file(1, room)]
	if !strings.Contains(frozen, "before the hand-in") || !strings.Contains(files["README.md"], "handed in at") ||
		!strings.Contains(files["README.md"], file(2, other)+": never handed in") {
		t.Errorf("handins.zip after the hand-in: %q\nREADME:\n%s", frozen, files["README.md"])
	}
	p := progressOf(t, ts.URL, class, key)
	if len(p.Rooms) != 2 || p.Rooms[0].HandedIn == nil || p.Rooms[0].Late || p.Rooms[1].HandedIn != nil {
		t.Errorf("progress.json: %+v", p.Rooms)
	}

	t.Run("reopened, written, handed in again after the due time: late", func(t *testing.T) {
		if code, body := instructorPost(t, ts.URL, "/classes/"+class+"/rooms/"+room+"/reopen", ""); code != http.StatusUnauthorized {
			t.Errorf("reopen without the key: %d %s", code, body)
		}
		if code, body := instructorPost(t, ts.URL, "/classes/"+class+"/rooms/"+room+"/reopen", key); code != 200 {
			t.Fatalf("reopen: %d %s", code, body)
		}
		putNote(t, ts, room, "case.pleg", "after the reopen") // (a new note: rev 0)
		files := zipFiles(t, ts.URL, class, key)
		if md := files[file(1, room)]; !strings.Contains(md, "after the reopen") || !strings.Contains(files["README.md"], "reopened at") {
			t.Errorf("a reopened room's zip is its live worksheet: %q\n%s", md, files["README.md"])
		}
		due := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
		if code, body := settingsPost(t, ts.URL, class, key, `{"due":"`+due+`","extensions":{"`+other+`":120}}`); code != 200 {
			t.Fatalf("settings: %d %s", code, body)
		}
		if code, body := handIn(t, ann, ts.URL, room); code != 200 || !strings.Contains(body, `"late":true`) {
			t.Errorf("a hand-in after the due time: %d %s, want late", code, body)
		}
		if code, body := handIn(t, student(t, ts.URL, class, "Bo"), ts.URL, other); code != 200 || strings.Contains(body, `"late":true`) {
			t.Errorf("a hand-in within the room's extension: %d %s, want not late", code, body)
		}
		p := progressOf(t, ts.URL, class, key)
		if p.Rooms[0].HandedIn == nil || !p.Rooms[0].Late || p.Rooms[1].HandedIn == nil || p.Rooms[1].Late {
			t.Errorf("progress.json: %+v", p.Rooms)
		}
		if md := zipFiles(t, ts.URL, class, key)[file(1, room)]; !strings.Contains(md, "after the reopen") {
			t.Errorf("the zip after the second hand-in: %q", md)
		}
		code, b := instructorGet(t, ts, "/classes/"+class+"/rooms/"+room+"/results.json", key)
		if code != 200 || !strings.Contains(string(b), ", late.") {
			t.Errorf("results.json: %d %s", code, b)
		}
		code, b = instructorGet(t, ts, "/classes/"+class+"/grades.csv", key)
		rows, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if code != 200 || err != nil || len(rows) < 3 {
			t.Fatalf("grades.csv: %d %v %s", code, err, b)
		}
		head, seen := rows[0], 0
		for _, row := range rows[1:] {
			col := func(name string) string { return row[slices.Index(head, name)] }
			want, inRoom := map[string]string{room: "true", other: "false"}[col("room_id")]
			if !inRoom {
				continue // a name on the roster in no room
			}
			seen++
			if col("handed_in") == "" || col("late") != want {
				t.Errorf("grades.csv row %v: handed_in %q late %q, want late %s", row, col("handed_in"), col("late"), want)
			}
		}
		if seen < 2 {
			t.Errorf("grades.csv has %d rows of the two rooms:\n%s", seen, b)
		}
	})

	t.Run("bad settings are refused with why", func(t *testing.T) {
		for _, b := range []string{`{"due":"tomorrow"}`, `{"release":"soon"}`, `{"extensions":{"x":5}}`, `{"extensions":{"` + room + `":-1}}`} {
			if code, body := settingsPost(t, ts.URL, class, key, b); code != http.StatusBadRequest || !strings.Contains(body, "error") {
				t.Errorf("%s: %d %s, want 400", b, code, body)
			}
		}
	})

	t.Run("an ended class takes no hand-in", func(t *testing.T) {
		if code, body := instructorPost(t, ts.URL, "/classes/"+class+"/rooms/"+room+"/reopen", key); code != 200 {
			t.Fatalf("reopen: %d %s", code, body)
		}
		if code, body := instructorPost(t, ts.URL, "/classes/"+class+"/end", key); code != 200 {
			t.Fatalf("end: %d %s", code, body)
		}
		if code, body := handIn(t, ann, ts.URL, room); code != http.StatusGone {
			t.Errorf("a hand-in after the class ended: %d %s, want 410", code, body)
		}
	})
}

// TestHandInRelease: a class hiding the site's notes releases them at the
// due time, not before; "now" releases them at once.
func TestHandInRelease(t *testing.T) {
	_, ts := newRoomServer(t, "", nil)
	class, key := createClass(t, ts, url.Values{"name": {"Quiz"}, "hide_notes": {"1"}})
	room, _, code := startClassRoom(t, ts, class)
	if code != http.StatusSeeOther {
		t.Fatalf("room: %d", code)
	}
	hidden := func() bool {
		t.Helper()
		code, body := httpGet(t, ts.URL+"/rooms/"+room)
		if code != 200 {
			t.Fatalf("room page: %d", code)
		}
		return strings.Contains(body, "data-hide-notes")
	}
	if !hidden() {
		t.Fatal("a class hiding the notes: the room page shows them")
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	if code, body := settingsPost(t, ts.URL, class, key, `{"due":"`+future+`","release":"due"}`); code != 200 || !strings.Contains(body, `"release":"due"`) {
		t.Fatalf("settings: %d %s", code, body)
	}
	if !hidden() {
		t.Error("released before the due time")
	}
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	if code, body := settingsPost(t, ts.URL, class, key, `{"due":"`+past+`"}`); code != 200 {
		t.Fatalf("settings: %d %s", code, body)
	}
	if hidden() {
		t.Error("the due time passed with release=due: the notes are still hidden")
	}
	if code, body := settingsPost(t, ts.URL, class, key, `{"due":"`+future+`","release":""}`); code != 200 {
		t.Fatalf("settings: %d %s", code, body)
	}
	if !hidden() {
		t.Error(`release "" (not yet): the notes are shown`)
	}
	if code, body := settingsPost(t, ts.URL, class, key, `{"release":"now"}`); code != 200 {
		t.Fatalf("settings: %d %s", code, body)
	}
	if hidden() {
		t.Error(`release "now": the notes are still hidden`)
	}
}
