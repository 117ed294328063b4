package server

// A class's roster and its end, over HTTP: names given on the class page
// (POST /classes/{id}/hello) placed in the rooms their readers are in,
// and those in no room; the instructor ends one stray room, then the
// whole class: its rooms turn read-only, it starts no more, its page says
// it has ended, and every hand-in still downloads.

import (
	"archive/zip"
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/rooms"
)

// hello posts a student's name as the class page does, from a browser of
// its own (sid, which pages once sent, is sent and not read): the
// student's browser for the helpers after (student).
func hello(t testing.TB, ts string, class, sid, name string) (int, string) {
	t.Helper()
	c := newJar()
	code, body := helloAs(t, c, ts, class, name)
	if code == 200 {
		students.Store(class+"/"+name, c)
	}
	return code, body
}

// instructorPost POSTs {} to p with the instructor key ("" sends none).
func instructorPost(t testing.TB, ts, p, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts+p, strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

func studentID(t testing.TB) string {
	id, err := rooms.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestClassRosterAndEnd(t *testing.T) {
	s, ts := newRoomServer(t, "", nil)
	ctx := testCtx(t)
	class, key := createClass(t, ts, url.Values{"name": {"Group C"}})
	other, otherKey := createClass(t, ts, url.Values{"name": {"Another"}})

	t.Run("a name given is on the roster, in no room", func(t *testing.T) {
		for _, bad := range []struct{ sid, name, why string }{
			{studentID(t), "", "no name"},
			{studentID(t), strings.Repeat("x", 33), "33 characters"},
		} {
			if code, body := hello(t, ts.URL, class, bad.sid, bad.name); code != http.StatusBadRequest {
				t.Errorf("%s: %d %s, want 400", bad.why, code, body)
			}
		}
		for _, n := range []string{"Ann", "Bob", "Cy", "<b>Dee</b>"} {
			if code, body := hello(t, ts.URL, class, studentID(t), n); code != 200 {
				t.Fatalf("hello %s: %d %s", n, code, body)
			}
		}
		o := overviewOf(t, ts, class, key)
		var names []string
		for _, st := range o.Students {
			if st.Room != "" || st.Seen.IsZero() {
				t.Errorf("%+v: in a room, or never seen", st)
			}
			names = append(names, st.Name)
		}
		if strings.Join(names, ",") != "<b>Dee</b>,Ann,Bob,Cy" {
			t.Errorf("roster %v, want the four names by name", names)
		}
		if o := overviewOf(t, ts, other, otherKey); len(o.Students) != 0 {
			t.Errorf("another class's roster holds %v", o.Students)
		}
	})

	var annRoom, annKey, cyRoom string
	t.Run("the roster places each reader in their room", func(t *testing.T) {
		annRoom, annKey, _ = startClassRoom(t, ts, class)
		cyRoom, _, _ = startClassRoom(t, ts, class)
		dialRoom(t, ctx, ts, annRoom, annKey, "Ann")
		dialRoom(t, ctx, ts, annRoom, "", "Bob")
		// Eve never gave a name on the class page: she reads along, but
		// is no reader of the room, and may not write in it.
		eve := newJar()
		dialRoomWith(t, ctx, ts, eve, annRoom, "", "", "Eve")
		var o classes.Overview
		got := map[string]classes.StudentRow{}
		testwait.For(t, 10*time.Second, "two readers in Ann's room", func() bool {
			o = overviewOf(t, ts, class, key)
			clear(got)
			for _, st := range o.Students {
				if !isStarter(st.Name) {
					got[st.Name] = st
				}
			}
			return got["Bob"].Room != ""
		})
		if code, body := putAs(t, eve, ts, annRoom, "sentence", "Signed by whom?", "Ann"); code != http.StatusForbidden || !strings.Contains(body, "/classes/"+class) {
			t.Errorf("a note from a browser without the class's session: %d %s, want 403 with the class page's link", code, body)
		}
		switch {
		case got["Ann"].Room != annRoom || !got["Ann"].Driving || got["Ann"].Seen.IsZero():
			t.Errorf("Ann: %+v, want in her room, driving, seen", got["Ann"])
		case got["Bob"].Room != annRoom || got["Bob"].Driving:
			t.Errorf("Bob: %+v, want in Ann's room, following", got["Bob"])
		case len(got) != 4:
			t.Errorf("roster %+v: want Ann, Bob, Cy and Dee, not Eve", got)
		case got["Cy"].Room != "" || got["<b>Dee</b>"].Room != "":
			t.Errorf("Cy %+v, Dee %+v: want in no room", got["Cy"], got["<b>Dee</b>"])
		}
		if len(o.Rooms) != 2 || o.Rooms[0].Readers == nil {
			t.Errorf("rooms.json's rooms changed: %+v", o.Rooms)
		}
	})

	t.Run("the instructor ends a stray room", func(t *testing.T) {
		p := "/classes/" + class + "/rooms/" + cyRoom + "/end"
		if code, _ := instructorPost(t, ts.URL, p, ""); code != http.StatusUnauthorized {
			t.Errorf("without the key: %d", code)
		}
		if code, _ := instructorPost(t, ts.URL, p, otherKey); code != http.StatusUnauthorized {
			t.Errorf("with another class's key: %d", code)
		}
		if code, _ := instructorPost(t, ts.URL, "/classes/"+other+"/rooms/"+cyRoom+"/end", otherKey); code != http.StatusNotFound {
			t.Errorf("another class's instructor ending this class's room: %d, want 404", code)
		}
		if code, body := instructorPost(t, ts.URL, p, key); code != 200 || !strings.Contains(body, `"ended":true`) {
			t.Fatalf("end Cy's room: %d %s", code, body)
		}
		if r, _ := s.rooms.Get(cyRoom); !r.Ended {
			t.Error("Cy's room did not end")
		}
		if r, _ := s.rooms.Get(annRoom); r.Ended {
			t.Error("Ann's room ended with Cy's")
		}
	})

	t.Run("the instructor ends the class", func(t *testing.T) {
		putNote(t, ts, annRoom, "sentence", "What is wanted, made so.")
		if code, _ := instructorPost(t, ts.URL, "/classes/"+class+"/end", ""); code != http.StatusUnauthorized {
			t.Errorf("without the key: %d", code)
		}
		code, body := instructorPost(t, ts.URL, "/classes/"+class+"/end", key)
		if code != 200 || !strings.Contains(body, `"ended":"`) {
			t.Fatalf("end the class: %d %s", code, body)
		}
		if r, _ := s.rooms.Get(annRoom); !r.Ended {
			t.Error("Ann's room is still open in an ended class")
		}
		if code := putNoteCode(t, ts, annRoom, "sentence", "changed after the end"); code < 400 {
			t.Errorf("a note written in an ended class's room: %d", code)
		}
		if _, _, code := startRoomAs(t, student(t, ts.URL, class, "Cy"), ts.URL, class); code != http.StatusGone {
			t.Errorf("a room started in an ended class: %d, want 410", code)
		}
		if code, _ := hello(t, ts.URL, class, studentID(t), "Late"); code != http.StatusGone {
			t.Errorf("a name given to an ended class: %d, want 410", code)
		}
		if code, page := httpGet(t, ts.URL+"/classes/"+class); code != 200 || !strings.Contains(page, "This class has ended") || strings.Contains(page, "data-class-start") {
			t.Errorf("the class link after the end: %d, no \"has ended\", or a start button", code)
		}
		if _, b := httpGet(t, ts.URL+"/classes/"+class+"/pairs.json"); !strings.Contains(b, `"ended":true}`) {
			t.Errorf("pairs.json does not say the class ended: %s", b)
		}
		o := overviewOf(t, ts, class, key)
		if o.Class.Ended.IsZero() || len(o.Rooms) != 2 || !o.Rooms[0].Ended || !o.Rooms[1].Ended {
			t.Errorf("the overview after the end: %+v", o)
		}
		code, zb := instructorGet(t, ts, "/classes/"+class+"/handins.zip", key)
		if code != 200 {
			t.Fatalf("handins.zip after the end: %d", code)
		}
		z, err := zip.NewReader(bytes.NewReader(zb), int64(len(zb)))
		if err != nil || len(z.File) != 2 {
			t.Fatalf("handins.zip after the end: %v, %d files", err, len(z.File))
		}
		rc, _ := z.File[0].Open()
		md, _ := io.ReadAll(rc)
		rc.Close()
		if !strings.Contains(string(md), "\n\nReaders: Ann, Bob\n\n") || strings.Contains(string(md), "Eve") {
			t.Errorf("Ann's room's hand-in names other readers than Ann and Bob:\n%s", md)
		}
		if code, _ := instructorPost(t, ts.URL, "/classes/"+class+"/end", key); code != 200 {
			t.Errorf("ending it again: %d", code)
		}
	})
}
