package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/testclock"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
	"github.com/syncloop/syncloop/server/rooms"
)

// newRoomServer serves the fixture reading with rooms kept in dataDir.
// testToken is the relays' token of the servers these tests start.
const testToken = "t0ken"

func newRoomServer(t testing.TB, dataDir string, edit func(*Config), tune ...func(*Plan)) (*Server, *httptest.Server) {
	t.Helper()
	other := *fixture.Reading(t)
	other.Tag = "v1.31.0"
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t), other.Tag: &other}}
	cfg := Config{
		DefaultTag:  fixture.Tag,
		CacheDir:    t.TempDir(),
		DataDir:     dataDir,
		Load:        fl.Load,
		Getenv:      func(string) string { return "" },
		DemoPeriod:  -1,
		IngestToken: testToken,
	}
	if edit != nil {
		edit(&cfg)
	}
	s, err := openTuned(cfg, tune...)
	if err != nil {
		t.Fatal(err)
	}
	waitLoaded(t, s, fixture.Tag)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return s, ts
}

// wheelGrace sets how long a lent wheel waits for its holder.
func wheelGrace(d time.Duration) func(*Plan) {
	return func(p *Plan) { p.Rooms.WheelGrace = d }
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// createRoom posts to /rooms as the site's own page would and returns the
// room id and driver key from the redirect.
func createRoom(t testing.TB, ts *httptest.Server) (id, key string) {
	t.Helper()
	resp := postRoom(t, ts, "Origin", ts.URL, "Sec-Fetch-Site", "same-origin")
	if resp.StatusCode != http.StatusSeeOther {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST /rooms: %d %s", resp.StatusCode, b)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(u.Path, "/rooms/")
	if !ok || !rooms.ValidID(id) {
		t.Fatalf("redirect to %q: not a room", u)
	}
	key = u.Query().Get("k")
	if !rooms.ValidID(key) || key == id {
		t.Fatalf("driver key %q", key)
	}
	return id, key
}

func postRoom(t testing.TB, ts *httptest.Server, header ...string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", ts.URL+"/rooms", strings.NewReader("tag="+fixture.Tag))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func httpGet(t testing.TB, u string) (int, string) {
	t.Helper()
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestRoomPages(t *testing.T) {
	t.Parallel()
	_, ts := newRoomServer(t, t.TempDir(), nil)
	id, key := createRoom(t, ts)
	other, otherKey := createRoom(t, ts)
	tests := []struct {
		name, path string
		status     int
		contains   []string
		absent     []string
	}{
		{"viewer link", "/rooms/" + id, 200,
			[]string{`data-room="` + id + `"`, `data-feed="room-` + id + `"`, "room.js", "room.css", "Pair session", `id="case-pleg"`},
			[]string{key, "Start a pair session"}},
		{"driver link", "/rooms/" + id + "?k=" + key, 200, []string{`data-room="` + id + `"`}, []string{"ingest_token"}},
		{"another room's key", "/rooms/" + id + "?k=" + otherKey, 403, []string{"driver link is not valid", "/rooms/" + id}, nil},
		{"the other room", "/rooms/" + other, 200, []string{`data-room="` + other + `"`}, nil},
		{"the room's pod_workers page", "/rooms/" + id + "/pod-workers", 200,
			[]string{`data-room="` + id + `"`, `data-page="pod-workers"`, "room.js", `href="/rooms/` + id + `"`, `id="type-`}, []string{"live.js"}},
		{"no such room", "/rooms/AAAAAAAAAAAAAAAAAAAAAA", 404, []string{"No such room"}, nil},
		{"not an id", "/rooms/..%2F..%2Fetc", 404, []string{"No such room"}, nil},
		{"the reading page offers a room", "/k8s/" + fixture.Tag + "/", 200, []string{`action="/rooms"`, "Start a pair session", `data-feed="default"`}, []string{"room.js"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := httpGet(t, ts.URL+tt.path)
			if status != tt.status {
				t.Fatalf("status %d, want %d: %.300s", status, tt.status, body)
			}
			for _, s := range tt.contains {
				if !strings.Contains(body, s) {
					t.Errorf("page lacks %q", s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(body, s) {
					t.Errorf("page has %q", s)
				}
			}
		})
	}
}

func TestRoomCreateIsSameOriginOnly(t *testing.T) {
	t.Parallel()
	s, ts := newRoomServer(t, "", nil)
	tests := []struct {
		name   string
		header []string
		status int
	}{
		{"same origin", []string{"Origin", ts.URL, "Sec-Fetch-Site", "same-origin"}, 303},
		{"no browser headers (curl)", nil, 303},
		{"another site's form", []string{"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"}, 403},
		{"another origin, no fetch metadata", []string{"Origin", "https://evil.example"}, 403},
		{"same site, other origin", []string{"Sec-Fetch-Site", "same-site"}, 403},
		{"null origin, no fetch metadata", []string{"Origin", "null"}, 403},
		{"own form under no-referrer (Origin: null)", []string{"Origin", "null", "Sec-Fetch-Site", "same-origin"}, 303},
	}
	for _, tt := range tests {
		before := s.rooms.Store().Len()
		resp := postRoom(t, ts, tt.header...)
		if resp.StatusCode != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.status)
		}
		if grew := s.rooms.Store().Len() - before; (tt.status == 303) != (grew == 1) {
			t.Errorf("%s: %d rooms made", tt.name, grew)
		}
	}
}

func TestRoomLimits(t *testing.T) {
	t.Run("creation rate per client", func(t *testing.T) {
		s, ts := newRoomServer(t, "", func(c *Config) { c.MaxRooms, c.RoomsPerClient = 2000, 2000 })
		codes := map[int]int{}
		start := time.Now()
		for range 1000 {
			codes[postRoom(t, ts).StatusCode]++
		}
		// The bucket refills while the posts run (slowly, under -race on
		// a loaded machine): one more room per 1/rooms.DefaultCreateRate elapsed.
		most := rooms.DefaultCreateBurst + int(time.Since(start).Seconds()*rooms.DefaultCreateRate)
		if codes[303] < rooms.DefaultCreateBurst || codes[303] > most || codes[303]+codes[429] != 1000 {
			t.Errorf("1000 creations from one client: %v, want %d to %d made and the rest 429", codes, rooms.DefaultCreateBurst, most)
		}
		if s.rooms.Store().Len() != codes[303] {
			t.Errorf("%d rooms held", s.rooms.Store().Len())
		}
	})
	t.Run("rooms per server", func(t *testing.T) {
		_, ts := newRoomServer(t, "", func(c *Config) { c.MaxRooms = 3 })
		for range 3 {
			createRoom(t, ts)
		}
		resp := postRoom(t, ts)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("a fourth room: %d, want 503", resp.StatusCode)
		}
	})
	t.Run("readers per room", func(t *testing.T) {
		_, ts := newRoomServer(t, "", func(c *Config) { c.MaxReaders = 2 })
		id, _ := createRoom(t, ts)
		ctx := testCtx(t)
		dialRoom(t, ctx, ts, id, "", "a")
		dialRoom(t, ctx, ts, id, "", "b")
		c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+id+"/ws"), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		m := readMsg(t, ctx, c)
		if m["t"] != "error" || !strings.Contains(fmt.Sprint(m["error"]), "full") {
			t.Errorf("third reader got %v, want a room-full error", m)
		}
		_, _, err = c.Read(ctx)
		if websocket.CloseStatus(err) != rooms.CloseFull {
			t.Errorf("third reader: %v, want closed with %d (room full: do not retry)", err, rooms.CloseFull)
		}
	})
	t.Run("message size and rate", func(t *testing.T) {
		_, ts := newRoomServer(t, "", nil)
		id, key := createRoom(t, ts)
		ctx := testCtx(t)
		d := dialRoom(t, ctx, ts, id, key, "driver")
		// A burst well over the bucket: some are refused with an error.
		for i := range 100 {
			d.send(t, ctx, map[string]any{"t": "at", "case": "pleg", "first": 1000 + i})
		}
		refused := 0
		for refused == 0 {
			m := d.read(t, ctx)
			if m["t"] == "error" && strings.Contains(fmt.Sprint(m["error"]), "too many messages") {
				refused++
			}
		}
		big := `{"t":"name","name":"` + strings.Repeat("x", 4<<10) + `"}`
		if err := d.c.Write(ctx, websocket.MessageText, []byte(big)); err != nil {
			t.Fatal(err)
		}
		for {
			if _, _, err := d.c.Read(ctx); err != nil {
				if websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
					t.Errorf("after an oversized message: %v, want close 1009", err)
				}
				break
			}
		}
	})
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// roomClient is a Go client on a room's websocket, as a browser's room.js.
type roomClient struct {
	c     *websocket.Conn
	id    string
	key   bool
	wheel bool // joined with a wheel ticket that was accepted
	token string
}

func dialRoom(t testing.TB, ctx context.Context, ts *httptest.Server, room, key, name string) *roomClient {
	t.Helper()
	return dialRoomAs(t, ctx, ts, room, "key", key, name)
}

// dialRoomAs joins presenting a credential ("key" or "wheel"), unless it is "".
func dialRoomAs(t testing.TB, ctx context.Context, ts *httptest.Server, room, field, cred, name string) *roomClient {
	t.Helper()
	// In a class's room, as the class's student of that name.
	browser := clientIn(t, ts.URL, room, name)
	if field == "key" && cred != "" && browser != http.DefaultClient {
		roomWriter.Store(room, browser)
	}
	return dialRoomWith(t, ctx, ts, browser, room, field, cred, name)
}

// dialRoomWith joins from browser (its cookies).
func dialRoomWith(t testing.TB, ctx context.Context, ts *httptest.Server, browser *http.Client, room, field, cred, name string) *roomClient {
	t.Helper()
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+room+"/ws"), &websocket.DialOptions{HTTPClient: browser})
	if err != nil {
		t.Fatalf("dial room: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	rc := &roomClient{c: c}
	join := map[string]any{"t": "join", "name": name, "color": 2}
	if cred != "" {
		join[field] = cred
	}
	rc.send(t, ctx, join)
	for {
		m := rc.read(t, ctx)
		if m["t"] == "welcome" {
			rc.id, _ = m["you"].(string)
			rc.key, _ = m["key"].(bool)
			rc.wheel, _ = m["wheel"].(bool)
			rc.token, _ = m["token"].(string)
			return rc
		}
	}
}

func (rc *roomClient) send(t testing.TB, ctx context.Context, m map[string]any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if err := rc.c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("send %v: %v", m, err)
	}
}

