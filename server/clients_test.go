package server

// Issue 11, "one client cannot lock the others out": the client address,
// the caps per client, the pings, and the close codes of refusals.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/testclock"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
	"github.com/syncloop/syncloop/server/rooms"
)

// fastCreates lifts the rate of room creation: the rate is not what is tested.
func fastCreates(p *Plan) { p.Rooms.CreateRate, p.Rooms.CreateBurst = 1000, 1000 }

// One address holds at most RoomsPerClient rooms at once, even at a
// creation rate that would let it fill --max-rooms (before: all 48). The
// address is the socket's, unless a trusted proxy names the client.
func TestRoomsPerClient(t *testing.T) {
	t.Parallel()
	fill := func(t *testing.T, s *Server, ts *httptest.Server, header ...string) int {
		made := 0
		for range s.rooms.Store().MaxRooms() {
			switch code := postRoom(t, ts, header...).StatusCode; code {
			case http.StatusSeeOther:
				made++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("POST /rooms: %d", code)
			}
		}
		return made
	}
	t.Run("one address", func(t *testing.T) {
		s, ts := newRoomServer(t, "", func(c *Config) { c.MaxRooms = 48 }, fastCreates)
		if n := fill(t, s, ts); n != rooms.DefaultPerOwner {
			t.Errorf("one address made %d of %d rooms, want %d", n, s.rooms.Store().MaxRooms(), rooms.DefaultPerOwner)
		}
		// X-Forwarded-For from a peer that is not a trusted proxy changes nothing.
		if n := fill(t, s, ts, "X-Forwarded-For", "198.51.100.7"); n != 0 {
			t.Errorf("an untrusted X-Forwarded-For made %d more rooms", n)
		}
	})
	t.Run("behind a trusted proxy", func(t *testing.T) {
		s, ts := newRoomServer(t, "", func(c *Config) {
			c.MaxRooms, c.RoomsPerClient = 48, 2
			c.TrustedProxies, _ = clients.ParseTrustedProxies("127.0.0.0/8,::1/128")
		}, fastCreates)
		a := fill(t, s, ts, "X-Forwarded-For", "198.51.100.7")
		b := fill(t, s, ts, "X-Forwarded-For", "198.51.100.8")
		if a != 2 || b != 2 {
			t.Errorf("two clients behind the proxy made %d and %d rooms, want 2 each", a, b)
		}
	})
}

// A room nobody joined ends after RoomUnjoinedTTL (before: --room-ttl, a
// day); one whose socket a reader opened lives on.
func TestUnjoinedRoomExpires(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now())
	_, ts := newRoomServer(t, t.TempDir(), func(c *Config) { c.RoomUnjoinedTTL = 10 * time.Minute }, roomClock(clock))
	unjoined, _ := createRoom(t, ts)
	joined, key := createRoom(t, ts)
	dialRoom(t, testCtx(t), ts, joined, key, "Ann").c.CloseNow()
	if status, _ := httpGet(t, ts.URL+"/rooms/"+unjoined); status != 200 {
		t.Fatalf("new room: %d", status)
	}
	clock.Add(10*time.Minute + time.Second)
	if status, _ := httpGet(t, ts.URL+"/rooms/"+unjoined); status != http.StatusGone {
		t.Errorf("a room nobody joined, after RoomUnjoinedTTL: %d, want 410", status)
	}
	if status, _ := httpGet(t, ts.URL+"/rooms/"+joined); status != 200 {
		t.Errorf("a joined room: %d, want 200", status)
	}
}

// Before: 63 browser sockets to made-up feed names filled the 64 feeds,
// and a room's relay was refused "too many feeds". Now such a socket is
// refused 404 before the upgrade and creates nothing.
func TestBogusFeedSocketsCreateNoFeed(t *testing.T) {
	t.Parallel()
	s, ts := newRoomServer(t, "", nil)
	ctx := testCtx(t)
	for i := range feeds.MaxFeeds - 1 {
		c, resp, err := websocket.Dial(ctx, wstest.URL(ts, fmt.Sprint("/feeds/made-up-", i, "/ws")), nil)
		if err == nil {
			defer c.CloseNow()
			t.Fatalf("a browser socket to made-up feed %d was accepted", i)
		}
		if resp == nil || resp.StatusCode != http.StatusNotFound {
			t.Fatalf("made-up feed %d: %v, want 404", i, err)
		}
	}
	if n := gauge(t, s, "syncloop_feeds"); n != 1 {
		t.Errorf("%d feeds after the made-up sockets, want the default alone", n)
	}
	id, key := createRoom(t, ts)
	d := dialRoom(t, ctx, ts, id, key, "Ann")
	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + d.token}},
	})
	if err != nil {
		t.Fatalf("the room's relay: %v", err)
	}
	defer rl.CloseNow()
	if ack := wstest.Send(t, ctx, rl, relay.Line{ID: "1", Raw: "a line"}); ack != "1" {
		t.Errorf("the room's relay: ack %q", ack)
	}
	// The room's feed and the default are the server's: browsers open them.
	for _, feed := range []string{"default", "room-" + id} {
		c := dialFeed(t, ctx, ts, feed)
		if _, _, err := c.Read(ctx); err != nil {
			t.Errorf("feed %s: %v", feed, err)
		}
	}
}

