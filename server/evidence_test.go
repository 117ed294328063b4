package server

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/server/internal/fixture"
)

// TestRoomPins: in a room, a pin is the room's note with the reader's
// name, and the room's worksheet hands it in under "Fired"; the room
// feed's record of what fired answers only while the room lives.
func TestRoomPins(t *testing.T) {
	t.Parallel()
	_, ts := newRoomServer(t, t.TempDir(), nil)
	id, _ := createRoom(t, ts)
	pin := "case: config\ntime: 2026-12-01T03:00:01Z\npod: default/probe-me-lab\nnode: lab\nkubelet: v1.33.0 (from its log sites: v1.33.0)\ncursor: s=ab;i=1f\nfeed: room-x, line 7\nline: I1201 03:00:01.000000 1 kubelet.go:2522] \"SyncLoop ADD\""
	code, v := notesReq(t, "PUT", ts.URL+"/rooms/"+id+"/notes/pin.room-"+id+"-7?tag="+fixture.Tag, map[string]any{"text": pin, "rev": 0, "author": "Ann"})
	if code != 200 || v["author"] != "Ann" {
		t.Fatalf("PUT a pin: %d %v", code, v)
	}
	resp, err := http.Get(ts.URL + "/rooms/" + id + "/worksheet.md?tag=" + fixture.Tag)
	if err != nil {
		t.Fatal(err)
	}
	md, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if i := strings.Index(string(md), "## Fired"); i < 0 || !strings.Contains(string(md[i:]), "### config at 2026-12-01T03:00:01Z (Ann") || !strings.Contains(string(md[i:]), "cursor: s=ab;i=1f") {
		t.Fatalf("the room's worksheet:\n%s", md)
	}
	for _, tt := range []struct {
		feed string
		code int
	}{{"room-" + id, 200}, {"room-nosuchroom", 404}} {
		resp, err := http.Get(ts.URL + "/feeds/" + tt.feed + "/fired")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.code {
			t.Errorf("GET /feeds/%s/fired: %s, want %d", tt.feed, resp.Status, tt.code)
		}
	}
}
