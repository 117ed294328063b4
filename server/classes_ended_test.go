package server

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/internal/fixture"
)

// An ended class's settings are kept as they were (POST settings: 410),
// and its rooms' last activity is their last use, not their end.
func TestEndedClassSettingsAndActivity(t *testing.T) {
	_, ts := newRoomServer(t, t.TempDir(), nil)
	class, key := createClass(t, ts, url.Values{"name": {"Kubelet internals"}, "tag": {fixture.Tag}, "budget": {"3"}})
	if _, _, code := startClassRoom(t, ts, class); code != http.StatusSeeOther {
		t.Fatalf("start a class room: %d", code)
	}
	if code, body := instructorPost(t, ts.URL, "/classes/"+class+"/end", key); code != 200 {
		t.Fatalf("end the class: %d %s", code, body)
	}

	req, _ := http.NewRequest("POST", ts.URL+"/classes/"+class+"/settings", strings.NewReader(`{"budget":7,"hide_notes":true}`))
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusGone {
		t.Errorf("settings of an ended class: %d, want 410", resp.StatusCode)
	}

	code, body := instructorGet(t, ts, "/classes/"+class+"/rooms.json", key)
	var o struct {
		Class struct {
			Budget    int       `json:"budget"`
			HideNotes bool      `json:"hide_notes"`
			Ended     time.Time `json:"ended"`
		} `json:"class"`
		Rooms []struct {
			Ended   bool      `json:"ended"`
			Created time.Time `json:"created"`
			Updated time.Time `json:"updated"`
		} `json:"rooms"`
	}
	if code != 200 || json.Unmarshal(body, &o) != nil || len(o.Rooms) != 1 {
		t.Fatalf("rooms.json: %d %s", code, body)
	}
	if o.Class.Budget != 3 || o.Class.HideNotes {
		t.Errorf("the ended class's settings changed: %+v", o.Class)
	}
	if r := o.Rooms[0]; !r.Ended || r.Updated.Before(r.Created) || !r.Updated.Before(o.Class.Ended) {
		t.Errorf("the ended room: %+v, class ended %v; want its last activity before the end, not the end", r, o.Class.Ended)
	}
	// The grid says the same.
	code, body = instructorGet(t, ts, "/classes/"+class+"/progress.json", key)
	var p struct {
		Rooms []struct {
			Updated time.Time `json:"updated"`
		} `json:"rooms"`
	}
	if code != 200 || json.Unmarshal(body, &p) != nil || len(p.Rooms) != 1 {
		t.Fatalf("progress.json: %d %s", code, body)
	}
	if !p.Rooms[0].Updated.Before(o.Class.Ended) {
		t.Errorf("progress.json: the ended room's activity %v, class ended %v; want before the end", p.Rooms[0].Updated, o.Class.Ended)
	}
}