// One client holds at most SocketsPerClient browser sockets, feed and room
// sockets together; another client (named by a trusted proxy) is not held
// back by it, and a closed socket frees its place.
func TestSocketsPerClient(t *testing.T) {
	_, ts := newRoomServer(t, "", func(c *Config) {
		c.SocketsPerClient = 3
		c.TrustedProxies, _ = clients.ParseTrustedProxies("127.0.0.0/8,::1/128")
	})
	id, _ := createRoom(t, ts)
	ctx := testCtx(t)
	dial := func(path, client string) (*websocket.Conn, int) {
		c, resp, err := websocket.Dial(ctx, wstest.URL(ts, path), &websocket.DialOptions{HTTPHeader: http.Header{"X-Forwarded-For": {client}}})
		if err != nil {
			if resp == nil {
				t.Fatal(err)
			}
			return nil, resp.StatusCode
		}
		t.Cleanup(func() { c.CloseNow() })
		go drain(ctx, c)
		return c, http.StatusSwitchingProtocols
	}
	var open []*websocket.Conn
	for _, path := range []string{"/feeds/default/ws", "/rooms/" + id + "/ws", "/feeds/room-" + id + "/ws"} {
		c, code := dial(path, "198.51.100.1")
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("%s: %d", path, code)
		}
		open = append(open, c)
	}
	for _, path := range []string{"/feeds/default/ws", "/rooms/" + id + "/ws"} {
		if _, code := dial(path, "198.51.100.1"); code != http.StatusTooManyRequests {
			t.Errorf("a fourth socket (%s): %d, want 429", path, code)
		}
	}
	if _, code := dial("/feeds/default/ws", "198.51.100.2"); code != http.StatusSwitchingProtocols {
		t.Errorf("another client: %d", code)
	}
	open[0].Close(websocket.StatusNormalClosure, "")
	testwait.For(t, 5*time.Second, "a closed socket freeing its place", func() bool {
		_, code := dial("/feeds/default/ws", "198.51.100.1")
		return code == http.StatusSwitchingProtocols
	})
}

// A browser that stops answering (here: stops reading, so it never sees
// the pings) is closed after a ping goes unanswered, and no longer holds
// its feed subscription or its place in the room.
func TestPingClosesSilentSockets(t *testing.T) {
	s, ts := newRoomServer(t, "", func(c *Config) { c.PingEvery = 100 * time.Millisecond })
	id, _ := createRoom(t, ts)
	ctx := testCtx(t)
	feed := dialFeed(t, ctx, ts, "default") // never read
	room, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+id+"/ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer room.CloseNow()
	_ = feed
	subscribers := func() int { return gauge(t, s, `syncloop_clients{feed="default"}`) }
	testwait.For(t, 10*time.Second, "the silent sockets to be counted", func() bool {
		_, readers, _ := s.rooms.Counts()
		return subscribers() == 1 && readers == 1
	})
	testwait.For(t, 10*time.Second, "the silent sockets to be closed", func() bool {
		_, readers, _ := s.rooms.Counts()
		return subscribers() == 0 && readers == 0
	})
	if n := s.sockets.Unanswered(); n != 2 {
		t.Errorf("%d sockets counted unanswered, want 2", n)
	}
	// A browser that reads answers the pings and stays.
	go drain(ctx, dialFeed(t, ctx, ts, "default"))
	time.Sleep(500 * time.Millisecond) // sleep: five pings' time, in which an unanswered one would close it
	if n := subscribers(); n != 1 {
		t.Errorf("a reading browser: %d subscribers after five pings, want 1", n)
	}
}

// gauge reads a gauge's value from the server's /metrics, as outside
// checks do.
func gauge(t *testing.T, s *Server, series string) int {
	t.Helper()
	for line := range strings.Lines(get(t, s, "/metrics").Body.String()) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), series+" "); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %v", series, err)
			}
			return n
		}
	}
	t.Fatalf("/metrics has no %s", series)
	return 0
}

// drain reads c until it fails, as a browser does: reading is what answers pings.
func drain(ctx context.Context, c *websocket.Conn) {
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
	}
}

