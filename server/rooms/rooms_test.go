package rooms

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/natstest"
	"github.com/syncloop/syncloop/server/internal/testclock"
)

// newClock is the expiry tests' time, moved on by the tests.
func newClock() *testclock.Clock {
	return testclock.New(time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC))
}

// newBroker starts an embedded NATS with JetStream: under dir, or in memory
// when dir is "".
func newBroker(t testing.TB, dir string) *broker.Broker {
	t.Helper()
	b, err := broker.Open(context.Background(), broker.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b
}

// openStore opens the rooms on b; it is closed at the end of the test.
func openStore(t testing.TB, b *broker.Broker, cfg Config) *Store {
	t.Helper()
	cfg.JS, cfg.Memory = b.JS, cfg.Memory || b.Memory
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := Open(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestSecrets(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		s, err := NewSecret()
		if err != nil {
			t.Fatal(err)
		}
		if !ValidID(s) {
			t.Fatalf("%q is not a valid id", s)
		}
		if seen[s] {
			t.Fatalf("%q twice", s)
		}
		seen[s] = true
	}
	for _, bad := range []string{"", "short", strings.Repeat("a", 21), strings.Repeat("a", 23), "aaaaaaaaaaaaaaaaaaaaa/", "../../../../etc/passwd", "aaaaaaaaaaaaaaaaaaaaa="} {
		if ValidID(bad) {
			t.Errorf("ValidID(%q) = true", bad)
		}
	}
}

func TestRoles(t *testing.T) {
	s := openStore(t, newBroker(t, ""), Config{})
	r, key, err := s.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	other, otherKey, err := s.Create("v1.31.0", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == other.ID || key == otherKey || r.IngestToken == other.IngestToken || key == r.IngestToken || key == r.ID {
		t.Fatal("two rooms share a secret")
	}
	if r.Feed() != "room-"+r.ID {
		t.Errorf("feed %q", r.Feed())
	}
	tests := []struct {
		name, id, key string
		want          bool
	}{
		{"the driver key", r.ID, key, true},
		{"no key", r.ID, "", false},
		{"the room id as key", r.ID, r.ID, false},
		{"the ingest token as key", r.ID, r.IngestToken, false},
		{"another room's key", r.ID, otherKey, false},
		{"the key one character off", r.ID, key[:21] + string(key[21]^1), false},
		{"the hash as key", r.ID, r.DriverHash, false},
		{"no such room", "AAAAAAAAAAAAAAAAAAAAAA", key, false},
	}
	for _, tt := range tests {
		if got := s.IsDriver(tt.id, tt.key); got != tt.want {
			t.Errorf("%s: IsDriver = %v, want %v", tt.name, got, tt.want)
		}
	}
	if strings.Contains(r.DriverHash, key) {
		t.Error("the stored hash contains the key")
	}
}

// rawRecord is the room's record as the bucket holds it.
func rawRecord(t *testing.T, s *Store, id string) string {
	t.Helper()
	e, err := s.kv.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return string(e.Value())
}

// TestPersistenceRoundTrip: what a store writes, a store opened after a
// restart of the NATS server (its files kept) reads back; the bucket never
// holds the driver key.
func TestPersistenceRoundTrip(t *testing.T) {
	dir := t.TempDir()
	c := newClock()
	b := newBroker(t, dir)
	s := openStore(t, b, Config{Now: c.Now})
	r, key, err := s.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.MarkJoined(r.ID); err != nil {
		t.Fatal(err)
	}
	if r, err = s.RotateToken(r.ID); err != nil {
		t.Fatal(err)
	}
	if r, err = s.SetTag(r.ID, "v1.31.0"); err != nil {
		t.Fatal(err)
	}
	c.Add(time.Hour)
	s.Touch(r.ID)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if raw := rawRecord(t, s, r.ID); strings.Contains(raw, key) || !strings.Contains(raw, hashKey(key)) {
		t.Errorf("the bucket holds the driver key itself, or not its hash: %s", raw)
	}
	s.Close()
	b.Close()

	s2 := openStore(t, newBroker(t, dir), Config{Now: c.Now})
	got, err := s2.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tag != "v1.31.0" || got.IngestToken != r.IngestToken || !got.Created.Equal(r.Created) || !got.LastActive.Equal(c.Now()) || got.NeverJoined {
		t.Errorf("after reopening: %+v, want %+v with last active %v", got, r, c.Now())
	}
	if !s2.IsDriver(r.ID, key) {
		t.Error("the driver key no longer works after reopening")
	}
	if tok, ok := s2.Token(r.ID); !ok || tok != r.IngestToken {
		t.Errorf("Token = %q, %v", tok, ok)
	}
}

// TestWheelLoan: one ticket at a time opens the lent wheel; lending again or
// ending the loan closes the old one; the bucket keeps only its hash, and
// another store on the bucket (another replica) honours it.
func TestWheelLoan(t *testing.T) {
	b := newBroker(t, "")
	s := openStore(t, b, Config{})
	r, key, err := s.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	other, _, err := s.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if s.HoldsWheel(r.ID, "") || s.HoldsWheel(r.ID, key) {
		t.Fatal("a wheel not lent is held")
	}
	if _, _, err := s.SetDriver(r.ID, "", "ann", false); err != nil {
		t.Fatal(err)
	}
	_, first, err := s.SetDriver(r.ID, "ann", "bob", true)
	if err != nil {
		t.Fatal(err)
	}
	got, second, err := s.SetDriver(r.ID, "bob", "cy", true)
	if err != nil || got.Driver != "cy" {
		t.Fatalf("second loan: %+v, %v", got, err)
	}
	replica := openStore(t, b, Config{})
	tests := []struct {
		name, id, ticket string
		want             bool
	}{
		{"the ticket lent last", r.ID, second, true},
		{"the ticket lent before", r.ID, first, false},
		{"the driver key", r.ID, key, false},
		{"the room id", r.ID, r.ID, false},
		{"the ingest token", r.ID, r.IngestToken, false},
		{"no ticket", r.ID, "", false},
		{"one character off", r.ID, second[:21] + string(second[21]^1), false},
		{"another room", other.ID, second, false},
	}
	for _, st := range []struct {
		name string
		s    *Store
	}{{"here", s}, {"another replica", replica}} {
		for _, tt := range tests {
			if got := st.s.HoldsWheel(tt.id, tt.ticket); got != tt.want {
				t.Errorf("%s: %s: HoldsWheel = %v, want %v", st.name, tt.name, got, tt.want)
			}
		}
	}
	if s.IsDriver(r.ID, second) {
		t.Error("the ticket is a driver key")
	}
	if raw := rawRecord(t, s, r.ID); strings.Contains(raw, second) || !strings.Contains(raw, hashKey(second)) {
		t.Error("the bucket holds the ticket itself, or not its hash")
	}
	if _, _, err := s.SetDriver(r.ID, "ann", "dan", false); !errors.Is(err, ErrWheelMoved) {
		t.Errorf("handing a wheel its giver no longer holds: %v, want ErrWheelMoved", err)
	}
	if err := s.EndLoan(r.ID); err != nil {
		t.Fatal(err)
	}
	if s.HoldsWheel(r.ID, second) {
		t.Error("the ticket still holds the wheel after the loan ended")
	}
	testwait.For(t, 10*time.Second, "the other replica to see the loan end", func() bool { return !replica.HoldsWheel(r.ID, second) })
	if err := s.EndLoan(r.ID); err != nil {
		t.Errorf("ending no loan: %v", err)
	}
	if _, _, err := s.SetDriver("AAAAAAAAAAAAAAAAAAAAAA", "", "x", true); !errors.Is(err, ErrNotFound) {
		t.Errorf("lending in no room: %v", err)
	}
}

// TestConcurrentHandOver: two replicas (two NATS connections, two stores)
// hand the same wheel at the same moment, each from its own copy of the
// record: exactly one hand-over takes, the other is refused, and both
// replicas end up agreeing on the one driver.
func TestConcurrentHandOver(t *testing.T) {
	b1, b2 := natstest.Pair(t, "")
	s1 := openStore(t, b1, Config{})
	s2 := openStore(t, b2, Config{Memory: b1.Memory}) // the bucket is in b1's memory
	r, _, err := s1.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	for round := range 30 {
		if _, err := s1.TakeWheel(r.ID, "d"); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 10*time.Second, "replica 2 to see the wheel back", func() bool { got, _ := s2.Get(r.ID); return got.Driver == "d" })
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []*Store{s1, s2} {
			wg.Go(func() { _, _, errs[i] = s.SetDriver(r.ID, "d", []string{"a", "b"}[i], i == 1) })
		}
		wg.Wait()
		won := ""
		for i, err := range errs {
			switch {
			case err == nil && won == "":
				won = []string{"a", "b"}[i]
			case err == nil:
				t.Fatalf("round %d: both replicas handed the wheel", round)
			case !errors.Is(err, ErrWheelMoved):
				t.Fatalf("round %d: replica %d: %v", round, i+1, err)
			}
		}
		if won == "" {
			t.Fatalf("round %d: neither hand-over took: %v", round, errs)
		}
		for i, s := range []*Store{s1, s2} {
			testwait.For(t, 10*time.Second, "the replicas to agree", func() bool { got, _ := s.Get(r.ID); return got.Driver == won })
			if got, _ := s.Get(r.ID); (won == "b") != (got.WheelHash != "") {
				t.Errorf("round %d: replica %d: driver %s, loan %q", round, i+1, won, got.WheelHash)
			}
		}
	}
}

// TestImport: the rooms.json of an older version comes into the bucket
// once: live rooms with their keys, tokens and times, expired ones saying
// so; the file is renamed, and a second start imports nothing.
func TestImport(t *testing.T) {
	c := newClock()
	dir := t.TempDir()
	path := filepath.Join(dir, "rooms.json")
	key, _ := NewSecret()
	ticket, _ := NewSecret()
	id := func() string { s, _ := NewSecret(); return s }
	live := &Room{ID: id(), Tag: "v1.31.0", DriverHash: hashKey(key), WheelHash: hashKey(ticket), IngestToken: id(),
		Created: c.Now().Add(-2 * time.Hour), LastActive: c.Now().Add(-time.Hour), Owner: "192.0.2.1"}
	unjoined := &Room{ID: id(), Tag: "v1.37.2", DriverHash: hashKey(id()), IngestToken: id(), Created: c.Now().Add(-time.Minute),
		LastActive: c.Now().Add(-time.Minute), NeverJoined: true}
	idle := &Room{ID: id(), Tag: "v1.37.2", DriverHash: hashKey(id()), IngestToken: id(), Created: c.Now().Add(-48 * time.Hour),
		LastActive: c.Now().Add(-25 * time.Hour)}
	tomb := id()
	data, _ := json.Marshal(legacyFile{Version: 1, Rooms: []*Room{live, unjoined, idle}, Expired: map[string]time.Time{tomb: c.Now().Add(-time.Hour)}})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	b := newBroker(t, dir)
	s := openStore(t, b, Config{Now: c.Now})
	n, err := s.Import(path)
	if err != nil || n != 2 {
		t.Fatalf("Import = %d, %v; want the 2 live rooms", n, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rooms.json is still there: %v", err)
	}
	if _, err := os.Stat(path + ".imported"); err != nil {
		t.Errorf("rooms.json.imported: %v", err)
	}
	// A replica that did not import sees the rooms too.
	other := openStore(t, b, Config{Now: c.Now})
	for _, st := range []*Store{s, other} {
		got, err := st.Get(live.ID)
		if err != nil || got.Tag != live.Tag || got.IngestToken != live.IngestToken || !got.LastActive.Equal(live.LastActive) {
			t.Errorf("imported room: %+v, %v", got, err)
		}
		if !st.IsDriver(live.ID, key) || !st.HoldsWheel(live.ID, ticket) {
			t.Error("the imported room's driver key or lent wheel does not work")
		}
		if got, err := st.Get(unjoined.ID); err != nil || !got.NeverJoined || len(got.Slots) != 1 {
			t.Errorf("imported unjoined room (no owner known: the rooms' slot alone): %+v, %v", got, err)
		}
		if got, _ := st.Get(live.ID); len(got.Slots) != 2 || got.Owner != "" || got.OwnerHash != ownerHash(live.Owner) {
			t.Errorf("imported room: slots %v, owner %q, owner hash %q; want two slots and the owner's hash alone", got.Slots, got.Owner, got.OwnerHash)
		}
		if _, err := st.Get(idle.ID); !errors.Is(err, ErrNotFound) {
			t.Errorf("a room whose time was up in the file: %v, want ErrNotFound", err)
		}
		if _, err := st.Get(tomb); !errors.Is(err, ErrExpired) {
			t.Errorf("a room the file knew expired: %v, want ErrExpired", err)
		}
	}
	c.Add(10 * time.Minute)
	if _, err := s.Get(unjoined.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("the imported unjoined room 11 min on: %v, want ErrExpired", err)
	}
	if n, err := s.Import(path); n != 0 || err != nil {
		t.Errorf("second Import = %d, %v; want nothing", n, err)
	}
}

// TestImportBeyondCaps: the rooms of a rooms.json with more rooms than the
// caps allow are all brought, and count against the caps.
func TestImportBeyondCaps(t *testing.T) {
	c := newClock()
	path := filepath.Join(t.TempDir(), "rooms.json")
	var rs []*Room
	for range 3 {
		id, _ := NewSecret()
		rs = append(rs, &Room{ID: id, Tag: "v1.31.0", DriverHash: hashKey(id), IngestToken: id,
			Created: c.Now().Add(-time.Hour), LastActive: c.Now().Add(-time.Minute), Owner: "192.0.2.1"})
	}
	data, _ := json.Marshal(legacyFile{Version: 1, Rooms: rs})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStore(t, newBroker(t, ""), Config{MaxRooms: 2, PerOwner: 1, Now: c.Now})
	if n, err := s.Import(path); n != 3 || err != nil {
		t.Fatalf("Import = %d, %v; want the 3 rooms", n, err)
	}
	if _, _, err := s.Create("v1.37.2", "192.0.2.2"); !errors.Is(err, ErrFull) {
		t.Errorf("a room after importing more than the cap: %v, want ErrFull", err)
	}
}

func TestImportBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rooms.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	s := openStore(t, newBroker(t, ""), Config{})
	if _, err := s.Import(path); err == nil || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("Import of a corrupt file: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Errorf("a corrupt file must stay where it is: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	c := newClock()
	b := newBroker(t, "")
	s := openStore(t, b, Config{TTL: time.Hour, Now: c.Now})
	idle, _, _ := s.Create("v1.37.2", "192.0.2.1")
	busy, _, _ := s.Create("v1.37.2", "192.0.2.1")
	s.MarkJoined(idle.ID) // rooms nobody joined expire sooner: TestUnjoinedRoomExpiresSoon
	s.MarkJoined(busy.ID)
	c.Add(50 * time.Minute)
	s.Touch(busy.ID)
	c.Add(20 * time.Minute) // idle: 70 min; busy: 20 min
	if _, err := s.Get(idle.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("idle room: %v, want ErrExpired", err)
	}
	if _, err := s.Get(busy.ID); err != nil {
		t.Errorf("busy room: %v", err)
	}
	if _, err := s.Get("AAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown room: %v, want ErrNotFound", err)
	}
	c.Add(time.Hour)
	gone, err := s.Sweep()
	if err != nil || len(gone) != 2 || !strings.Contains(strings.Join(gone, " "), busy.ID) {
		t.Errorf("Sweep = %v, %v; want both rooms", gone, err)
	}
	if s.Len() != 0 {
		t.Errorf("%d rooms left", s.Len())
	}
	// The expired keys keep saying so, to a store opened later.
	s2 := openStore(t, b, Config{TTL: time.Hour, Now: c.Now})
	for _, id := range []string{idle.ID, busy.ID} {
		if _, err := s2.Get(id); !errors.Is(err, ErrExpired) {
			t.Errorf("a store opened later: %s: %v, want ErrExpired", id, err)
		}
	}
	if _, err := s2.SetTag(idle.ID, "v1.31.0"); !errors.Is(err, ErrExpired) {
		t.Errorf("SetTag on an expired room: %v", err)
	}

	// A room swept expired stays expired for a store with a longer TTL.
	late, _, _ := s2.Create("v1.37.2", "192.0.2.1")
	s2.MarkJoined(late.ID)
	c.Add(2 * time.Hour)
	if _, err := s2.Sweep(); err != nil {
		t.Fatal(err)
	}
	s3 := openStore(t, b, Config{TTL: 48 * time.Hour, Now: c.Now})
	if _, err := s3.Get(late.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("a room expired, opened again with a longer TTL: %v, want ErrExpired", err)
	}
}

func TestMaxRooms(t *testing.T) {
	c := newClock()
	s := openStore(t, newBroker(t, ""), Config{MaxRooms: 3, TTL: time.Hour, Now: c.Now})
	for i := range 3 {
		if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
			t.Fatalf("room %d: %v", i, err)
		}
	}
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); !errors.Is(err, ErrFull) {
		t.Fatalf("fourth room: %v, want ErrFull", err)
	}
	c.Add(2 * time.Hour) // all expire: room again
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

// One owner holds PerOwner rooms at once, whatever MaxRooms allows; a room
// that expires frees its place.
func TestPerOwner(t *testing.T) {
	c := newClock()
	s := openStore(t, newBroker(t, ""), Config{MaxRooms: 48, PerOwner: 4, TTL: time.Hour, Now: c.Now})
	for i := range 4 {
		if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
			t.Fatalf("room %d: %v", i, err)
		}
	}
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); !errors.Is(err, ErrOwnerFull) {
		t.Fatalf("a fifth room of one owner: %v, want ErrOwnerFull", err)
	}
	if _, _, err := s.Create("v1.37.2", "192.0.2.2"); err != nil {
		t.Fatalf("another owner: %v", err)
	}
	c.Add(2 * time.Hour)
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
		t.Fatalf("after its rooms expired: %v", err)
	}
}