func (rc *roomClient) read(t testing.TB, ctx context.Context) map[string]any {
	t.Helper()
	return readMsg(t, ctx, rc.c)
}

func readMsg(t testing.TB, ctx context.Context, c *websocket.Conn) map[string]any {
	t.Helper()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return m
}

// until reads messages until one satisfies ok, and returns it.
func (rc *roomClient) until(t testing.TB, ctx context.Context, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for {
		_, b, err := rc.c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		if ok(m) {
			return m
		}
	}
}

func stateWith(pred func(st map[string]any) bool) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["t"] == "state" && pred(m) }
}

// positionAt is an "at" message, or a state, with the driver at line first.
func positionAt(first float64) func(map[string]any) bool {
	return func(m map[string]any) bool { return (m["t"] == "at" || m["t"] == "state") && atFirst(m) == first }
}

func atFirst(st map[string]any) float64 {
	at, _ := st["at"].(map[string]any)
	f, _ := at["first"].(float64)
	return f
}

func TestRoomRoles(t *testing.T) {
	t.Parallel()
	_, ts := newRoomServer(t, "", nil)
	id, key := createRoom(t, ts)
	ctx := testCtx(t)
	d := dialRoom(t, ctx, ts, id, key, "Ann")
	v := dialRoom(t, ctx, ts, id, "", "Bob")
	if !d.key || d.token == "" {
		t.Fatalf("driver's welcome: key %v token %q", d.key, d.token)
	}
	if v.key || v.token != "" {
		t.Fatalf("viewer's welcome has the key or the token: %v %q", v.key, v.token)
	}
	v.until(t, ctx, "the viewer sees Ann drive", stateWith(func(st map[string]any) bool { return st["driver"] == d.id }))

	// The driver steers: the viewer hears it.
	d.send(t, ctx, map[string]any{"t": "at", "case": "pleg", "first": 1010, "last": 1040})
	v.until(t, ctx, "the driver's position", positionAt(1010))

	// The viewer tries to steer, take the wheel, switch the tag, rotate the
	// token: each is refused, and nothing changes.
	for _, m := range []map[string]any{
		{"t": "at", "case": "sync", "first": 1999},
		{"t": "take"},
		{"t": "hand", "to": v.id},
		{"t": "tag", "tag": "v1.31.0"},
		{"t": "rotate"},
		{"t": "join", "key": key[:21] + "B"},
	} {
		v.send(t, ctx, m)
		e := v.until(t, ctx, fmt.Sprint("refusal of ", m), func(m map[string]any) bool { return m["t"] == "error" })
		if e["error"] == "" {
			t.Errorf("%v: empty error", m)
		}
	}
	d.send(t, ctx, map[string]any{"t": "at", "case": "pleg", "first": 1011})
	d.until(t, ctx, "the driver's next position", positionAt(1011))
	d.send(t, ctx, map[string]any{"t": "name", "name": "Ann"})
	st := d.until(t, ctx, "the next state", stateWith(func(map[string]any) bool { return true }))
	if st["driver"] != d.id || st["tag"] != fixture.Tag || atFirst(st) != 1011 {
		t.Errorf("after the viewer's attempts: driver %v tag %v", st["driver"], st["tag"])
	}

	// Following: the viewer pauses; everyone sees it.
	v.send(t, ctx, map[string]any{"t": "follow", "on": false})
	d.until(t, ctx, "Bob not following", stateWith(func(st map[string]any) bool { return readerField(st, v.id, "following") == false }))

	// The driver hands the wheel to the viewer: now the viewer steers.
	d.send(t, ctx, map[string]any{"t": "hand", "to": v.id})
	v.until(t, ctx, "Bob drives", stateWith(func(st map[string]any) bool { return st["driver"] == v.id }))
	v.send(t, ctx, map[string]any{"t": "at", "case": "sync", "first": 1020})
	d.until(t, ctx, "Bob's position", positionAt(1020))
	// Ann, no longer driving, cannot steer; her key takes the wheel back.
	d.send(t, ctx, map[string]any{"t": "at", "first": 1030})
	d.until(t, ctx, "Ann refused", func(m map[string]any) bool { return m["t"] == "error" })
	d.send(t, ctx, map[string]any{"t": "take"})
	v.until(t, ctx, "Ann drives again", stateWith(func(st map[string]any) bool { return st["driver"] == d.id }))

	// When the driver leaves, no viewer inherits the wheel.
	d.c.Close(websocket.StatusNormalClosure, "")
	v.until(t, ctx, "no driver", stateWith(func(st map[string]any) bool { return st["driver"] == "" }))
}

