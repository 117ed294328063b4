package main

// End-to-end test of pair-reading rooms across restarts of the real
// process: a room made over HTTP must outlive `syncloop serve` stopped
// with SIGTERM and killed with SIGKILL, on the same --data-dir, with its
// driver key, viewer link, ingest token and lent wheel; and a room left
// idle past --room-ttl must answer 410, and go on answering 410 when the
// server is killed and started again with a longer TTL. What the readers
// wrote (their notes, in the embedded NATS under --data-dir) outlives the
// restarts with the room, and goes with it.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
)

func TestE2ERoomsSurviveRestart(t *testing.T) {
	t.Parallel() // its own processes, ports and directories
	bin := syncloopBin(t)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	copyReadingCache(cache, extractor.DefaultTag)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	base := "http://" + addr
	serve := func(name string, extra ...string) *proc {
		t.Helper()
		args := append([]string{"serve", "--addr", addr, "--cache-dir", cache, "--data-dir", filepath.Join(dir, "data"), "--log-level", "warn"}, extra...)
		p := start(t, name, bin, args...)
		waitHealthy(t, base, p)
		waitReading(t, base)
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	srv := serve("serve-1")
	id, key := e2eCreateRoom(t, base)
	// Ann drives; she hands the wheel to Bob, whose ticket must outlive
	// the restarts as her key does.
	ann := e2eJoinRoom(t, ctx, addr, id, "key", key)
	if !ann.welcome["key"].(bool) {
		t.Fatalf("the driver key is refused: %v", ann.welcome)
	}
	token, _ := ann.welcome["token"].(string)
	bob := e2eJoinRoom(t, ctx, addr, id, "", "")
	ann.send(t, ctx, map[string]any{"t": "hand", "to": bob.welcome["you"]})
	ticket, _ := bob.until(t, ctx, "Bob's wheel ticket", func(m map[string]any) bool { return m["t"] == "wheel" })["wheel"].(string)
	if ticket == "" || token == "" {
		t.Fatalf("ticket %q, token %q", ticket, token)
	}
	ann.c.Close(websocket.StatusNormalClosure, "")
	bob.c.Close(websocket.StatusNormalClosure, "")
	req, _ := http.NewRequest("PUT", base+"/rooms/"+id+"/notes/case.config", strings.NewReader(`{"text":"written before the restarts","author":"Ann","rev":0}`))
	req.Header.Set("Content-Type", "application/json")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Fatalf("PUT a note: %v %v", err, resp)
	}

	// check says the room is whole: its pages, its driver key (with the
	// same ingest token), the lent wheel, and a viewer who cannot steer.
	check := func(when string) {
		t.Helper()
		for _, tc := range []struct {
			path   string
			status int
			want   string
		}{
			{"/rooms/" + id, 200, `data-room="` + id + `"`},
			{"/rooms/" + id + "?k=" + url.QueryEscape(key), 200, `data-room="` + id + `"`},
			{"/rooms/" + id + "/pod-workers", 200, `data-room="` + id + `"`},
			{"/rooms/" + id + "?k=" + key[:21] + string(key[21]^1), 403, "This driver link is not valid"},
		} {
			if status, body := e2eGet(t, base+tc.path); status != tc.status || !strings.Contains(body, tc.want) {
				t.Errorf("%s: GET %s: %d, want %d with %q", when, tc.path, status, tc.status, tc.want)
			}
		}
		// The notes: 503 while the tag's Reading loads, then the note.
		var status int
		var body string
		testwait.UntilEvery(time.Minute, 200*time.Millisecond, func() bool { // the check below says what came instead
			status, body = e2eGet(t, base+"/rooms/"+id+"/notes")
			return status != http.StatusServiceUnavailable
		})
		// Signed by the server: the client that wrote it gave no name in
		// the room (the body's "author" is not read).
		if want := `"text":"written before the restarts","author":"anonymous"`; status != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: the room's notes: %d %.300s, want %s", when, status, body, want)
		}
		d := e2eJoinRoom(t, ctx, addr, id, "key", key)
		if d.welcome["key"] != true || d.welcome["token"] != token {
			t.Errorf("%s: the driver key's welcome %v, want the key and token %q", when, d.welcome, token)
		}
		b := e2eJoinRoom(t, ctx, addr, id, "wheel", ticket)
		if b.welcome["wheel"] != true {
			t.Errorf("%s: Bob's ticket refused: %v", when, b.welcome)
		}
		d.until(t, ctx, "Bob drives", func(m map[string]any) bool { return m["t"] == "state" && m["driver"] == b.welcome["you"] })
		v := e2eJoinRoom(t, ctx, addr, id, "", "")
		if v.welcome["key"] != false || v.welcome["token"] != nil {
			t.Errorf("%s: a viewer's welcome %v", when, v.welcome)
		}
		v.send(t, ctx, map[string]any{"t": "at", "case": "pleg", "first": 1})
		if e := v.until(t, ctx, "the viewer refused", func(m map[string]any) bool { return m["t"] == "error" }); !strings.Contains(fmt.Sprint(e["error"]), "only the driver") {
			t.Errorf("%s: a viewer steers: %v", when, e)
		}
		for _, c := range []*e2eRoomConn{d, b, v} {
			c.c.Close(websocket.StatusNormalClosure, "")
		}
	}
	check("before any restart")

	if err := srv.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-srv.done:
		srv.done <- err
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop within 15 s of SIGTERM")
	}
	srv = serve("serve-2")
	check("after SIGTERM")

	sigkill(t, srv)
	srv = serve("serve-3")
	check("after SIGKILL")

	// Idle past a TTL of 1 s: the room expired, and its links say so.
	sigkill(t, srv)
	time.Sleep(1500 * time.Millisecond) // sleep: the room's TTL of 1 s passes with no one in it
	expired := func(when string) {
		t.Helper()
		for _, path := range []string{"/rooms/" + id, "/rooms/" + id + "?k=" + url.QueryEscape(key), "/rooms/" + id + "/pod-workers"} {
			if status, body := e2eGet(t, base+path); status != http.StatusGone || !strings.Contains(body, "This room expired") {
				t.Errorf("%s: GET %s: %d %.200q, want 410 This room expired", when, path, status, body)
			}
		}
		if status, _ := e2eGet(t, base+"/rooms/"+id+"/ws"); status != http.StatusGone {
			t.Errorf("%s: the room's websocket: %d, want 410", when, status)
		}
		if status, _ := e2eGet(t, base+"/feeds/room-"+id+"/ws"); status != http.StatusGone {
			t.Errorf("%s: the room's feed: %d, want 410", when, status)
		}
		if status, _ := e2eGet(t, base+"/rooms/"+id+"/notes"); status != http.StatusGone {
			t.Errorf("%s: the room's notes: %d, want 410", when, status)
		}
	}
	srv = serve("serve-4", "--room-ttl", "1s")
	expired("idle past --room-ttl 1s")
	// Killed at once and started with the default TTL, it stays expired.
	sigkill(t, srv)
	serve("serve-5")
	expired("killed, then started with --room-ttl 24h")
}

