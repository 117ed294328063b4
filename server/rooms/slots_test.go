package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/natstest"
)

// twoStores opens two stores on one JetStream, each on its own NATS
// connection, as two replicas do: the first embeds NATS and listens, the
// second connects to it.
func twoStores(t *testing.T, cfg Config) (s1, s2 *Store) {
	t.Helper()
	b1, b2 := natstest.Pair(t, "")
	s1 = openStore(t, b1, cfg)
	cfg.Memory = b1.Memory // the buckets are in b1's memory
	s2 = openStore(t, b2, cfg)
	return s1, s2
}

// createAtOnce calls Create n times at the same moment, alternately on
// each store, for owner(i), and returns how many rooms were made, failing
// the test for any error but want.
func createAtOnce(t *testing.T, stores []*Store, n int, owner func(int) string, want error) int {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		s := stores[i%len(stores)]
		wg.Go(func() {
			<-start
			_, _, errs[i] = s.Create("v1.37.2", owner(i))
		})
	}
	close(start)
	wg.Wait()
	made := 0
	for i, err := range errs {
		switch {
		case err == nil:
			made++
		case !errors.Is(err, want):
			t.Errorf("Create %d on replica %d: %v, want %v", i, i%len(stores)+1, err, want)
		}
	}
	return made
}

// TestCapsAcrossReplicas: many rooms asked for at the same moment on two
// replicas: exactly as many are made as the cap allows, in the whole
// cluster, and every other Create is refused with the cap's error.
func TestCapsAcrossReplicas(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		owner func(i int) string
		want  error
	}{
		{"rooms", Config{MaxRooms: 3, PerOwner: 100}, func(i int) string { return fmt.Sprintf("192.0.2.%d", i) }, ErrFull},
		{"rooms per client", Config{MaxRooms: 100, PerOwner: 3}, func(int) string { return "192.0.2.1" }, ErrOwnerFull},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s1, s2 := twoStores(t, tt.cfg)
			const tries = 24
			made := createAtOnce(t, []*Store{s1, s2}, tries, tt.owner, tt.want)
			if cap := min(tt.cfg.MaxRooms, tt.cfg.PerOwner); made != cap {
				t.Errorf("%d rooms made by %d Creates on two replicas at once, want the cap, %d", made, tries, cap)
			}
		})
	}
}

// natsCluster starts three clustered NATS servers with JetStream in this
// process, and returns their client URLs.
func natsCluster(t *testing.T) []string {
	t.Helper()
	var routes []*url.URL
	for range 3 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		routes = append(routes, &url.URL{Scheme: "nats", Host: l.Addr().String()})
		l.Close()
	}
	var nodes []*natsserver.Server
	for i, r := range routes {
		port, _ := strconv.Atoi(r.Port())
		ns, err := natsserver.NewServer(&natsserver.Options{ServerName: fmt.Sprint("n", i), Host: "127.0.0.1", Port: natsserver.RANDOM_PORT,
			JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true, Routes: routes,
			Cluster: natsserver.ClusterOpts{Name: "rooms-test", Host: "127.0.0.1", Port: port}})
		if err != nil {
			t.Fatal(err)
		}
		ns.Start()
		t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
		nodes = append(nodes, ns)
	}
	var urls []string
	for i, ns := range nodes {
		if !ns.ReadyForConnections(30 * time.Second) {
			t.Fatalf("nats server %d not ready", i)
		}
		urls = append(urls, ns.ClientURL())
	}
	return urls
}