// TestRoomWheelLoan: a reader handed the wheel gets a ticket that gives it
// back to their next page (a reload, the room's other page) and to no one
// else; the ticket stops working when the wheel is handed on or taken back;
// a lent wheel waits for its holder a while, then goes back to a key holder;
// the loan outlasts a restart of the server.
func TestRoomWheelLoan(t *testing.T) {
	dir := t.TempDir()
	s, ts := newRoomServer(t, dir, nil, wheelGrace(300*time.Millisecond))
	id, key := createRoom(t, ts)
	ctx := testCtx(t)
	ann := dialRoom(t, ctx, ts, id, key, "Ann")
	bob := dialRoom(t, ctx, ts, id, "", "Bob")
	carol := dialRoom(t, ctx, ts, id, "", "Carol")
	drives := func(rc *roomClient) func(map[string]any) bool {
		return stateWith(func(st map[string]any) bool { return st["driver"] == rc.id })
	}
	ticketMsg := func(m map[string]any) bool { return m["t"] == "wheel" }
	refusal := func(m map[string]any) bool { return m["t"] == "error" }
	// steers checks that rc's steering reaches watcher, and refused that it is refused.
	line := 2000.0
	steers := func(rc, watcher *roomClient) {
		t.Helper()
		line++
		rc.send(t, ctx, map[string]any{"t": "at", "first": line})
		watcher.until(t, ctx, fmt.Sprintf("%s's position", rc.id), positionAt(line))
	}
	refused := func(rc *roomClient, what string) {
		t.Helper()
		rc.send(t, ctx, map[string]any{"t": "at", "first": 1})
		if e := rc.until(t, ctx, what, refusal); !strings.Contains(fmt.Sprint(e["error"]), "only the driver") {
			t.Errorf("%s: %v", what, e)
		}
	}

	ann.send(t, ctx, map[string]any{"t": "hand", "to": bob.id})
	t1, _ := bob.until(t, ctx, "Bob's ticket", ticketMsg)["wheel"].(string)
	if !rooms.ValidID(t1) || t1 == key {
		t.Fatalf("ticket %q", t1)
	}
	bob.until(t, ctx, "Bob drives", drives(bob))

	// Bob reloads: the wheel waits for him, and his next page drives.
	bob.c.Close(websocket.StatusGoingAway, "")
	ann.until(t, ctx, "no one drives while Bob is away", stateWith(func(st map[string]any) bool {
		return readerField(st, bob.id, "name") == nil && st["driver"] == ""
	}))
	bob2 := dialRoomAs(t, ctx, ts, id, "wheel", t1, "Bob")
	if !bob2.wheel || bob2.key || bob2.token != "" {
		t.Fatalf("Bob's next page: wheel %v, key %v, token %q", bob2.wheel, bob2.key, bob2.token)
	}
	ann.until(t, ctx, "Bob's next page drives", drives(bob2))
	steers(bob2, ann)
	refused(carol, "Carol steers")
	refused(ann, "Ann steers")

	// Another page of Bob's with the ticket (a second tab): the newest drives.
	bob3 := dialRoomAs(t, ctx, ts, id, "wheel", t1, "Bob")
	ann.until(t, ctx, "Bob's newest page drives", drives(bob3))
	refused(bob2, "Bob's older page steers")
	bob2.c.Close(websocket.StatusGoingAway, "")
	steers(bob3, carol)

	// The ticket is Bob's alone: not a driver key, not a guess.
	for _, tc := range []struct{ field, cred string }{{"wheel", key}, {"wheel", t1[:21] + string(t1[21]^1)}, {"key", t1}} {
		m := dialRoomAs(t, ctx, ts, id, tc.field, tc.cred, "Mallory")
		if m.wheel || m.key {
			t.Errorf("joining with %s %q: wheel %v key %v", tc.field, tc.cred, m.wheel, m.key)
		}
		refused(m, "Mallory steers")
		m.c.Close(websocket.StatusNormalClosure, "")
	}

	// Bob hands the wheel on to Carol: his ticket stops working.
	bob3.send(t, ctx, map[string]any{"t": "hand", "to": carol.id})
	if got := bob3.until(t, ctx, "Bob's ticket withdrawn", ticketMsg)["wheel"]; got != "" {
		t.Errorf("Bob's ticket message %v, want empty", got)
	}
	t2, _ := carol.until(t, ctx, "Carol's ticket", ticketMsg)["wheel"].(string)
	if t2 == "" || t2 == t1 {
		t.Fatalf("Carol's ticket %q (Bob's %q)", t2, t1)
	}
	bob4 := dialRoomAs(t, ctx, ts, id, "wheel", t1, "Bob")
	if bob4.wheel {
		t.Error("Bob's old ticket still accepted")
	}
	refused(bob3, "Bob steers after handing on")
	refused(bob4, "Bob steers with his old ticket")
	steers(carol, ann)

	// Ann takes the wheel back: Carol's ticket stops working.
	ann.send(t, ctx, map[string]any{"t": "take"})
	if got := carol.until(t, ctx, "Carol's ticket withdrawn", ticketMsg)["wheel"]; got != "" {
		t.Errorf("Carol's ticket message %v, want empty", got)
	}
	if c2 := dialRoomAs(t, ctx, ts, id, "wheel", t2, "Carol"); c2.wheel {
		t.Error("Carol's ticket accepted after Ann took the wheel back")
	}
	refused(carol, "Carol steers after Ann took the wheel")
	steers(ann, bob4)

	// Handed to Bob, who does not come back: after the grace, Ann drives.
	ann.send(t, ctx, map[string]any{"t": "hand", "to": bob4.id})
	t3, _ := bob4.until(t, ctx, "Bob's new ticket", ticketMsg)["wheel"].(string)
	bob4.c.Close(websocket.StatusGoingAway, "")
	ann.until(t, ctx, "the wheel back with Ann after the grace", stateWith(func(st map[string]any) bool {
		return readerField(st, bob4.id, "name") == nil && st["driver"] == ann.id
	}))
	if b := dialRoomAs(t, ctx, ts, id, "wheel", t3, "Bob"); b.wheel {
		t.Error("Bob's ticket accepted after the wheel went back to Ann")
	}

	// A loan outlasts a restart: Ann, back first, does not take the wheel
	// from Bob, who is back within the grace.
	ann.send(t, ctx, map[string]any{"t": "hand", "to": carol.id})
	t4, _ := carol.until(t, ctx, "Carol's new ticket", ticketMsg)["wheel"].(string)
	ts.Close()
	s.Close()
	_, ts2 := newRoomServer(t, dir, nil, wheelGrace(5*time.Second))
	ann2 := dialRoom(t, ctx, ts2, id, key, "Ann")
	ann2.until(t, ctx, "the room without a driver", stateWith(func(st map[string]any) bool { return st["driver"] == "" }))
	carol2 := dialRoomAs(t, ctx, ts2, id, "wheel", t4, "Carol")
	if !carol2.wheel {
		t.Fatal("Carol's ticket refused after the restart")
	}
	ann2.until(t, ctx, "Carol drives after the restart", drives(carol2))
	steers(carol2, ann2)
}