// e2eCreateRoom starts a room as the reading page's form does, and returns
// its id and driver key from the redirect to the driver link.
func e2eCreateRoom(t *testing.T, base string) (id, key string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/rooms", strings.NewReader("tag="+extractor.DefaultTag))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	u, err := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || err != nil {
		t.Fatalf("POST /rooms: %d, Location %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	id, _ = strings.CutPrefix(u.Path, "/rooms/")
	key = u.Query().Get("k")
	if len(id) != 22 || len(key) != 22 {
		t.Fatalf("driver link %q", u)
	}
	return id, key
}

// waitReading waits until the server at base serves the default tag's
// page: the copied cache may hold no Reading of the current Schema, and then
// the first server fetches (and verifies) the tag before it can show a room.
func waitReading(t *testing.T, base string) {
	t.Helper()
	var status int
	var body string
	if !testwait.UntilEvery(3*time.Minute, 500*time.Millisecond, func() bool {
		status, body = e2eGet(t, base+"/k8s/"+extractor.DefaultTag+"/")
		return status != http.StatusAccepted
	}) || status != http.StatusOK {
		t.Fatalf("GET /k8s/%s/: %d\n%s", extractor.DefaultTag, status, body)
	}
}

func e2eGet(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// e2eRoomConn is a room websocket, as a browser's room.js holds it.
type e2eRoomConn struct {
	c       *websocket.Conn
	welcome map[string]any
}

// e2eJoinRoom joins room id presenting a credential (field "key" or
// "wheel"; none when ""), and returns the connection with its welcome.
func e2eJoinRoom(t *testing.T, ctx context.Context, addr, id, field, cred string) *e2eRoomConn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, "ws://"+addr+"/rooms/"+id+"/ws", nil)
	if err != nil {
		t.Fatalf("join room: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	rc := &e2eRoomConn{c: c}
	join := map[string]any{"t": "join", "name": "e2e"}
	if field != "" {
		join[field] = cred
	}
	rc.send(t, ctx, join)
	rc.welcome = rc.until(t, ctx, "the welcome", func(m map[string]any) bool { return m["t"] == "welcome" })
	return rc
}

func (rc *e2eRoomConn) send(t *testing.T, ctx context.Context, m map[string]any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if err := rc.c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("send %v: %v", m, err)
	}
}

// until reads messages until one satisfies ok, for at most 10 s.
func (rc *e2eRoomConn) until(t *testing.T, ctx context.Context, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		_, b, err := rc.c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if ok(m) {
			return m
		}
	}
}
