package rooms

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/httperr"
	"github.com/syncloop/syncloop/server/internal/natstest"
	"github.com/syncloop/syncloop/server/internal/wstest"
)

// gate holds the writes (KV Update) of one key of the rooms' bucket while
// it is shut: a store write as slow as a cluster electing its leader.
type gate struct {
	mu   sync.Mutex
	key  string        // whose writes wait; "" when none do
	held chan struct{} // closed when a write waits at the gate
	open chan struct{} // closed to let the writes through
}

func (g *gate) shut(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.key, g.held, g.open = key, make(chan struct{}), make(chan struct{})
}

func (g *gate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.key != "" {
		close(g.open)
		g.key = ""
	}
}

func (g *gate) wait(ctx context.Context, key string) {
	g.mu.Lock()
	if g.key == "" || key != g.key {
		g.mu.Unlock()
		return
	}
	held, open := g.held, g.open
	select {
	case <-held:
	default:
		close(held)
	}
	g.mu.Unlock()
	select {
	case <-open:
	case <-ctx.Done():
	}
}

// gatedJS is JetStream whose KV buckets' writes wait at the gate: passed
// to the store as its Config.JS, like any JetStream.
type gatedJS struct {
	jetstream.JetStream
	g *gate
}

func (j gatedJS) CreateOrUpdateKeyValue(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := j.JetStream.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return gatedKV{kv, j.g}, nil
}

type gatedKV struct {
	jetstream.KeyValue
	g *gate
}

func (kv gatedKV) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	kv.g.wait(ctx, key)
	return kv.KeyValue.Update(ctx, key, value, rev)
}

// newService starts rooms on st (closed with the service) and serves their
// sockets.
func newService(t *testing.T, st *Store, edit ...func(*ServiceConfig)) (*Service, *httptest.Server) {
	t.Helper()
	cfg := ServiceConfig{Store: st, Site: SiteFuncs{
		Error:      func(w http.ResponseWriter, _ *http.Request, err error) { httperr.Text(w, err) },
		SameOrigin: func(*http.Request) bool { return true },
	}}
	for _, e := range edit {
		e(&cfg)
	}
	rs, err := NewService(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := chi.NewRouter()
	r.Method("GET", "/rooms/{id}/ws", rs.Socket())
	ts := httptest.NewServer(r)
	t.Cleanup(func() { ts.Close(); rs.Close() })
	return rs, ts
}

// reader is a test's room socket.
type reader struct {
	c  *websocket.Conn
	id string
}

// joinRoom opens a socket on room id, joins with key (or as a viewer) and
// reads up to its welcome.
func joinRoom(t *testing.T, ctx context.Context, ts *httptest.Server, id, key string) *reader {
	t.Helper()
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+id+"/ws"), nil)
	if err != nil {
		t.Fatalf("dial room: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	rd := &reader{c: c}
	rd.send(t, ctx, map[string]any{"t": "join", "key": key})
	rd.until(t, ctx, "the welcome", func(m map[string]any) bool {
		if m["t"] == "welcome" {
			rd.id, _ = m["you"].(string)
			return true
		}
		return false
	})
	return rd
}

func (rd *reader) send(t *testing.T, ctx context.Context, m map[string]any) {
	t.Helper()
	b, _ := json.Marshal(m)
	if err := rd.c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("send: %v", err)
	}
}

// until reads messages until ok says one is what was awaited.
func (rd *reader) until(t *testing.T, ctx context.Context, what string, ok func(map[string]any) bool) {
	t.Helper()
	for {
		_, b, err := rd.c.Read(ctx)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatalf("waiting for %s: %q: %v", what, b, err)
		}
		if ok(m) {
			return
		}
	}
}

func stateWhere(ok func(m map[string]any) bool) func(map[string]any) bool {
	return func(m map[string]any) bool { return m["t"] == "state" && ok(m) }
}

// TestSlowWriteBlocksNoOne: while one room's record write hangs (the
// driver left, and the wheel's hand-over waits for the bucket), a reader
// joins another room at once, and the same room's other readers are
// answered at once; the write, once through, is applied.
func TestSlowWriteBlocksNoOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, g, ts := gatedService(t, ctx)
	a, keyA, err := st.Create("v1.31.0", "")
	if err != nil {
		t.Fatal(err)
	}
	bRoom, _, err := st.Create("v1.31.0", "")
	if err != nil {
		t.Fatal(err)
	}

	driver := joinRoom(t, ctx, ts, a.ID, keyA)
	driver.until(t, ctx, "the driver to drive", stateWhere(func(m map[string]any) bool { return m["driver"] == driver.id }))
	viewer := joinRoom(t, ctx, ts, a.ID, "")
	viewer.until(t, ctx, "the viewer to see the driver", stateWhere(func(m map[string]any) bool { return m["driver"] == driver.id }))

	g.shut(a.ID)
	defer g.release()
	driver.c.Close(websocket.StatusNormalClosure, "") // the wheel is handed on: a write to room A's record
	select {
	case <-g.held:
	case <-ctx.Done():
		t.Fatal("the driver's leaving wrote nothing to the room's record")
	}

	// Room A's write hangs. Another room's reader joins, at once.
	quick, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	joinRoom(t, quick, ts, bRoom.ID, "")
	// Room A's own readers are answered too.
	viewer.send(t, quick, map[string]any{"t": "name", "name": "Ann"})
	viewer.until(t, quick, "the viewer's new name", stateWhere(func(m map[string]any) bool {
		rs, _ := m["readers"].([]any)
		for _, r := range rs {
			if r, _ := r.(map[string]any); r["id"] == viewer.id && r["name"] == "Ann" {
				return true
			}
		}
		return false
	}))

	// Once the write is through, the record has the wheel with no one (no
	// key holder is left).
	g.release()
	var rec Room
	if !testwait.UntilDone(ctx, func() bool { rec, err = st.Get(a.ID); return err == nil && rec.Driver == "" }) {
		t.Fatalf("room A's record after the driver left: driver %q, %v; want none", rec.Driver, err)
	}
}

