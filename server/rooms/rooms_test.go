package rooms

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a settable time for expiry tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

func newClock() *clock { return &clock{t: time.Date(2026, 11, 30, 3, 0, 0, 0, time.UTC)} }

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
	s, err := Open(Config{})
	if err != nil {
		t.Fatal(err)
	}
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

func TestPersistenceRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "rooms.json")
	c := newClock()
	s, err := Open(Config{Path: path, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	r, key, err := s.Create("v1.37.2", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	s.MarkJoined(r.ID)
	if r, err = s.RotateToken(r.ID); err != nil {
		t.Fatal(err)
	}
	if r, err = s.SetTag(r.ID, "v1.31.0"); err != nil {
		t.Fatal(err)
	}
	c.add(time.Hour)
	s.Touch(r.ID)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), key) {
		t.Error("the file holds the driver key itself")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm()&0o077 != 0 {
		t.Errorf("rooms file mode %v: readable by others", fi.Mode())
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp-*"))
	if len(matches) > 0 {
		t.Errorf("temporary files left: %v", matches)
	}

	s2, err := Open(Config{Path: path, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s2.Get(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Tag != "v1.31.0" || got.IngestToken != r.IngestToken || !got.Created.Equal(r.Created) || !got.LastActive.Equal(c.now()) {
		t.Errorf("after reopening: %+v, want %+v with last active %v", got, r, c.now())
	}
	if !s2.IsDriver(r.ID, key) {
		t.Error("the driver key no longer works after reopening")
	}
	if tok, ok := s2.Token(r.ID); !ok || tok != r.IngestToken {
		t.Errorf("Token = %q, %v", tok, ok)
	}
}

// TestWheelLoan: one ticket at a time opens the lent wheel; lending again or
// ending the loan closes the old one; the file keeps only its hash, and a
// reopened store honours it.
func TestWheelLoan(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rooms.json")
	s, err := Open(Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
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
	first, err := s.Lend(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.Lend(r.ID)
	if err != nil {
		t.Fatal(err)
	}
	reopened := func() *Store {
		s2, err := Open(Config{Path: path})
		if err != nil {
			t.Fatal(err)
		}
		return s2
	}
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
	}{{"open", s}, {"reopened", reopened()}} {
		for _, tt := range tests {
			if got := st.s.HoldsWheel(tt.id, tt.ticket); got != tt.want {
				t.Errorf("%s: %s: HoldsWheel = %v, want %v", st.name, tt.name, got, tt.want)
			}
		}
	}
	if s.IsDriver(r.ID, second) {
		t.Error("the ticket is a driver key")
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), second) || !strings.Contains(string(data), hashKey(second)) {
		t.Error("the file holds the ticket itself, or not its hash")
	}
	if err := s.EndLoan(r.ID); err != nil {
		t.Fatal(err)
	}
	if s.HoldsWheel(r.ID, second) || reopened().HoldsWheel(r.ID, second) {
		t.Error("the ticket still holds the wheel after the loan ended")
	}
	if err := s.EndLoan(r.ID); err != nil {
		t.Errorf("ending no loan: %v", err)
	}
	if _, err := s.Lend("AAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrNotFound) {
		t.Errorf("lending in no room: %v", err)
	}
}

func TestOpenBadFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rooms.json")
	os.WriteFile(path, []byte("{not json"), 0o600)
	_, err := Open(Config{Path: path})
	if err == nil || !strings.Contains(err.Error(), "move it aside") {
		t.Errorf("Open of a corrupt file: %v", err)
	}
}

func TestExpiry(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rooms.json")
	c := newClock()
	s, err := Open(Config{Path: path, TTL: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	idle, _, _ := s.Create("v1.37.2", "192.0.2.1")
	busy, _, _ := s.Create("v1.37.2", "192.0.2.1")
	s.MarkJoined(idle.ID) // rooms nobody joined expire sooner: TestUnjoinedRoomExpiresSoon
	s.MarkJoined(busy.ID)
	c.add(50 * time.Minute)
	s.Touch(busy.ID)
	c.add(20 * time.Minute) // idle: 70 min; busy: 20 min
	if _, err := s.Get(idle.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("idle room: %v, want ErrExpired", err)
	}
	if _, err := s.Get(busy.ID); err != nil {
		t.Errorf("busy room: %v", err)
	}
	if _, err := s.Get("AAAAAAAAAAAAAAAAAAAAAA"); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown room: %v, want ErrNotFound", err)
	}
	c.add(time.Hour)
	gone, err := s.Sweep()
	if err != nil || len(gone) != 1 || gone[0] != busy.ID {
		t.Errorf("Sweep = %v, %v; want [%s]", gone, err, busy.ID)
	}
	if s.Len() != 0 {
		t.Errorf("%d rooms left", s.Len())
	}
	// Tombstones survive a restart: the link still says "expired".
	s2, err := Open(Config{Path: path, TTL: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{idle.ID, busy.ID} {
		if _, err := s2.Get(id); !errors.Is(err, ErrExpired) {
			t.Errorf("after restart %s: %v, want ErrExpired", id, err)
		}
	}
	if _, err := s2.SetTag(idle.ID, "v1.31.0"); !errors.Is(err, ErrExpired) {
		t.Errorf("SetTag on an expired room: %v", err)
	}

	// A room Open finds expired stays expired, though nothing else writes
	// before the next start (a server killed), with a longer TTL.
	late, _, _ := s2.Create("v1.37.2", "192.0.2.1")
	s2.MarkJoined(late.ID)
	c.add(2 * time.Hour)
	if _, err := Open(Config{Path: path, TTL: time.Hour, Now: c.now}); err != nil {
		t.Fatal(err)
	}
	s3, err := Open(Config{Path: path, TTL: 48 * time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Get(late.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("a room expired at Open, opened again with a longer TTL: %v, want ErrExpired", err)
	}
}

func TestMaxRooms(t *testing.T) {
	c := newClock()
	s, err := Open(Config{MaxRooms: 3, TTL: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
			t.Fatalf("room %d: %v", i, err)
		}
	}
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); !errors.Is(err, ErrFull) {
		t.Fatalf("fourth room: %v, want ErrFull", err)
	}
	c.add(2 * time.Hour) // all expire: room again
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

// One owner holds PerOwner rooms at once, whatever MaxRooms allows; a room
// that expires frees its place.
func TestPerOwner(t *testing.T) {
	c := newClock()
	s, err := Open(Config{MaxRooms: 48, PerOwner: 4, TTL: time.Hour, Now: c.now})
	if err != nil {
		t.Fatal(err)
	}
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
	c.add(2 * time.Hour)
	if _, _, err := s.Create("v1.37.2", "192.0.2.1"); err != nil {
		t.Fatalf("after its rooms expired: %v", err)
	}
}

// A room no reader joined lives UnjoinedTTL from its creation, though its
// page be opened (Touch); a joined one lives TTL from its last use. The
// mark survives a restart.
func TestUnjoinedRoomExpiresSoon(t *testing.T) {
	path := filepath.Join(t.TempDir(), "rooms.json")
	c := newClock()
	cfg := Config{Path: path, TTL: 24 * time.Hour, UnjoinedTTL: 10 * time.Minute, Now: c.now}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	unjoined, _, _ := s.Create("v1.37.2", "192.0.2.1")
	joined, _, _ := s.Create("v1.37.2", "192.0.2.1")
	c.add(time.Minute)
	s.MarkJoined(joined.ID)
	s.Touch(unjoined.ID)
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.add(10 * time.Minute)
	if _, err := s.Get(unjoined.ID); !errors.Is(err, ErrExpired) {
		t.Errorf("a room nobody joined, 11 min on: %v, want ErrExpired", err)
	}
	if _, err := s.Get(joined.ID); err != nil {
		t.Errorf("a joined room, 11 min on: %v", err)
	}
	c.add(24 * time.Hour)
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