func readerField(st map[string]any, id, field string) any {
	rs, _ := st["readers"].([]any)
	for _, r := range rs {
		if m, _ := r.(map[string]any); m["id"] == id {
			return m[field]
		}
	}
	return nil
}

// roomClock makes the rooms keep time by c: a test that waits a room out
// moves c past its TTL, where it slept before (and a machine slow between
// making a room and looking at it could see it expire too soon).
func roomClock(c *testclock.Clock) func(*Plan) {
	return func(p *Plan) { p.RoomStore.Now = c.Now }
}

func TestRoomExpiry(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now())
	_, ts := newRoomServer(t, t.TempDir(), func(c *Config) { c.RoomTTL = time.Hour }, roomClock(clock))
	id, key := createRoom(t, ts)
	// Joined: the room's TTL is the idle one (TestUnjoinedRoomExpires).
	dialRoom(t, testCtx(t), ts, id, key, "Ann").c.CloseNow()
	if status, _ := httpGet(t, ts.URL+"/rooms/"+id); status != 200 {
		t.Fatalf("new room: %d", status)
	}
	// Opening the room is activity: one opened within its TTL lives a TTL
	// from then.
	clock.Add(59 * time.Minute)
	if status, _ := httpGet(t, ts.URL+"/rooms/"+id); status != 200 {
		t.Fatalf("the room, opened 59 minutes after it was made: %d", status)
	}
	clock.Add(59 * time.Minute)
	if status, _ := httpGet(t, ts.URL+"/rooms/"+id); status != 200 {
		t.Fatalf("the room, 59 minutes after it was last opened: %d", status)
	}
	clock.Add(time.Hour + time.Second)
	status, body := httpGet(t, ts.URL+"/rooms/"+id)
	if status != http.StatusGone || !strings.Contains(body, "This room expired") {
		t.Errorf("after its TTL: %d %.300s", status, body)
	}
	if status, _ := httpGet(t, ts.URL+"/feeds/room-"+id+"/ws"); status != http.StatusGone {
		t.Errorf("the expired room's feed: %d, want 410", status)
	}
}

func TestRoomSurvivesRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s1, ts := newRoomServer(t, dir, nil)
	id, key := createRoom(t, ts)
	ctx := testCtx(t)
	d := dialRoom(t, ctx, ts, id, key, "Ann")
	d.send(t, ctx, map[string]any{"t": "rotate"})
	tok := d.until(t, ctx, "the new token", func(m map[string]any) bool { return m["t"] == "token" })["token"].(string)
	if tok == d.token {
		t.Fatal("rotation kept the token")
	}
	d.c.Close(websocket.StatusNormalClosure, "")
	ts.Close()
	s1.Close() // one server at a time on a data dir

	// Rooms are in JetStream's files under the data dir, not in a rooms.json;
	// no file there holds the driver key.
	if _, err := os.Stat(filepath.Join(dir, "rooms.json")); !os.IsNotExist(err) {
		t.Errorf("rooms.json: %v, want none", err)
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		if data, _ := os.ReadFile(path); strings.Contains(string(data), key) {
			t.Errorf("%s holds the driver key", path)
		}
		return nil
	})
	if files == 0 {
		t.Error("nothing stored under the data dir")
	}

	_, ts2 := newRoomServer(t, dir, nil)
	if status, _ := httpGet(t, ts2.URL+"/rooms/"+id+"?k="+key); status != 200 {
		t.Fatalf("after restart the driver link gives %d", status)
	}
	d2 := dialRoom(t, ctx, ts2, id, key, "Ann")
	if !d2.key || d2.token != tok {
		t.Errorf("after restart: key %v, token %q, want the rotated %q", d2.key, d2.token, tok)
	}
	v := dialRoom(t, ctx, ts2, id, "", "Bob")
	if v.key {
		t.Error("after restart a viewer holds the key")
	}
}