// TestCapsInACluster: the caps hold with the buckets replicated on three
// NATS servers, two replicas on two of them, also when the slots were
// held and let go before (a Create then races others over the key's
// marker, which a replicated stream refuses with its own error code).
func TestCapsInACluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts three NATS servers")
	}
	urls := natsCluster(t)
	c := newClock()
	var stores []*Store
	for _, u := range urls[:2] {
		b, err := broker.Open(context.Background(), broker.Config{URLs: []string{u}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Close)
		if b.Replicas != 3 {
			t.Fatalf("%d replicas of a stream on three servers", b.Replicas)
		}
		cfg := Config{JS: b.JS, Replicas: b.Replicas, MaxRooms: 3, PerOwner: 100, TTL: time.Hour, Now: c.Now}
		// The cluster answers JetStream once it has elected a leader.
		var s *Store
		err = broker.Retry(context.Background(), time.Minute, func(ctx context.Context) error {
			var err error
			s, err = Open(ctx, cfg)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	owner := func(i int) string { return fmt.Sprintf("192.0.2.%d", i) }
	for round := range 3 {
		if made := createAtOnce(t, stores, 12, owner, ErrFull); made != 3 {
			t.Errorf("round %d: %d rooms made by 12 Creates on two replicas at once, want 3", round, made)
		}
		c.Add(2 * time.Hour)
		for _, s := range stores {
			if _, err := s.Sweep(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestSlotFreed: a room that expires (swept on one replica, or found
// expired by a Create on the other) makes way for a new one, on either
// replica, and its client's cap is freed with it.
func TestSlotFreed(t *testing.T) {
	c := newClock()
	s1, s2 := twoStores(t, Config{MaxRooms: 1, PerOwner: 1, TTL: time.Hour, Now: c.Now})
	r, _, err := s1.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.MarkJoined(r.ID); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Create("v1.37.2", "192.0.2.2"); !errors.Is(err, ErrFull) {
		t.Fatalf("a second room, on the other replica: %v, want ErrFull", err)
	}
	c.Add(2 * time.Hour)
	if _, err := s1.Sweep(); err != nil {
		t.Fatal(err)
	}
	for _, k := range r.Slots {
		if h := slotHolder(t, s1, k); h != "" {
			t.Errorf("after the room expired, its slot %s still names %s", k, h)
		}
	}
	// Swept on replica 1: replica 2 makes the next room, for the same client.
	r2, _, err := s2.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatalf("after the room expired on replica 1, a room on replica 2: %v", err)
	}
	s2.MarkJoined(r2.ID)
	if _, _, err := s1.Create("v1.37.2", "192.0.2.3"); !errors.Is(err, ErrFull) {
		t.Fatalf("with the new room held: %v, want ErrFull", err)
	}
	// Its time up and no Sweep yet: a Create on replica 1 finds it so.
	c.Add(2 * time.Hour)
	if _, _, err := s1.Create("v1.37.2", "192.0.2.1"); err != nil {
		t.Fatalf("after the room on replica 2 expired, unswept, a room on replica 1: %v", err)
	}
	if _, err := s2.Get(r2.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("the room whose slot was taken back: %v, want ErrExpired", err)
	}
}

// slotHolder is the room id the slot at key names, "" when it is free.
func slotHolder(t *testing.T, s *Store, key string) string {
	t.Helper()
	e, err := s.slots.Get(context.Background(), key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Value())
}

// TestSlotTakenBack: a slot left behind (by a replica that died between
// its steps) is taken back by a Create that needs it, once its room
// cannot be in use: at once when the room's record is deleted, after the
// grace when no record names it (its Create may still be under way).
func TestSlotTakenBack(t *testing.T) {
	t.Run("its room deleted", func(t *testing.T) {
		s1, s2 := twoStores(t, Config{MaxRooms: 1})
		r, _, err := s1.Create("v1.37.2", "192.0.2.1")
		if err != nil {
			t.Fatal(err)
		}
		// As a replica that expired the room and died before letting its slots go.
		if err := s1.kv.Delete(context.Background(), r.ID); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 10*time.Second, "replica 2 to see the room gone", func() bool { _, err := s2.Get(r.ID); return errors.Is(err, ErrExpired) })
		if slotHolder(t, s2, r.Slots[0]) != r.ID {
			t.Fatal("the slot was let go: nothing to take back")
		}
		if _, _, err := s2.Create("v1.37.2", "192.0.2.1"); err != nil {
			t.Errorf("a room after the only one was deleted, its slot left behind: %v", err)
		}
	})
	t.Run("no room", func(t *testing.T) {
		const grace = 300 * time.Millisecond
		s1, s2 := twoStores(t, Config{MaxRooms: 1, creationGrace: grace})
		// As a replica that died between taking the slot and writing the room.
		ghost, _ := NewSecret()
		taken := time.Now()
		if _, err := s1.slots.Create(context.Background(), roomSlot(0), []byte(ghost)); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s2.Create("v1.37.2", "192.0.2.1"); time.Since(taken) < grace && !errors.Is(err, ErrFull) {
			t.Fatalf("a room while another's Create may be under way: %v, want ErrFull", err)
		}
		time.Sleep(grace) // sleep: the ghost's creation grace passes
		r, _, err := s2.Create("v1.37.2", "192.0.2.1")
		if err != nil {
			t.Fatalf("a room after the grace: %v", err)
		}
		if got := slotHolder(t, s1, roomSlot(0)); got != r.ID {
			t.Errorf("the slot names %q, want the new room", got)
		}
	})
}

// failingCreates is a rooms' bucket whose Creates fail, as when NATS does
// not answer.
type failingCreates struct{ jetstream.KeyValue }

func (failingCreates) Create(context.Context, string, []byte, ...jetstream.KVCreateOpt) (uint64, error) {
	return 0, errors.New("no answer")
}

// TestFailedCreateLetsGo: a Create that fails after it took slots lets
// them go, so that what never became a room does not count.
func TestFailedCreateLetsGo(t *testing.T) {
	t.Run("the rooms' cap full", func(t *testing.T) {
		c := newClock()
		s := openStore(t, newBroker(t, ""), Config{MaxRooms: 1, PerOwner: 2, TTL: time.Hour, Now: c.Now})
		if _, _, err := s.Create("v1.37.2", "192.0.2.2"); err != nil {
			t.Fatal(err)
		}
		for range 3 { // each took one of 192.0.2.1's two slots first
			if _, _, err := s.Create("v1.37.2", "192.0.2.1"); !errors.Is(err, ErrFull) {
				t.Fatalf("%v, want ErrFull", err)
			}
		}
		for n := range 2 {
			if h := slotHolder(t, s, ownerSlots(ownerHash("192.0.2.1"))(n)); h != "" {
				t.Errorf("a client's slot %d is held by %s, which no Create made", n, h)
			}
		}
	})
	t.Run("the record not written", func(t *testing.T) {
		s := openStore(t, newBroker(t, ""), Config{MaxRooms: 1, PerOwner: 1})
		kv := s.kv
		s.kv = failingCreates{kv}
		if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err == nil {
			t.Fatal("Create succeeded without its record")
		}
		s.kv = kv
		if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
			t.Errorf("the next Create: %v", err)
		}
	})
}

// TestUnslottedRoomsCount: rooms an older version wrote (no slots, the
// owner's address in clear) count against both caps until they end.
func TestUnslottedRoomsCount(t *testing.T) {
	c := newClock()
	b := newBroker(t, "")
	cfg := Config{MaxRooms: 4, PerOwner: 2, TTL: time.Hour, Now: c.Now}
	s := openStore(t, b, cfg)
	old := func(owner string) Room {
		id, _ := NewSecret()
		r := Room{ID: id, Tag: "v1.31.0", DriverHash: hashKey(id), IngestToken: id, Created: c.Now(), LastActive: c.Now(), Owner: owner}
		data, _ := json.Marshal(r)
		if _, err := s.kv.Create(context.Background(), id, data); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, _ := old("192.0.2.1"), old("192.0.2.2")
	// A replica started after the upgrade.
	s2 := openStore(t, b, cfg)
	var made []string
	create := func(owner string, want error) {
		t.Helper()
		r, _, err := s2.Create("v1.37.2", owner)
		if !errors.Is(err, want) {
			t.Fatalf("a room for %s: %v, want %v", owner, err, want)
		}
		if err == nil {
			s2.MarkJoined(r.ID)
			made = append(made, r.ID)
		}
	}
	create("192.0.2.1", nil)
	create("192.0.2.1", ErrOwnerFull) // one of its two an older version made
	create("192.0.2.3", nil)
	create("192.0.2.4", ErrFull) // two of the four an older version made
	c.Add(50 * time.Minute)
	for _, id := range append(made, a.ID) {
		s2.Touch(id)
	}
	if err := s2.Flush(); err != nil {
		t.Fatal(err)
	}
	c.Add(20 * time.Minute) // the older room of 192.0.2.2 is over, the others are not
	create("192.0.2.4", nil)
	create("192.0.2.5", ErrFull)
	create("192.0.2.1", ErrOwnerFull) // a, still in use, and its new room
}

// TestSlotsNameNoAddress: the slots' keys do not name the client's
// address itself (its hash: TestOwnerHashed).
func TestSlotsNameNoAddress(t *testing.T) {
	s := openStore(t, newBroker(t, ""), Config{})
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	keys, err := s.slots.Keys(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 2 {
		t.Errorf("slots %v, want one of each cap", keys)
	}
	for _, k := range keys {
		if strings.Contains(k, "192.0.2.1") {
			t.Errorf("slot %s names the address", k)
		}
	}
}