// TestOwnerHashed: a room's record keeps the hash of its client's address,
// not the address; a record an older version wrote (the address in clear)
// counts for the same client, and keeps only the hash once written again.
func TestOwnerHashed(t *testing.T) {
	s := openStore(t, newBroker(t, ""), Config{PerOwner: 2})
	id, _ := NewSecret()
	old, _ := json.Marshal(Room{ID: id, Tag: "v1.31.0", DriverHash: hashKey(id), IngestToken: id, Created: time.Now(), LastActive: time.Now(), Owner: "192.0.2.1"})
	if _, err := s.kv.Create(context.Background(), id, old); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 10*time.Second, "the older record in the copy", func() bool { _, err := s.Get(id); return err == nil })
	r, _, err := s.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if raw := rawRecord(t, s, r.ID); strings.Contains(raw, "192.0.2.1") || !strings.Contains(raw, ownerHash("192.0.2.1")) {
		t.Errorf("the record holds the address, or not its hash: %s", raw)
	}
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); !errors.Is(err, ErrOwnerFull) {
		t.Errorf("a third room, one written by an older version: %v, want ErrOwnerFull", err)
	}
	if _, err := s.SetTag(id, "v1.37.2"); err != nil {
		t.Fatal(err)
	}
	if raw := rawRecord(t, s, id); strings.Contains(raw, "192.0.2.1") || !strings.Contains(raw, ownerHash("192.0.2.1")) {
		t.Errorf("the older record written again holds the address, or not its hash: %s", raw)
	}
}