// TestRoomFeed: a relay with the room's token feeds every reader of the
// room's feed; a wrong token, another room's token or the server's global
// token is refused and the room's feed is untouched.
func TestRoomFeed(t *testing.T) {
	t.Parallel()
	s, ts := newRoomServer(t, t.TempDir(), nil)
	id, key := createRoom(t, ts)
	other, _ := createRoom(t, ts)
	ctx := testCtx(t)
	d := dialRoom(t, ctx, ts, id, key, "Ann")
	otherTok, _ := s.rooms.Store().Token(other)
	feed := "room-" + id

	for _, tc := range []struct{ name, token string }{
		{"wrong token", "nope"},
		{"another room's token", otherTok},
		{"the server's global token", testToken},
		{"no token", ""},
	} {
		h := http.Header{}
		if tc.token != "" {
			h.Set("Authorization", "Bearer "+tc.token)
		}
		_, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ingest"), &websocket.DialOptions{HTTPHeader: h})
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %v (status %v), want 401", tc.name, err, resp)
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "token") {
			t.Errorf("%s: refusal %q does not say what is wrong", tc.name, b)
		}
	}
	if v := s.live.FeedVersion(feed); v != "" {
		t.Errorf("refused relays changed the feed: version %q", v)
	}

	// Two readers of the room's feed, then a relay with the room's token.
	b1 := dialFeed(t, ctx, ts, feed)
	b2 := dialFeed(t, ctx, ts, feed)
	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		t.Fatalf("relay with the room token: %v", err)
	}
	defer rl.CloseNow()
	lines := []relay.Line{
		{ID: "1", Raw: `I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion="v1.31.0"`},
		{ID: "2", Raw: `I1130 01:02:04.000000    1234 kubelet.go:2407] "SyncLoop ADD" source="api" pods=["default/probe-me"]`},
	}
	if ack := wstest.Send(t, ctx, rl, lines...); ack != "2" {
		t.Fatalf("ack %q", ack)
	}
	for i, b := range []*websocket.Conn{b1, b2} {
		if got := readLines(t, ctx, b, 2); !strings.Contains(got, "probe-me") {
			t.Errorf("browser %d got %q", i+1, got)
		}
	}
	// A rotated token stops the relay at its next batch, and opens nothing.
	d.send(t, ctx, map[string]any{"t": "rotate"})
	d.until(t, ctx, "the new token", func(m map[string]any) bool { return m["t"] == "token" })
	b, _ := json.Marshal(map[string]any{"lines": []relay.Line{{ID: "3", Raw: "after the rotation"}}})
	if err := rl.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
	if _, _, err := rl.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("relay after rotation: %v, want closed with policy violation", err)
	}
	if _, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	}); err == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the old token after rotation: %v", err)
	}

	// The room sees the journal's kubelet version, and the driver may switch to it.
	d.until(t, ctx, "the kubelet version", stateWith(func(st map[string]any) bool { return st["kubelet_version"] == "v1.31.0" }))
	d.send(t, ctx, map[string]any{"t": "tag", "tag": "v1.99.0"}) // a tag the proxy does not serve
	d.until(t, ctx, "a refusal to switch to a tag that does not load", func(m map[string]any) bool {
		return m["t"] == "error" && strings.Contains(fmt.Sprint(m["error"]), "stays at "+fixture.Tag)
	})
	if r, _ := s.rooms.Store().Get(id); r.Tag != fixture.Tag {
		t.Errorf("room tag %q after a failed switch", r.Tag)
	}
	d.send(t, ctx, map[string]any{"t": "tag", "tag": "v1.31.0"})
	d.until(t, ctx, "reload", func(m map[string]any) bool { return m["t"] == "reload" && m["tag"] == "v1.31.0" })
	if r, _ := s.rooms.Store().Get(id); r.Tag != "v1.31.0" {
		t.Errorf("room tag %q after the switch", r.Tag)
	}

	// Metrics count the room and its readers, and do not name room feeds.
	_, body := httpGet(t, ts.URL+"/metrics")
	for _, want := range []string{"syncloop_rooms 2\n", "syncloop_room_readers 1\n", "syncloop_room_followers 0\n", "syncloop_clients{feed=\"default\"}"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	if strings.Contains(body, id) {
		t.Error("metrics name a room (its id is its viewer link)")
	}
}