// TestMetrics: the rooms' gauges, registered on the registry given, say
// how many rooms there are and who is in them here.
func TestMetrics(t *testing.T) {
	b := newBroker(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, err := Open(ctx, Config{JS: b.JS, Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	_, ts := newService(t, st, func(c *ServiceConfig) { c.Metrics = reg })
	room, key, err := st.Create("v1.31.0", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := st.Create("v1.31.0", ""); err != nil {
		t.Fatal(err)
	}
	d := joinRoom(t, ctx, ts, room.ID, key)
	d.until(t, ctx, "the driver to drive", stateWhere(func(m map[string]any) bool { return m["driver"] == d.id }))
	v := joinRoom(t, ctx, ts, room.ID, "")
	v.until(t, ctx, "the viewer to see two readers", stateWhere(func(m map[string]any) bool { rs, _ := m["readers"].([]any); return len(rs) == 2 }))
	want := map[string]float64{"syncloop_rooms": 2, "syncloop_room_readers": 2, "syncloop_room_followers": 1}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetType() != dto.MetricType_GAUGE || len(mf.GetMetric()) != 1 || len(mf.GetMetric()[0].GetLabel()) != 0 {
			t.Errorf("%s: %v, want one gauge with no labels", mf.GetName(), mf)
			continue
		}
		got[mf.GetName()] = mf.GetMetric()[0].GetGauge().GetValue()
	}
	if !maps.Equal(got, want) {
		t.Errorf("gauges %v, want %v", got, want)
	}
}

// TestServiceConfigTimings: a presence TTL no longer than the tick would
// forget every replica between its announcements: refused, saying why.
func TestServiceConfigTimings(t *testing.T) {
	_, err := NewService(ServiceConfig{PresenceTTL: time.Second, Tick: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "presence TTL") {
		t.Errorf("NewService with a TTL of 1s and a tick of 2s: %v, want refused", err)
	}
}

// TestReplicaFallsSilent, on a short presence TTL and tick
// (ServiceConfig): the wheel is with a key holder on replica 2, another
// waits on replica 1; replica 2 dies without a word. Once replica 1 has
// forgotten replica 2's readers, its key holder drives.
func TestReplicaFallsSilent(t *testing.T) {
	b1, b2 := natstest.Pair(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	short := func(c *ServiceConfig) { c.PresenceTTL, c.Tick = 400*time.Millisecond, 100*time.Millisecond }
	st1, err := Open(ctx, Config{JS: b1.JS, Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	st2, err := Open(ctx, Config{JS: b2.JS, Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	_, ts1 := newService(t, st1, short, func(c *ServiceConfig) { c.NC = b1.NC })
	_, ts2 := newService(t, st2, short, func(c *ServiceConfig) { c.NC = b2.NC })
	room, key, err := st1.Create("v1.31.0", "")
	if err != nil {
		t.Fatal(err)
	}
	far := joinRoom(t, ctx, ts2, room.ID, key)
	far.until(t, ctx, "replica 2's key holder to drive", stateWhere(func(m map[string]any) bool { return m["driver"] == far.id }))
	near := joinRoom(t, ctx, ts1, room.ID, key)
	near.until(t, ctx, "replica 1 to see replica 2's driver", stateWhere(func(m map[string]any) bool { return m["driver"] == far.id }))

	b2.NC.Close() // replica 2 dies: no goodbye, no write to the record
	far.c.CloseNow()
	start := time.Now()
	near.until(t, ctx, "replica 1's key holder to drive", stateWhere(func(m map[string]any) bool { return m["driver"] == near.id }))
	if took := time.Since(start); took < 400*time.Millisecond-presenceSettle {
		t.Errorf("the wheel moved %v after replica 2 fell silent: before its readers' presence ran out", took)
	} else {
		t.Logf("the wheel moved %v after replica 2 fell silent (presence TTL 400ms, default %v)", took, DefaultPresenceTTL)
	}
}

// TestSlowTakeBlocksNoOne: while a key holder's "take" waits for the
// bucket, the room's other readers are answered; once through, the key
// holder drives.
func TestSlowTakeBlocksNoOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st, g, ts := gatedService(t, ctx)
	room, key, err := st.Create("v1.31.0", "")
	if err != nil {
		t.Fatal(err)
	}
	driver := joinRoom(t, ctx, ts, room.ID, key)
	driver.until(t, ctx, "the driver to drive", stateWhere(func(m map[string]any) bool { return m["driver"] == driver.id }))
	other := joinRoom(t, ctx, ts, room.ID, key)
	viewer := joinRoom(t, ctx, ts, room.ID, "")
	viewer.until(t, ctx, "the viewer to see three readers", stateWhere(func(m map[string]any) bool { rs, _ := m["readers"].([]any); return len(rs) == 3 }))

	g.shut(room.ID)
	defer g.release()
	other.send(t, ctx, map[string]any{"t": "take"})
	select {
	case <-g.held:
	case <-ctx.Done():
		t.Fatal("take wrote nothing to the room's record")
	}
	quick, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	viewer.send(t, quick, map[string]any{"t": "name", "name": "Ann"})
	viewer.until(t, quick, "the viewer's new name while the take waits", stateWhere(func(m map[string]any) bool {
		rs, _ := m["readers"].([]any)
		for _, r := range rs {
			if r, _ := r.(map[string]any); r["id"] == viewer.id && r["name"] == "Ann" {
				return m["driver"] == driver.id // the take is not applied yet
			}
		}
		return false
	}))
	g.release()
	viewer.until(t, ctx, "the key holder who took the wheel to drive", stateWhere(func(m map[string]any) bool { return m["driver"] == other.id }))
}

// gatedService is a rooms service on a store whose bucket writes pass
// through g (gatedJS): a test holds one key's writes to see who waits.
func gatedService(t *testing.T, ctx context.Context) (*Store, *gate, *httptest.Server) {
	t.Helper()
	b := newBroker(t, "")
	g := &gate{}
	st, err := Open(ctx, Config{JS: gatedJS{b.JS, g}, Memory: true})
	if err != nil {
		t.Fatal(err)
	}
	_, ts := newService(t, st)
	return st, g, ts
}

// TestRoomKeepsReaders: the names given in a room, at the join or later,
// are kept on its record once each, in the order first given, so that its
// hand-in says who read it after they left; a reader who gives another's
// name is numbered; a name given after the room ended is not kept.
func TestRoomKeepsReaders(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	st := openStore(t, newBroker(t, ""), Config{Memory: true})
	_, ts := newService(t, st)
	room, key, err := st.Create("v1.31.0", "")
	if err != nil {
		t.Fatal(err)
	}
	named := func(rd *reader, name string) func(map[string]any) bool {
		return stateWhere(func(m map[string]any) bool {
			rs, _ := m["readers"].([]any)
			for _, r := range rs {
				if r, _ := r.(map[string]any); r["id"] == rd.id && r["name"] == name {
					return true
				}
			}
			return false
		})
	}
	d := joinRoom(t, ctx, ts, room.ID, key)
	d.send(t, ctx, map[string]any{"t": "name", "name": "Ann"})
	d.until(t, ctx, "Ann named", named(d, "Ann"))
	v := joinRoom(t, ctx, ts, room.ID, "")
	v.send(t, ctx, map[string]any{"t": "name", "name": "Bob"})
	v.until(t, ctx, "Bob named", named(v, "Bob"))
	d.send(t, ctx, map[string]any{"t": "name", "name": "Ann"}) // a name given again
	v.send(t, ctx, map[string]any{"t": "name", "name": "Ann"}) // another's name
	v.until(t, ctx, "Bob renamed Ann (2)", named(v, "Ann (2)"))
	// A name given at the join, on another socket.
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+room.ID+"/ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	cy := &reader{c: c}
	cy.send(t, ctx, map[string]any{"t": "join", "name": "Cy"})
	cy.until(t, ctx, "Cy's welcome", func(m map[string]any) bool { cy.id, _ = m["you"].(string); return m["t"] == "welcome" })
	if got, _ := st.Get(room.ID); !slices.Equal(got.Readers, []string{"Ann", "Bob", "Ann (2)", "Cy"}) {
		t.Errorf("the record keeps readers %q, want Ann, Bob, Ann (2), Cy", got.Readers)
	}
	if _, err := st.End(room.ID); err != nil {
		t.Fatal(err)
	}
	// An ended room tells no one of a new name: a refused message behind
	// it says when it was read.
	cy.send(t, ctx, map[string]any{"t": "name", "name": "Dee"})
	cy.send(t, ctx, map[string]any{"t": "at"})
	cy.until(t, ctx, "the refusal after the name", func(m map[string]any) bool { return m["t"] == "error" })
	if got, _ := st.Get(room.ID); !slices.Equal(got.Readers, []string{"Ann", "Bob", "Ann (2)", "Cy"}) {
		t.Errorf("after the room ended, the record keeps readers %q, want Ann, Bob, Ann (2), Cy", got.Readers)
	}
}
