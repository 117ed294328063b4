package server

import (
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
	"github.com/syncloop/syncloop/server/rooms"
)

// TestRoomImportsRoomsJSON: a data dir from a version that kept rooms in
// rooms.json starts with those rooms (their driver keys, tokens, tags),
// once: the file is renamed, and the rooms outlive a second restart
// without it.
func TestRoomImportsRoomsJSON(t *testing.T) {
	dir := t.TempDir()
	secret := func() string { s, _ := rooms.NewSecret(); return s }
	id, key, tok := secret(), secret(), secret()
	gone := secret()
	sum := func(s string) string { return rooms.TicketHash(s) }
	now := time.Now().UTC()
	old := map[string]any{
		"version": 1,
		"rooms": []map[string]any{{"id": id, "tag": "v1.31.0", "driver_key_sha256": sum(key), "ingest_token": tok,
			"created": now.Add(-time.Hour), "last_active": now.Add(-time.Minute), "owner": "192.0.2.1"}},
		"expired": map[string]any{gone: now.Add(-time.Hour)},
	}
	data, _ := json.Marshal(old)
	if err := os.WriteFile(filepath.Join(dir, "rooms.json"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	for start := range 2 {
		s, ts := newRoomServer(t, dir, nil)
		var status int
		var body string
		testwait.Until(10*time.Second, func() bool { // its tag loading; the check below says what came instead
			status, body = httpGet(t, ts.URL+"/rooms/"+id+"?k="+key)
			return status != http.StatusAccepted
		})
		if status != 200 || !strings.Contains(body, "v1.31.0") {
			t.Fatalf("start %d: the imported room's driver link: %d %.200s", start, status, body)
		}
		if status, _ := httpGet(t, ts.URL+"/rooms/"+gone); status != http.StatusGone {
			t.Errorf("start %d: a room the file knew expired: %d, want 410", start, status)
		}
		ctx := testCtx(t)
		d := dialRoom(t, ctx, ts, id, key, "Ann")
		if !d.key || d.token != tok {
			t.Errorf("start %d: joined with key %v, token %q; want the file's %q", start, d.key, d.token, tok)
		}
		if _, err := os.Stat(filepath.Join(dir, "rooms.json")); !os.IsNotExist(err) {
			t.Errorf("start %d: rooms.json is still there (%v)", start, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "rooms.json.imported")); err != nil {
			t.Errorf("start %d: %v", start, err)
		}
		d.c.Close(websocket.StatusNormalClosure, "")
		ts.Close()
		s.Close()
	}
}

// twoReplicas starts two servers on one JetStream: the first embeds NATS
// and listens, the second uses it as an external cluster. edit, if any,
// changes both's configuration.
func twoReplicas(t *testing.T, edit ...func(*Config)) (ts1, ts2 *httptest.Server) {
	t.Helper()
	_, ts1, _, ts2 = twoReplicaServers(t, nil, edit...)
	return ts1, ts2
}

// twoReplicaServers is twoReplicas with the servers, tune (if any)
// changing both's parts' own configurations.
func twoReplicaServers(t *testing.T, tune func(*Plan), edit ...func(*Config)) (s1 *Server, ts1 *httptest.Server, s2 *Server, ts2 *httptest.Server) {
	t.Helper()
	both := func(c *Config) {
		c.RoomsPerClient = 10
		for _, e := range edit {
			e(c)
		}
	}
	var tunes []func(*Plan)
	if tune != nil {
		tunes = append(tunes, tune)
	}
	s1, ts1 = newRoomServer(t, t.TempDir(), func(c *Config) { c.NATSListen = "127.0.0.1:0"; c.NATSName = "replica-1"; both(c) }, tunes...)
	s2, ts2 = newRoomServer(t, "", func(c *Config) { c.NATS = []string{s1.NATSURL()}; c.NATSName = "replica-2"; both(c) }, tunes...)
	return s1, ts1, s2, ts2
}

// dies makes s stop as a killed replica does: its NATS connection gone at
// once (no last word to the other replicas, no write to the bucket), then
// its readers' sockets.
func dies(s *Server, readers ...*roomClient) {
	s.broker.NC.Close()
	for _, r := range readers {
		r.c.CloseNow()
	}
}

// TestRoomCapsAcrossReplicas: rooms asked for on two replicas at once are
// made up to --max-rooms in all, and the rest refused with 503.
func TestRoomCapsAcrossReplicas(t *testing.T) {
	t.Parallel()
	_, ts1, _, ts2 := twoReplicaServers(t, fastCreates, func(c *Config) { c.MaxRooms, c.RoomsPerClient = 3, 100 })
	const posts = 12
	codes := make([]int, posts)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range posts {
		ts := []*httptest.Server{ts1, ts2}[i%2]
		wg.Go(func() {
			<-start
			resp, err := noRedirect.PostForm(ts.URL+"/rooms", url.Values{"tag": {fixture.Tag}})
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	close(start)
	wg.Wait()
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	if count[http.StatusSeeOther] != 3 || count[http.StatusServiceUnavailable] != posts-3 {
		t.Errorf("%d rooms asked for on two replicas at once, --max-rooms 3: %v, want 3 made (303) and the rest 503", posts, count)
	}
}

// TestRoomAcrossReplicas: a room made on one replica opens on the other;
// readers of one room on two replicas see each other, a follower on
// replica 2 follows the driver on replica 1, the wheel handed across
// replicas (lent with a ticket) is seen on both, and the ticket holder
// steers the reader on the first replica; a tag switched on one replica
// reloads the pages on the other.
func TestRoomAcrossReplicas(t *testing.T) {
	ts1, ts2 := twoReplicas(t)
	id, key := createRoom(t, ts1)
	if status, _ := httpGet(t, ts2.URL+"/rooms/"+id+"?k="+key); status != 200 {
		t.Fatalf("the room made on replica 1, on replica 2: %d", status)
	}
	ctx := testCtx(t)
	d := dialRoom(t, ctx, ts1, id, key, "Ann")
	f := dialRoom(t, ctx, ts2, id, "", "Bob")
	if !d.key || f.key {
		t.Fatalf("roles: driver key %v, follower key %v", d.key, f.key)
	}
	both := func(m map[string]any) bool {
		rs, _ := m["readers"].([]any)
		return m["driver"] == d.id && len(rs) == 2
	}
	f.until(t, ctx, "replica 2 to see Ann drive, and both readers", stateWith(both))
	d.until(t, ctx, "replica 1 to see both readers", stateWith(both))

	var took []time.Duration
	for i := range 9 {
		start := time.Now()
		d.send(t, ctx, map[string]any{"t": "at", "page": "index", "case": "pleg", "first": 120 + i, "last": 160})
		f.until(t, ctx, "the follower on replica 2 to see the driver's move", positionAt(float64(120+i)))
		took = append(took, time.Since(start))
	}
	slices.Sort(took)
	t.Logf("follow latency across replicas, 9 moves: median %v, max %v", took[4], took[8])
	if took[4] > time.Second {
		t.Errorf("a follower on another replica follows in %v (median), want within a second", took[4])
	}

	// The wheel, lent across replicas.
	d.send(t, ctx, map[string]any{"t": "hand", "to": f.id})
	ticket := f.until(t, ctx, "the wheel's ticket on replica 2", func(m map[string]any) bool { return m["t"] == "wheel" })["wheel"].(string)
	if ticket == "" {
		t.Fatal("an empty ticket")
	}
	d.until(t, ctx, "replica 1 to see Bob drive", stateWith(func(m map[string]any) bool { return m["driver"] == f.id }))
	f.until(t, ctx, "replica 2 to see Bob drive", stateWith(func(m map[string]any) bool { return m["driver"] == f.id }))
	f.send(t, ctx, map[string]any{"t": "at", "page": "index", "case": "sync", "first": 300, "last": 340})
	d.until(t, ctx, "Ann on replica 1 to follow Bob on replica 2", positionAt(300))

	// Ann steering now is refused; taking the wheel back ends the loan on replica 2.
	d.send(t, ctx, map[string]any{"t": "take"})
	f.until(t, ctx, "the ticket to end on replica 2", func(m map[string]any) bool { return m["t"] == "wheel" && m["wheel"] == "" })
	f.until(t, ctx, "replica 2 to see Ann drive again", stateWith(func(m map[string]any) bool { return m["driver"] == d.id }))

	// Ann switches the room's tag on replica 1: Bob's page on replica 2
	// is told to load again, and replica 2 serves the room at the new tag.
	d.send(t, ctx, map[string]any{"t": "tag", "tag": "v1.31.0"})
	f.until(t, ctx, "a reload to v1.31.0 on replica 2", func(m map[string]any) bool { return m["t"] == "reload" && m["tag"] == "v1.31.0" })
	var status int
	var body string
	testwait.Until(10*time.Second, func() bool { // the tag loading there; the check below says what came instead
		status, body = httpGet(t, ts2.URL+"/rooms/"+id)
		return status != http.StatusAccepted
	})
	if status != 200 || !strings.Contains(body, `data-tag="v1.31.0"`) {
		t.Errorf("the room on replica 2 after the switch: %d", status)
	}
}

// TestRoomWheelRaceAcrossReplicas: two driver-key holders join a room with
// no driver at the same moment, on two replicas: exactly one drives, and
// both replicas say the same one.
func TestRoomWheelRaceAcrossReplicas(t *testing.T) {
	t.Parallel()
	ts1, ts2 := twoReplicas(t)
	ctx := testCtx(t)
	for round := range 5 {
		id, key := createRoom(t, ts1)
		// Both replicas hold the room before the race, so that presence is settled.
		v1 := dialRoom(t, ctx, ts1, id, "", "viewer 1")
		v2 := dialRoom(t, ctx, ts2, id, "", "viewer 2")
		v1.until(t, ctx, "the viewers to see each other", stateWith(func(m map[string]any) bool { rs, _ := m["readers"].([]any); return len(rs) == 2 }))
		var wg sync.WaitGroup
		ks := make([]*roomClient, 2)
		for i, ts := range []*httptest.Server{ts1, ts2} {
			wg.Go(func() { ks[i] = dialRoom(t, ctx, ts, id, key, "key holder") })
		}
		wg.Wait()
		// Every state any reader is sent from now on names one driver:
		// the hand-over that lost was never applied anywhere.
		drivers := map[string]bool{}
		var mu sync.Mutex
		// (A read whose context ends closes the socket, and a reader who
		// leaves moves the wheel: the readers read on, only the first
		// second and a half counts.)
		until := time.Now().Add(1500 * time.Millisecond)
		for _, c := range []*roomClient{v1, v2, ks[0], ks[1]} {
			go func() {
				for {
					_, b, err := c.c.Read(ctx)
					if err != nil || time.Now().After(until) {
						return
					}
					var m map[string]any
					json.Unmarshal(b, &m)
					if d, _ := m["driver"].(string); m["t"] == "state" && d != "" {
						mu.Lock()
						drivers[d] = true
						mu.Unlock()
					}
				}
			}()
		}
		time.Sleep(time.Until(until)) // sleep: the drivers seen in the first second and a half count
		mu.Lock()
		seen := maps.Clone(drivers)
		mu.Unlock()
		if len(seen) != 1 {
			t.Fatalf("round %d: the readers were told of %d drivers: %v", round, len(seen), seen)
		}
		for d := range seen {
			if d != ks[0].id && d != ks[1].id {
				t.Fatalf("round %d: driver %s is not a key holder", round, d)
			}
		}
		for _, c := range []*roomClient{v1, v2, ks[0], ks[1]} {
			c.c.Close(websocket.StatusNormalClosure, "")
		}
	}
}

// TestRoomDriverReplicaDies: the wheel is with a reader on replica 2 and a
// driver-key holder waits on replica 1; replica 2 dies. Once replica 1 has
// forgotten replica 2's readers (they said nothing for 3.5 s), the key
// holder drives: at once when the wheel was the driver key's, after the
// grace when it was lent (its holder may have come back on a replica
// still up).
func TestRoomDriverReplicaDies(t *testing.T) {
	t.Parallel()
	const grace = time.Second
	tests := []struct {
		name string
		lent bool // the wheel was lent to a viewer on replica 2
		wait time.Duration
	}{
		{"a driver-key holder drives", false, 0},
		{"the wheel was lent", true, grace},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts1, s2, ts2 := twoReplicaServers(t, wheelGrace(grace))
			id, key := createRoom(t, ts1)
			ctx := testCtx(t)
			var d, k *roomClient
			if tt.lent {
				k = dialRoom(t, ctx, ts1, id, key, "key holder")
				d = dialRoom(t, ctx, ts2, id, "", "viewer")
				k.until(t, ctx, "replica 1 to see the viewer", stateWith(func(m map[string]any) bool { rs, _ := m["readers"].([]any); return len(rs) == 2 }))
				k.send(t, ctx, map[string]any{"t": "hand", "to": d.id})
				d.until(t, ctx, "the wheel's ticket on replica 2", func(m map[string]any) bool { return m["t"] == "wheel" && m["wheel"] != "" })
			} else {
				d = dialRoom(t, ctx, ts2, id, key, "driver")
				k = dialRoom(t, ctx, ts1, id, key, "key holder")
			}
			k.until(t, ctx, "replica 1 to see the wheel on replica 2", stateWith(func(m map[string]any) bool { return m["driver"] == d.id }))
			died := time.Now()
			dies(s2, d)
			// Read past until's 5 s: a read whose context ends closes the socket.
			for {
				m := k.read(t, ctx)
				if m["t"] == "state" && m["driver"] == k.id {
					break
				}
			}
			took := time.Since(died)
			t.Logf("the key holder drives %v after replica 2 died", took.Round(10*time.Millisecond))
			// Its readers are forgotten after 3.5 s of silence (its last
			// word was up to a second before it died), on replica 1's
			// once-a-second tick; the driver is judged absent a tick later,
			// then the grace runs, to a tick. And two seconds for a loaded
			// machine.
			if least := 2500*time.Millisecond + tt.wait; took < least {
				t.Errorf("the wheel moved %v after replica 2 died, before its readers could be forgotten (%v)", took, least)
			}
			if most := 3500*time.Millisecond + 2*time.Second + tt.wait + time.Second + 2*time.Second; took > most {
				t.Errorf("the wheel moved %v after replica 2 died, want within %v", took, most)
			}
		})
	}
}

// TestRoomTokenOnEveryReplica: a relay may post a room's journal to any
// replica: a room made on replica 1 takes its token on replica 2, and a
// rotation on replica 1 stops the old token on replica 2 (and starts the
// new one) once replica 2's copy of the records has it.
func TestRoomTokenOnEveryReplica(t *testing.T) {
	ts1, ts2 := twoReplicas(t)
	id, key := createRoom(t, ts1)
	ctx := testCtx(t)
	d := dialRoom(t, ctx, ts1, id, key, "Ann")
	ingest := func(token string) (*websocket.Conn, int) {
		c, resp, err := websocket.Dial(ctx, wstest.URL(ts2, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + token}},
		})
		if err != nil {
			if resp == nil {
				t.Fatalf("relay to replica 2: %v", err)
			}
			return nil, resp.StatusCode
		}
		return c, http.StatusSwitchingProtocols
	}
	rl, code := ingest(d.token)
	if rl == nil {
		t.Fatalf("relay with the room's token on replica 2: status %d", code)
	}
	if ack := wstest.Send(t, ctx, rl, relay.Line{ID: "1", Raw: `I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion="v1.31.0"`}); ack != "1" {
		t.Fatalf("ack %q", ack)
	}
	rl.Close(websocket.StatusNormalClosure, "")

	d.send(t, ctx, map[string]any{"t": "rotate"})
	tok := d.until(t, ctx, "the new token", func(m map[string]any) bool { return m["t"] == "token" })["token"].(string)
	var old int
	if !testwait.UntilDone(ctx, func() bool { _, old = ingest(d.token); return old == http.StatusUnauthorized }) {
		t.Fatalf("the rotated-out token on replica 2: status %d, want 401", old)
	}
	rl, code = ingest(tok)
	if rl == nil {
		t.Fatalf("relay with the new token on replica 2: status %d", code)
	}
	rl.CloseNow()
}
