package server

// A class over HTTP, as its pages use it: made by an instructor, rooms
// started by students from one address beyond the address's own cap and
// up to the class's budget, the instructor's overview behind the key
// (fired counts from a relay's real lines, worksheet progress, an ended
// room), every hand-in in one zip, and a class that hides the site's
// notes served without them.

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
	"github.com/syncloop/syncloop/server/rooms"
)

// createClass posts the form that makes a class and returns its id and
// instructor key from the redirect.
func createClass(t testing.TB, ts *httptest.Server, form url.Values) (id, key string) {
	t.Helper()
	resp := postForm(t, ts, "/classes", form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("POST /classes: %d", resp.StatusCode)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(u.Path, "/classes/")
	key = u.Query().Get("k")
	if !ok || !rooms.ValidID(id) || !rooms.ValidID(key) || key == id {
		t.Fatalf("redirect to %q: not an instructor link", u)
	}
	return id, key
}

// postForm posts a form as the site's own page would.
func postForm(t testing.TB, ts *httptest.Server, p string, form url.Values) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+p, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// startClassRoom starts a room of the class, as a new student of it
// (starter), and returns its id and driver key.
func startClassRoom(t testing.TB, ts *httptest.Server, class string) (id, key string, code int) {
	t.Helper()
	return startRoomAs(t, starter(t, ts.URL, class), ts.URL, class)
}

// instructorGet GETs p with the key as a bearer token ("" sends none).
func instructorGet(t testing.TB, ts *httptest.Server, p, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+p, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func overviewOf(t testing.TB, ts *httptest.Server, class, key string) classes.Overview {
	t.Helper()
	code, b := instructorGet(t, ts, "/classes/"+class+"/rooms.json", key)
	if code != 200 {
		t.Fatalf("rooms.json: %d %s", code, b)
	}
	var o classes.Overview
	if err := json.Unmarshal(b, &o); err != nil {
		t.Fatalf("rooms.json %s: %v", b, err)
	}
	return o
}

// caseLines are klog lines at the log sites of the Reading's cases named
// (n of each), as a kubelet of the Reading's tag writes them, after its
// version line.
func caseLines(r *extractor.Reading, n int, keys ...string) []relay.Line {
	out := []relay.Line{{ID: "v", Raw: fmt.Sprintf(`I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion=%q`, r.Tag)}}
	for _, k := range keys {
		c, ok := r.Function.CaseByKey(k)
		if !ok || len(c.Logs) == 0 {
			continue
		}
		l := c.Logs[0]
		for i := range n {
			out = append(out, relay.Line{ID: fmt.Sprintf("%s-%d", k, i),
				Raw: fmt.Sprintf("I1130 01:02:%02d.000000    1234 %s:%d] %q pod=\"default/probe-me\"", i, path.Base(l.File), l.Line, l.Message)})
		}
	}
	return out
}

func TestClass(t *testing.T) {
	s, ts := newRoomServer(t, "", func(c *Config) { c.DemoPeriod = 20 * time.Millisecond })
	ctx := testCtx(t)

	t.Run("bad forms are refused with why", func(t *testing.T) {
		for _, f := range []url.Values{{"budget": {"0"}}, {"budget": {"many"}}, {"budget": {"1000"}}, {"tag": {"latest"}}, {"name": {"a\x00b"}}} {
			if code := postForm(t, ts, "/classes", f).StatusCode; code != http.StatusBadRequest {
				t.Errorf("%v: %d, want 400", f, code)
			}
		}
		req, _ := http.NewRequest("POST", ts.URL+"/classes", strings.NewReader("name=x"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("cross-site POST /classes: %d, want 403", resp.StatusCode)
		}
	})

	class, key := createClass(t, ts, url.Values{"name": {`Group <b>B</b>`}, "budget": {"6"}, "hide_notes": {"1"}})

	t.Run("the pages", func(t *testing.T) {
		code, body := httpGet(t, ts.URL+"/classes/"+class+"?k="+key)
		if code != 200 || !strings.Contains(body, "Group &lt;b&gt;B&lt;/b&gt;") || strings.Contains(body, "<b>B</b>") {
			t.Errorf("instructor page: %d, the name not as text:\n%.600s", code, body)
		}
		if !strings.Contains(body, "data-class-start") || !strings.Contains(body, `action="/classes/`+class+`/rooms"`) {
			t.Error("the class page has no [data-class-start] form")
		}
		if code, _ := httpGet(t, ts.URL+"/classes/"+class+"?k="+class); code != http.StatusForbidden {
			t.Errorf("a wrong instructor key: %d, want 403", code)
		}
		if code, _ := httpGet(t, ts.URL+"/classes/AAAAAAAAAAAAAAAAAAAAAA"); code != http.StatusNotFound {
			t.Errorf("no such class: %d, want 404", code)
		}
	})

	t.Run("the instructor's routes want the key", func(t *testing.T) {
		for _, p := range []string{"rooms.json", "handins.zip", "events"} {
			for _, k := range []string{"", class, key + "x"} {
				if code, _ := instructorGet(t, ts, "/classes/"+class+"/"+p, k); code != http.StatusUnauthorized {
					t.Errorf("%s with key %q: %d, want 401", p, k, code)
				}
			}
		}
		if o := overviewOf(t, ts, class, key); len(o.Rooms) != 0 || o.Class.Budget != 6 || !o.Class.HideNotes {
			t.Errorf("a new class: %+v", o)
		}
	})

	// Six rooms from one address: past the address's own cap (4), up to
	// the class's budget; the seventh is refused, and the address's cap
	// outside the class is untouched.
	var ids, keys []string
	for i := range 7 {
		id, k, code := startClassRoom(t, ts, class)
		if i < 6 && code != http.StatusSeeOther {
			t.Fatalf("room %d of the class: %d", i+1, code)
		}
		if i == 6 {
			if code != http.StatusTooManyRequests {
				t.Errorf("room 7 of a class of 6: %d, want 429", code)
			}
			break
		}
		ids, keys = append(ids, id), append(keys, k)
	}
	var plainRoom string
	for i := range 4 {
		resp := postRoom(t, ts, "Origin", ts.URL, "Sec-Fetch-Site", "same-origin")
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("room %d of the address outside the class: %d", i+1, resp.StatusCode)
		}
		u, _ := url.Parse(resp.Header.Get("Location"))
		plainRoom = strings.TrimPrefix(u.Path, "/rooms/")
	}
	if resp := postRoom(t, ts, "Origin", ts.URL, "Sec-Fetch-Site", "same-origin"); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a 5th room of the address outside a class: %d, want 429", resp.StatusCode)
	}

	t.Run("a class that hides the notes serves its rooms without them", func(t *testing.T) {
		code, body := httpGet(t, ts.URL+"/rooms/"+ids[0])
		if code != 200 {
			t.Fatalf("room page: %d", code)
		}
		if strings.Contains(body, `class="prose note"`) || strings.Contains(body, "/answer-key.md\" download") || strings.Contains(body, `class="written-by"`) {
			t.Error("a room of a class that hides notes shows the site's notes, its answer key or the derived writers")
		}
		if !strings.Contains(body, "The class hides the site") {
			t.Error("the room does not say the notes are hidden")
		}
		// A room of no class has them (the fixture has notes).
		_, plain := httpGet(t, ts.URL+"/rooms/"+plainRoom)
		if !strings.Contains(plain, `class="prose note"`) || !strings.Contains(plain, "/answer-key.md\" download") || !strings.Contains(plain, `class="written-by"`) {
			t.Error("a room of no class lacks the site's notes or answer key: the comparison proves nothing")
		}
	})

	// Two readers in the first room, a worksheet item written, a relay's
	// lines in the second, the third ended.
	d := dialRoom(t, ctx, ts, ids[0], keys[0], "Ann")
	dialRoom(t, ctx, ts, ids[0], "", "Bob")
	d.until(t, ctx, "Ann drives", func(m map[string]any) bool { return m["t"] == "state" && m["driver"] == d.id })
	putNote(t, ts, ids[0], "writer.config", "pkg/kubelet/config.(*PodConfig).Updates")
	putNote(t, ts, ids[0], "sentence", "The loop reconciles what is wanted with what is.")
	putNote(t, ts, ids[0], "set.desired", "DesiredStateOfWorld, pkg/kubelet/volumemanager/cache/desired_state_of_world.go:45")

	r := fixture.Reading(t)
	d2 := dialRoom(t, ctx, ts, ids[1], keys[1], "Cy")
	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+ids[1]+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d2.token}}})
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	defer rl.CloseNow()
	lines := caseLines(r, 3, "config", "pleg")
	if ack := wstest.Send(t, ctx, rl, lines...); ack != lines[len(lines)-1].ID {
		t.Fatalf("ack %q", ack)
	}
	// Cy pins the first config line, line 2 of the room's journal, as
	// evidence (what live.js's [data-pin] sends): the line as stored is to
	// reach the room's hand-in in the instructor's zip.
	pinned := lines[1].Raw
	if code, v := notesReq(t, "POST", ts.URL+"/rooms/"+ids[1]+"/pins", map[string]any{"seq": 2, "author": "Cy"}); code != 200 {
		t.Fatalf("POST a pin: %d %v", code, v)
	}

	d3 := dialRoom(t, ctx, ts, ids[2], keys[2], "Dee")
	d3.send(t, ctx, map[string]any{"t": "end"})
	d3.until(t, ctx, "the room ended", func(m map[string]any) bool { return m["t"] == "state" && m["ended"] == true })
	if code := putNoteCode(t, ts, ids[2], "sentence", "too late"); code != http.StatusForbidden {
		t.Errorf("a note in an ended room: %d, want 403", code)
	}
	if _, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+ids[2]+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d3.token}}}); err == nil || resp == nil || resp.StatusCode != http.StatusGone {
		t.Errorf("a relay to an ended room: %v, want 410", err)
	}
	req, _ := http.NewRequest("PUT", ts.URL+"/feeds/room-"+ids[2]+"/journal", strings.NewReader("I1130 01:02:03.000000 1 x.go:1] late\n"))
	req.Header.Set("Authorization", "Bearer "+d3.token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusGone {
		t.Errorf("a journal to an ended room: %v %v, want 410", resp, err)
	} else {
		resp.Body.Close()
	}

	t.Run("the overview", func(t *testing.T) {
		var o classes.Overview
		if !testwait.Until(5*time.Second, func() bool {
			o = overviewOf(t, ts, class, key)
			return len(o.Rooms) == 6 && o.Rooms[1].Fired["config"] == 3 && len(o.Rooms[0].Readers) == 2
		}) {
			t.Fatalf("the overview never showed the rooms as they are: %+v", o.Rooms)
		}
		a, b, c := o.Rooms[0], o.Rooms[1], o.Rooms[2]
		if a.ID != ids[0] || a.Driver != "Ann" || strings.Join(a.Readers, ",") != "Ann,Bob" || a.Tag != fixture.Tag {
			t.Errorf("room 1: %+v", a)
		}
		if a.Written != 3 || a.Checked != 1 || a.Expected == 0 || a.Relay || len(a.Fired) != 0 {
			t.Errorf("room 1's worksheet and journal: %+v", a)
		}
		if !b.Relay || b.KubeletVersion != r.Tag || b.Fired["pleg"] != 3 || len(b.Fired) != 2 {
			t.Errorf("room 2, fed by a relay: %+v", b)
		}
		if !c.Ended || a.Ended {
			t.Errorf("room 3 ended, room 1 not: %v %v", c.Ended, a.Ended)
		}
		if time.Since(a.Updated) > time.Minute {
			t.Errorf("room 1 updated %v", a.Updated)
		}
	})

	t.Run("the demo in a room lights cases but never counts as fired", func(t *testing.T) {
		// A reader's live pane on the fourth room starts its demo.
		b := dialFeed(t, ctx, ts, "room-"+ids[3])
		demoLines := 0
		for demoLines < 5 {
			_, msg, err := b.Read(ctx)
			if err != nil {
				t.Fatalf("the room's feed: %v", err)
			}
			for _, part := range strings.Split(string(msg), "\n") {
				var m struct {
					Hello *struct{ Demo bool }   `json:"hello"`
					Line  *struct{ Case string } `json:"line"`
					Demo  bool                   `json:"demo"`
				}
				json.Unmarshal([]byte(part), &m)
				if m.Line != nil && !m.Demo {
					t.Fatalf("a line not marked demo in a room no journal feeds: %s", part)
				}
				if m.Line != nil {
					demoLines++
				}
			}
		}
		o := overviewOf(t, ts, class, key)
		if len(o.Rooms[3].Fired) != 0 || o.Rooms[3].Relay {
			t.Errorf("the demo counted: %+v", o.Rooms[3])
		}
	})

	t.Run("handins.zip holds one worksheet per room", func(t *testing.T) {
		code, b := instructorGet(t, ts, "/classes/"+class+"/handins.zip", key)
		if code != 200 {
			t.Fatalf("handins.zip: %d %s", code, b)
		}
		z, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]string{}
		for _, f := range z.File {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			md, _ := io.ReadAll(rc)
			rc.Close()
			files[f.Name] = string(md)
		}
		if len(files) != 6 {
			t.Errorf("%d files, want 6", len(files))
		}
		// Numbered oldest first, as the instructor's page numbers them.
		file := func(i int) string { return fmt.Sprintf("room-%d-%s.md", i+1, ids[i]) }
		for i := range ids {
			if _, ok := files[file(i)]; !ok {
				t.Errorf("no %s", file(i))
			}
		}
		if md := files[file(0)]; !strings.Contains(md, "(*PodConfig).Updates") || !strings.Contains(md, "what is wanted with what is") {
			t.Errorf("room 1's hand-in lacks what it wrote:\n%s", md)
		}
		if md := files[file(0)]; !strings.Contains(md, "\n\nReaders: Ann, Bob\n\n") || !strings.Contains(md, "\n\nRoom 1 of the class ") {
			t.Errorf("room 1's hand-in does not say which room it is and who read in it:\n%s", md)
		}
		if md := files[file(1)]; !strings.Contains(md, "## Fired") || !strings.Contains(md, pinned) {
			t.Errorf("room 2's hand-in lacks the line pinned as evidence:\n%s", md)
		}
		if !strings.Contains(files[file(2)], "(ended)") {
			t.Error("the ended room's hand-in does not say it ended")
		}
	})

	t.Run("settings", func(t *testing.T) {
		req, _ := http.NewRequest("POST", ts.URL+"/classes/"+class+"/settings", strings.NewReader(`{"budget":7,"hide_notes":false}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("settings: %d", resp.StatusCode)
		}
		if _, _, code := startClassRoom(t, ts, class); code != http.StatusSeeOther {
			t.Errorf("a 7th room after the budget rose to 7: %d", code)
		}
		if _, body := httpGet(t, ts.URL+"/rooms/"+ids[0]); !strings.Contains(body, `class="prose note"`) {
			t.Error("the notes stay hidden after the class showed them")
		}
		req, _ = http.NewRequest("POST", ts.URL+"/classes/"+class+"/settings", strings.NewReader(`{"budget":-1}`))
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("a budget of -1: %d, want 400", resp.StatusCode)
		}
	})

	t.Run("the live stream: the overview at once, and it ends when the server stops", func(t *testing.T) {
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/classes/"+class+"/events", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		br := bufio.NewReader(resp.Body)
		event, _ := br.ReadString('\n')
		data, _ := br.ReadString('\n')
		var o classes.Overview
		if event != "event: overview\n" || json.Unmarshal([]byte(strings.TrimPrefix(data, "data: ")), &o) != nil || len(o.Rooms) != 7 {
			t.Fatalf("first event %q %.200q", event, data)
		}
		s.classes.Close()
		done := make(chan error, 1)
		go func() { _, err := io.Copy(io.Discard, br); done <- err }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			t.Error("the stream went on after the classes closed")
		}
	})
}

func putNote(t testing.TB, ts *httptest.Server, room, id, text string) {
	t.Helper()
	if code := putNoteCode(t, ts, room, id, text); code != 200 {
		t.Fatalf("PUT %s: %d", id, code)
	}
}

func putNoteCode(t testing.TB, ts *httptest.Server, room, id, text string) int {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"text": text, "rev": 0})
	req, _ := http.NewRequest("PUT", ts.URL+"/rooms/"+room+"/notes/"+id, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := writerOf(room).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestClassTwoReplicas: a class made on one replica is served by the
// other; its budget counts the rooms started on both; and each replica's
// overview shows who is in a room on either.
func TestClassTwoReplicas(t *testing.T) {
	ts1, ts2 := twoReplicas(t)
	ctx := testCtx(t)
	class, key := createClass(t, ts1, url.Values{"name": {"Two replicas"}, "budget": {"2"}})
	if code, body := httpGet(t, ts2.URL+"/classes/"+class); code != 200 || !strings.Contains(body, "Two replicas") {
		t.Fatalf("the other replica's class page: %d", code)
	}
	a, ak, code := startClassRoom(t, ts1, class)
	if code != http.StatusSeeOther {
		t.Fatalf("a room on replica 1: %d", code)
	}
	if _, _, code := startClassRoom(t, ts2, class); code != http.StatusSeeOther {
		t.Fatalf("a room on replica 2: %d", code)
	}
	if _, _, code := startClassRoom(t, ts2, class); code != http.StatusTooManyRequests {
		t.Errorf("a 3rd room of a class of 2, two made on the other replica: %d, want 429", code)
	}
	d := dialRoom(t, ctx, ts1, a, ak, "Ann")
	dialRoom(t, ctx, ts2, a, "", "Bob")
	d.until(t, ctx, "Bob, from the other replica", func(m map[string]any) bool {
		rs, _ := m["readers"].([]any)
		return m["t"] == "state" && len(rs) == 2
	})
	for i, ts := range []*httptest.Server{ts1, ts2} {
		var o classes.Overview
		if !testwait.Until(5*time.Second, func() bool {
			o = overviewOf(t, ts, class, key)
			var row classes.RoomRow
			for _, r := range o.Rooms {
				if r.ID == a {
					row = r
				}
			}
			return len(o.Rooms) == 2 && row.Driver == "Ann" && slicesEqualSet(row.Readers, "Ann", "Bob")
		}) {
			t.Fatalf("replica %d's overview: %+v", i+1, o.Rooms)
		}
	}
}

// slicesEqualSet reports whether got holds exactly the names want, in any order.
func slicesEqualSet(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			return false
		}
	}
	return true
}