func dialFeed(t testing.TB, ctx context.Context, ts *httptest.Server, feed string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ws"), nil)
	if err != nil {
		t.Fatalf("dial feed: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// readLines reads a browser feed socket until n lines arrived, and returns
// their raw text.
func readLines(t testing.TB, ctx context.Context, c *websocket.Conn, n int) string {
	t.Helper()
	var got []string
	for len(got) < n {
		_, b, err := c.Read(ctx)
		if err != nil {
			t.Fatalf("feed: %v (after %q)", err, got)
		}
		for _, part := range strings.Split(string(b), "\n") {
			var m struct {
				Line *struct{ Raw string } `json:"line"`
			}
			if json.Unmarshal([]byte(part), &m) == nil && m.Line != nil {
				got = append(got, m.Line.Raw)
			}
		}
	}
	return strings.Join(got, "\n")
}

// TestRoomSocketSameOriginOnly: another site's page cannot join a room
// through a reader's browser (the websocket checks Origin).
func TestRoomSocketSameOriginOnly(t *testing.T) {
	t.Parallel()
	_, ts := newRoomServer(t, "", nil)
	id, _ := createRoom(t, ts)
	ctx := testCtx(t)
	_, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+id+"/ws"), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {"https://evil.example"}}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin room websocket: %v %v, want 403", err, resp)
	}
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+id+"/ws"), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {ts.URL}}})
	if err != nil {
		t.Fatalf("same-origin room websocket: %v", err)
	}
	c.CloseNow()
	if _, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/AAAAAAAAAAAAAAAAAAAAAA/ws"), nil); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("websocket of no room: %v", err)
	}
}