// A room no reader joined lives UnjoinedTTL from its creation, though its
// page be opened (Touch); a joined one lives TTL from its last use. The
// mark is in the record (another store sees it), and the key of a room no
// one joined carries the short TTL itself.
func TestUnjoinedRoomExpiresSoon(t *testing.T) {
	c := newClock()
	b := newBroker(t, "")
	cfg := Config{TTL: 24 * time.Hour, UnjoinedTTL: 10 * time.Minute, Now: c.Now}
	s := openStore(t, b, cfg)
	unjoined, _, _ := s.Create("v1.37.2", "192.0.2.1")
	joined, _, _ := s.Create("v1.37.2", "192.0.2.1")
	e, err := s.kv.Get(context.Background(), unjoined.ID)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := b.JS.Stream(context.Background(), "KV_"+DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := msg.GetMsg(context.Background(), e.Revision())
	if err != nil {
		t.Fatal(err)
	}
	if ttl := raw.Header.Get("Nats-TTL"); ttl == "" {
		t.Errorf("the unjoined room's key has no TTL of its own (headers %v)", raw.Header)
	}
	c.Add(time.Minute)
	s.MarkJoined(joined.ID)
	s.Touch(unjoined.ID)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s = openStore(t, b, cfg)
	c.Add(10 * time.Minute)
	if _, err := s.Get(unjoined.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("a room nobody joined, 11 min on: %v, want ErrExpired", err)
	}
	if _, err := s.Get(joined.ID); err != nil {
		t.Errorf("a joined room, 11 min on: %v", err)
	}
	c.Add(24 * time.Hour)
	if _, err := s.Get(joined.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("a joined room idle a day: %v, want ErrExpired", err)
	}
}

func TestBucket(t *testing.T) {
	now := time.Unix(0, 0)
	b := NewBucket(10, 5, now)
	n := 0
	for range 100 {
		if b.Allow(now) {
			n++
		}
	}
	if n != 5 {
		t.Errorf("burst: %d allowed, want 5", n)
	}
	now = now.Add(time.Second)
	n = 0
	for range 100 {
		if b.Allow(now) {
			n++
		}
	}
	if n != 5 { // refilled 10, capped at the burst
		t.Errorf("after a second: %d allowed, want 5", n)
	}
	now = now.Add(300 * time.Millisecond)
	n = 0
	for range 100 {
		if b.Allow(now) {
			n++
		}
	}
	if n != 3 {
		t.Errorf("after 300ms: %d allowed, want 3", n)
	}
}

func TestKeyLimiter(t *testing.T) {
	now := time.Unix(0, 0)
	l := NewKeyLimiter(1.0/6, 10, 2)
	n := 0
	for range 1000 {
		if l.Allow("192.0.2.1", now) {
			n++
		}
	}
	if n != 10 {
		t.Errorf("one client: %d of 1000 allowed, want 10", n)
	}
	if !l.Allow("192.0.2.2", now) {
		t.Error("another client is refused")
	}
	// Two keys held and neither full: a third is refused rather than
	// letting the table grow.
	if l.Allow("192.0.2.3", now) {
		t.Error("a third key was let in with the table full")
	}
	now = now.Add(time.Hour) // both buckets full again: forgettable
	if !l.Allow("192.0.2.3", now) {
		t.Error("a third key refused after the others refilled")
	}
}

// TestCreateWaitsForDisk: with Config.Sync, a room is handed out only once
// Sync says its record is on disk; a Sync that fails fails the Create.
func TestCreateWaitsForDisk(t *testing.T) {
	release := make(chan error)
	s := openStore(t, newBroker(t, t.TempDir()), Config{TTL: time.Hour, Sync: func(ctx context.Context) error {
		select {
		case err := <-release:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	done := make(chan error, 1)
	go func() { _, _, err := s.Create("v1.31.0", "10.0.0.1"); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("Create answered (%v) before Sync", err)
	case <-time.After(100 * time.Millisecond):
	}
	release <- nil
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	go func() { _, _, err := s.Create("v1.31.0", "10.0.0.2"); done <- err }()
	release <- errors.New("disk gone")
	if err := <-done; err == nil || !strings.Contains(err.Error(), "disk gone") {
		t.Fatalf("Create with a failed Sync: %v", err)
	}
}