// Permanent refusals close with a 4xxx code, on which the pages stop
// reconnecting: an expired room's sockets, room and feed (4410), a feed let
// go under its readers (4404); the full room's 4429 is in TestRoomLimits.
func TestRefusalCloseCodes(t *testing.T) {
	t.Parallel()
	clock := testclock.New(time.Now())
	s, ts := newRoomServer(t, "", func(c *Config) { c.RoomTTL = time.Hour }, roomClock(clock))
	ctx := testCtx(t)
	id, _ := createRoom(t, ts)
	b := dialFeed(t, ctx, ts, "room-"+id)
	if _, _, err := b.Read(ctx); err != nil { // the hello
		t.Fatal(err)
	}
	s.live.DropFeed("room-" + id) // what the rooms' housekeeping does when a room expires
	_, _, err := b.Read(ctx)
	if websocket.CloseStatus(err) != feeds.CloseFeedGone {
		t.Errorf("a feed let go: %v, want close %d", err, feeds.CloseFeedGone)
	}
	clock.Add(time.Hour + time.Second)
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+id+"/ws"), nil)
	if err != nil {
		t.Fatalf("an expired room's socket: %v, want an upgrade and a close code", err)
	}
	defer c.CloseNow()
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != rooms.CloseGone {
		t.Errorf("an expired room's socket: %v, want close %d", err, rooms.CloseGone)
	}
	f, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+id+"/ws"), nil)
	if err != nil {
		t.Fatalf("an expired room's feed socket: %v, want an upgrade and a close code", err)
	}
	defer f.CloseNow()
	if _, _, err := f.Read(ctx); websocket.CloseStatus(err) != rooms.CloseGone {
		t.Errorf("an expired room's feed socket: %v, want close %d", err, rooms.CloseGone)
	}
	if status, _ := httpGet(t, ts.URL+"/rooms/"+id+"/ws"); status != http.StatusGone {
		t.Errorf("an expired room's socket address, not as a websocket: %d, want 410", status)
	}
	if _, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/AAAAAAAAAAAAAAAAAAAAAA/ws"), nil); err == nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("no such room: %v, want 404", err)
	}
}

// /healthz is 503 with the reason while the default Reading loads or a
// directory the server writes cannot be written, 200 otherwise; /livez
// is 200 all along.
func TestHealthz(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	fl := &fixture.Loader{Hold: map[string]chan struct{}{fixture.Tag: hold}}
	fl.Readings = nil
	dataDir := filepath.Join(t.TempDir(), "data")
	s, err := Open(Config{DefaultTag: fixture.Tag, CacheDir: t.TempDir(), DataDir: dataDir, Load: fl.Load, Getenv: func(string) string { return "" }, DemoPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check := func(when string, code int, body string) {
		t.Helper()
		rec := get(t, s, "/healthz")
		if rec.Code != code || !strings.Contains(rec.Body.String(), body) {
			t.Errorf("%s: %d %q, want %d %q", when, rec.Code, rec.Body.String(), code, body)
		}
	}
	check("while the default Reading loads", 503, "not ready: the default tag "+fixture.Tag+" is still loading")
	if rec := get(t, s, "/livez"); rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Errorf("/livez while the default Reading loads: %d %q, want 200 ok", rec.Code, rec.Body.String())
	}
	fl.Mu.Lock()
	fl.Readings = map[string]*extractor.Reading{fixture.Tag: fixture.Reading(t)}
	fl.Mu.Unlock()
	close(hold)
	waitLoaded(t, s, fixture.Tag)
	check("loaded", 200, "ok\n")
	// The data dir turns into a file: rooms cannot be saved.
	if err := os.RemoveAll(dataDir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dataDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	check("the data dir unwritable", 503, "cannot write rooms in "+dataDir)
}

// The metric names and types are a public contract (outside checks read
// syncloop_lines_ingested_total{feed=…}): a rename must fail here, and be
// written in the README.
func TestMetricNames(t *testing.T) {
	t.Parallel()
	_, ts := newRoomServer(t, "", nil)
	// A family with no sample yet is not exposed (client_golang): relay a
	// line of a case, so that every family has one.
	ctx := testCtx(t)
	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	defer rl.CloseNow()
	lines := caseLines(fixture.Reading(t), 1, "pleg")
	if ack := wstest.Send(t, ctx, rl, lines...); ack != lines[len(lines)-1].ID {
		t.Fatalf("ack %q", ack)
	}
	_, body := httpGet(t, ts.URL+"/metrics")
	got := map[string]string{}
	for line := range strings.Lines(body) {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			got[f[2]] = f[3]
		}
	}
	want := map[string]string{
		"syncloop_lines_ingested_total":     "counter",
		"syncloop_lines_by_case_total":      "counter",
		"syncloop_lines_dropped_total":      "counter",
		"syncloop_clients":                  "gauge",
		"syncloop_feeds":                    "gauge",
		"syncloop_sockets_refused_total":    "counter",
		"syncloop_sockets_unanswered_total": "counter",
		"syncloop_rooms":                    "gauge",
		"syncloop_room_readers":             "gauge",
		"syncloop_room_followers":           "gauge",
		"syncloop_line_stage_seconds":       "histogram",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metrics and types:\n got %v\nwant %v", got, want)
	}
	for _, sample := range []string{`syncloop_lines_ingested_total{feed="default"} 2`, `syncloop_lines_by_case_total{case="pleg",feed="default"} 1`, "syncloop_feeds 1\n"} {
		if !strings.Contains(body, sample) {
			t.Errorf("no sample %q in\n%s", sample, body)
		}
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name := range want {
		if !strings.Contains(string(readme), "| `"+name) {
			t.Errorf("the README does not document %s", name)
		}
	}
}