// BenchmarkRoomSteer measures one steering message from the driver until
// every follower has the new state, with 1 follower (the baseline) and 31
// (a full room).
func BenchmarkRoomSteer(b *testing.B) {
	for _, n := range []int{1, 31} {
		b.Run(fmt.Sprintf("followers=%d", n), func(b *testing.B) {
			_, ts := newRoomServer(b, "", nil, func(p *Plan) {
				p.Rooms.MsgRate = 1e9 // measure the fan-out, not the rate limit
			})
			id, key := createRoom(b, ts)
			ctx := testCtx(b)
			d := dialRoom(b, ctx, ts, id, key, "driver")
			fs := make([]*roomClient, n)
			for i := range fs {
				fs[i] = dialRoom(b, ctx, ts, id, "", fmt.Sprint("f", i))
			}
			// Settle: every follower has seen everyone join.
			for _, f := range fs {
				f.until(b, ctx, "a full room", stateWith(func(st map[string]any) bool { rs, _ := st["readers"].([]any); return len(rs) == n+1 }))
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				want := float64(1000 + i%1e6)
				d.send(b, ctx, map[string]any{"t": "at", "case": "pleg", "first": want})
				for _, f := range fs {
					f.until(b, ctx, "the position", positionAt(want))
				}
			}
		})
	}
}
