// Package rooms is pair-reading rooms, whole: the durable records (this
// file), the caps on how many there are (slots.go), the rooms' HTTP side
// (service.go), their websocket, presence and the wheel (socket.go), what
// replicas tell each other of a room (wire.go), and the token buckets that
// rate-limit them (limit.go). What a room needs of the site around it (its
// page, tags, the live feeds) it asks through Site, which server/ fills in.
//
// A room's record lives in a JetStream KV bucket (syncloop_rooms), one key
// per room id: its tag, its driver key (kept as a hash), its ingest token,
// when it was made and last used, who holds the wheel, the hash of the
// client address that made it and the caps' slots it holds. Every replica
// keeps a copy fed by a watcher; every write is a compare-and-set on the
// key's revision, so two replicas never both apply a change made from the
// same old record (two hand-overs of one wheel: one wins, the other is
// refused). Expiry is the bucket's: its TTL is the idle TTL (plus a margin,
// the record is written again while the room is used), a room no reader
// joined is made with a per-key TTL of UnjoinedTTL; the store checks the
// times itself too, so a room ends on time whatever the bucket's timing. An
// expired room's key keeps a delete marker for the bucket's TTL: its links
// say "expired" rather than "no such room".
//
// Capabilities are random strings of 128 bits (crypto/rand, base64url):
//
//   - the room id is the viewer link (/rooms/{id}): whoever holds it reads along;
//   - the driver key (/rooms/{id}?k=KEY) lets its holder steer; only its
//     SHA-256 is stored, so the bucket does not hand out the wheel;
//   - the wheel ticket is what a reader who was handed the wheel holds, so
//     that the wheel outlasts their reload and their moves between the
//     room's pages: there is at most one, it ends when the wheel is taken
//     back or handed on, and it is kept as a SHA-256 too;
//   - the ingest token lets a relay feed the room's journal; it is stored as
//     is, because the room shows it to its drivers, and it can be rotated.
package rooms

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
)

// Defaults for Config's zero values.
const (
	DefaultTTL      = 24 * time.Hour
	DefaultMaxRooms = 48 // in the whole cluster: one replica can hold every room's feed within its 64 feeds
	// DefaultPerOwner is how many rooms one client address holds at once:
	// without it, one address could take every room for a day.
	DefaultPerOwner = 4
	// DefaultUnjoinedTTL is how long a room lives that no reader ever
	// joined (opened its socket): a pair who start a session join within
	// seconds, so only unused rooms are cut short.
	DefaultUnjoinedTTL = 10 * time.Minute
	// DefaultBucket is the KV bucket that holds the rooms.
	DefaultBucket = "syncloop_rooms"
	// FlushEvery is how often a used room's LastActive is written (and
	// idle rooms are expired): the bucket's TTL is the room's plus twice this.
	FlushEvery = 30 * time.Second
)

// Errors a caller turns into pages.
var (
	ErrNotFound  = errors.New("no such room")
	ErrExpired   = errors.New("the room expired")
	ErrFull      = errors.New("too many rooms on this server")
	ErrOwnerFull = errors.New("this address holds as many rooms as it may")
	ErrClassFull = errors.New("this class holds as many rooms as its budget allows")
	// ErrEnded: the room was ended; what it refuses is a change.
	ErrEnded = errors.New("this room was ended")
	// ErrWheelMoved: the wheel is not where the caller saw it (another
	// replica handed it, or it was taken, in between).
	ErrWheelMoved = errors.New("the wheel moved in the meantime")
)

// Room is the record of a room.
type Room struct {
	ID          string    `json:"id"`
	Tag         string    `json:"tag"`
	DriverHash  string    `json:"driver_key_sha256"`             // hex SHA-256 of the driver key
	WheelHash   string    `json:"wheel_ticket_sha256,omitempty"` // hex SHA-256 of the lent wheel's ticket; "" when not lent
	IngestToken string    `json:"ingest_token"`
	Created     time.Time `json:"created"`
	LastActive  time.Time `json:"last_active"`
	// OwnerHash is the hex SHA-256 of the client address that created the
	// room, for the cap on rooms per address; "" when none is known.
	OwnerHash string `json:"owner_sha256,omitempty"`
	// Owner is the address itself, in records written before OwnerHash
	// (and in an older version's rooms.json): it is read, and replaced by
	// its hash when the record is next written.
	Owner string `json:"owner,omitempty"`
	// Slots are the keys of the caps' slots the room holds (slots.go);
	// none in a record written before the caps had slots.
	Slots []string `json:"slots,omitempty"`
	// NeverJoined is set until a reader first joins: such a room expires
	// after UnjoinedTTL from its creation. (Negative, so that rooms written
	// before it existed count as joined.)
	NeverJoined bool `json:"never_joined,omitempty"`
	// Driver is the reader who holds the wheel (a reader id, unique in the
	// cluster: socket.go), "" when no one does.
	Driver string `json:"driver,omitempty"`
	// Class is the id of the class the room was started in (package
	// classes), "" for a room of no class. A class's room takes a slot of
	// the class's budget instead of its owner address's (slots.go).
	Class string `json:"class,omitempty"`
	// Ended is set when a driver ended the room: its notes turn read-only
	// and its feed takes no relay, but the record (and so its notes and
	// hand-in) stays until the room expires, for its class's instructor.
	Ended bool `json:"ended,omitempty"`
}

// Feed is the name of the room's live feed.
func (r Room) Feed() string { return FeedPrefix + r.ID }

// ownerHash is the hash of the client address that created the room, ""
// when none is known.
func (r Room) ownerHash() string {
	if r.OwnerHash == "" {
		return ownerHash(r.Owner)
	}
	return r.OwnerHash
}

// ownerHash is what a record keeps of a client address: its SHA-256, "" for no address.
func ownerHash(addr string) string {
	if addr == "" {
		return ""
	}
	return hashKey(addr)
}

// FeedPrefix starts the name of every room's feed.
const FeedPrefix = "room-"

// Config says where rooms are kept and how many, for how long.
type Config struct {
	JS       jetstream.JetStream
	Bucket   string        // "" means DefaultBucket
	Memory   bool          // keep the bucket in memory (nothing outlives the NATS server)
	Replicas int           // copies of the bucket in a cluster; 0 means 1
	TTL      time.Duration // idle time after which a room expires; 0 means DefaultTTL
	MaxRooms int           // 0 means DefaultMaxRooms
	PerOwner int           // rooms one owner holds at once; 0 means DefaultPerOwner
	// UnjoinedTTL is how long a room no reader joined lives after its
	// creation; 0 means DefaultUnjoinedTTL. (It is at most TTL.)
	UnjoinedTTL time.Duration
	Now         func() time.Time
	Logger      *slog.Logger
	// Sync, when set, waits until what JetStream acknowledged is on disk
	// (broker.Sync): a room is handed out once it would outlive a host crash.
	Sync func(ctx context.Context) error

	// creationGrace: how old a slot naming no room must be to be taken
	// back (slots.go); 0 means defaultCreationGrace. Tests shorten it.
	creationGrace time.Duration
}

type entry struct {
	room Room
	rev  uint64
}

// Store holds the rooms. Its methods are safe for concurrent use.
type Store struct {
	cfg    Config
	kv     jetstream.KeyValue
	slots  jetstream.KeyValue // the caps' slots (slots.go)
	ctx    context.Context    // the store's life: writes end with it
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	rooms    map[string]entry
	expired  map[string]uint64    // ids whose key holds a delete marker, and its revision
	touched  map[string]time.Time // LastActive not yet written
	gone     []string             // ids expired since the last Sweep
	onChange func(id string)
}

// Open makes (or updates) the bucket and starts following it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.MaxRooms <= 0 {
		cfg.MaxRooms = DefaultMaxRooms
	}
	if cfg.PerOwner <= 0 {
		cfg.PerOwner = DefaultPerOwner
	}
	if cfg.UnjoinedTTL <= 0 {
		cfg.UnjoinedTTL = DefaultUnjoinedTTL
	}
	cfg.UnjoinedTTL = min(cfg.UnjoinedTTL, cfg.TTL)
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.creationGrace <= 0 {
		cfg.creationGrace = defaultCreationGrace
	}
	kv, err := cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "syncloop: pair-reading rooms, a key per room id",
		History:     1,
		TTL:         cfg.TTL + 2*FlushEvery,
		// Markers make the per-key TTL of unjoined rooms possible, and
		// keep an expired room's key saying so.
		LimitMarkerTTL: cfg.TTL + 2*FlushEvery,
		Storage:        broker.Storage(cfg.Memory),
		Replicas:       cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("rooms: bucket %s: %w", cfg.Bucket, err)
	}
	slots, err := openSlots(ctx, cfg)
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, kv: kv, slots: slots, done: make(chan struct{}),
		rooms: map[string]entry{}, expired: map[string]uint64{}, touched: map[string]time.Time{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	w, err := kv.WatchAll(s.ctx)
	if err != nil {
		s.cancel()
		return nil, fmt.Errorf("rooms: watch %s: %w", cfg.Bucket, err)
	}
	ready := make(chan struct{})
	go s.watch(w, ready)
	select {
	case <-ready:
		return s, nil
	case <-ctx.Done():
		s.cancel()
		<-s.done
		return nil, ctx.Err()
	}
}

// OnChange sets f to be told of each room another write changed (from
// this replica or another), after the initial state. Set it before use.
func (s *Store) OnChange(f func(id string)) {
	s.mu.Lock()
	s.onChange = f
	s.mu.Unlock()
}

// watch applies the bucket's changes to the copy.
func (s *Store) watch(w jetstream.KeyWatcher, ready chan struct{}) {
	defer close(s.done)
	defer w.Stop()
	initial := true
	for e := range w.Updates() {
		if e == nil {
			if initial {
				initial = false
				close(ready)
			}
			continue
		}
		id := e.Key()
		if e.Operation() != jetstream.KeyValuePut {
			s.mu.Lock()
			_, had := s.rooms[id]
			s.applyDelete(id, e.Revision())
			if had && !initial {
				s.gone = append(s.gone, id)
			}
			f := s.onChange
			s.mu.Unlock()
			if f != nil && !initial {
				f(id)
			}
			continue
		}
		var r Room
		if err := json.Unmarshal(e.Value(), &r); err != nil || r.ID != id {
			s.cfg.Logger.Warn("rooms: a record that is not a room", "key", id, "err", err)
			continue
		}
		s.mu.Lock()
		changed := s.apply(r, e.Revision())
		f := s.onChange
		s.mu.Unlock()
		if f != nil && changed && !initial {
			f(id)
		}
	}
}

// apply keeps r at rev if it is newer than the copy. s.mu is held.
func (s *Store) apply(r Room, rev uint64) bool {
	if e, ok := s.rooms[r.ID]; ok && e.rev >= rev {
		return false
	}
	if x, ok := s.expired[r.ID]; ok && x >= rev {
		return false
	}
	delete(s.expired, r.ID)
	s.rooms[r.ID] = entry{r, rev}
	return true
}

// applyDelete records that id's key was deleted at rev. s.mu is held.
func (s *Store) applyDelete(id string, rev uint64) {
	if e, ok := s.rooms[id]; ok && e.rev > rev {
		return
	}
	delete(s.rooms, id)
	delete(s.touched, id)
	if s.expired[id] < rev {
		s.expired[id] = rev
	}
}

// Close writes what is pending and stops following the bucket.
func (s *Store) Close() error {
	err := s.Flush()
	s.cancel()
	<-s.done
	return err
}

// TTL is how long an idle room lives.
func (s *Store) TTL() time.Duration { return s.cfg.TTL }

// MaxRooms is how many rooms the store holds at most.
func (s *Store) MaxRooms() int { return s.cfg.MaxRooms }

// PerOwner is how many rooms one owner holds at once.
func (s *Store) PerOwner() int { return s.cfg.PerOwner }

// UnjoinedTTL is how long a room no reader joined lives.
func (s *Store) UnjoinedTTL() time.Duration { return s.cfg.UnjoinedTTL }

func (s *Store) opCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.ctx, 10*time.Second)
}

// Create makes a room reading tag for owner (a client address). It returns
// the room and its driver key, which is not stored and cannot be recovered.
// The room counts as never joined until MarkJoined. It is refused with
// ErrOwnerFull when owner holds PerOwner rooms, with ErrFull when the
// cluster holds MaxRooms: the room takes a slot of each cap first (slots.go).
// An owner "" is no one's: only MaxRooms applies.
func (s *Store) Create(tag, owner string) (Room, string, error) {
	return s.create(tag, owner, "", 0)
}

// CreateInClass makes a room of class (an id of package classes) reading
// tag, as Create does, but counted against the class's budget (at most
// budget rooms of the class at once: ErrClassFull) instead of owner's
// PerOwner; MaxRooms still applies. owner is recorded all the same.
func (s *Store) CreateInClass(tag, owner, class string, budget int) (Room, string, error) {
	if !ValidID(class) {
		return Room{}, "", fmt.Errorf("rooms: class id %q is not an id", class)
	}
	return s.create(tag, owner, class, max(budget, 1))
}

func (s *Store) create(tag, owner, class string, budget int) (Room, string, error) {
	id, err := NewSecret()
	if err != nil {
		return Room{}, "", err
	}
	key, err := NewSecret()
	if err != nil {
		return Room{}, "", err
	}
	tok, err := NewSecret()
	if err != nil {
		return Room{}, "", err
	}
	// One deadline for the slots and the record: a room whose record is
	// written at all is written within it of taking its slots (slots.go
	// counts on it).
	ctx, cancel := context.WithTimeout(s.ctx, createTimeout)
	defer cancel()
	oh := ownerHash(owner)
	slots, err := s.takeSlots(ctx, id, oh, class, budget)
	if err != nil {
		return Room{}, "", err
	}
	now := s.cfg.Now()
	r := Room{ID: id, Tag: tag, DriverHash: hashKey(key), IngestToken: tok, Created: now, LastActive: now,
		OwnerHash: oh, Slots: slots, NeverJoined: true, Class: class}
	data, err := json.Marshal(r)
	if err != nil {
		s.release(id, slots)
		return Room{}, "", err
	}
	rev, err := s.kv.Create(ctx, id, data, jetstream.KeyTTL(s.cfg.UnjoinedTTL+2*FlushEvery))
	if err != nil {
		// (Had the record been written after all, unheard of: its id is
		// known to no one, and it lets go of no slot that is not its own.)
		s.release(id, slots)
		return Room{}, "", fmt.Errorf("rooms: create: %w", err)
	}
	s.mu.Lock()
	s.apply(r, rev)
	s.mu.Unlock()
	if s.cfg.Sync != nil {
		if err := s.cfg.Sync(ctx); err != nil {
			return Room{}, "", fmt.Errorf("rooms: create: %w", err)
		}
	}
	return r, key, nil
}

// Get returns the room id names: ErrExpired when it lived and expired,
// ErrNotFound when it never was (or its marker was forgotten).
func (s *Store) Get(id string) (Room, error) {
	e, err := s.entry(id)
	return e.room, err
}

// entry is Get with the record's revision. A room whose time is up is
// expired.
func (s *Store) entry(id string) (entry, error) {
	e, err := s.lookup(id)
	switch {
	case errors.Is(err, ErrExpired):
		return entry{}, ErrExpired
	case err != nil:
		return entry{}, ErrNotFound
	}
	if s.over(e.room, s.cfg.Now()) {
		s.expire(e)
		return entry{}, ErrExpired
	}
	return e, nil
}

// lookup is the record of room id as this replica knows it, with its use
// here not yet written; a room this replica has not heard of yet (made on
// another replica a moment ago) is asked of the bucket. ErrExpired: the
// room's key holds a delete marker; ErrNotFound: it holds nothing; another
// error: the bucket could not be read.
func (s *Store) lookup(id string) (entry, error) {
	s.mu.Lock()
	e, ok := s.rooms[id]
	_, gone := s.expired[id]
	if ok {
		if t, ok := s.touched[id]; ok && t.After(e.room.LastActive) {
			e.room.LastActive = t
		}
	}
	s.mu.Unlock()
	switch {
	case ok:
		return e, nil
	case gone:
		return entry{}, ErrExpired
	case !ValidID(id):
		return entry{}, ErrNotFound
	}
	return s.fetch(id)
}

// fetch reads id from the bucket into the copy: ErrNotFound when its key
// holds no room, another error when the bucket could not be read. (A
// deleted key reads as not found: that a room expired, this replica
// knows from the bucket's watcher.)
func (s *Store) fetch(id string) (entry, error) {
	ctx, cancel := s.opCtx()
	defer cancel()
	kve, err := s.kv.Get(ctx, id)
	// A cluster electing the bucket's leader (new, or a node just died)
	// answers with errors for a moment: that is not "no such room". And a
	// KV get is served by any of the bucket's replicas (direct get), so a
	// follower a moment behind may not have a room made just now: in a
	// cluster, "not found" is believed after a second.
	notFoundUntil := time.Now().Add(time.Second)
	retry := func(err error) bool {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return s.cfg.Replicas > 1 && time.Now().Before(notFoundUntil)
		}
		return err != nil
	}
	for wait := 50 * time.Millisecond; retry(err); wait = min(2*wait, time.Second) {
		select {
		case <-ctx.Done():
			s.cfg.Logger.Warn("rooms: reading a room from the bucket", "room", id, "err", err)
			return entry{}, fmt.Errorf("rooms: reading %s…: %w", id[:6], err)
		case <-time.After(wait):
		}
		kve, err = s.kv.Get(ctx, id)
	}
	if err != nil {
		return entry{}, ErrNotFound
	}
	var r Room
	if json.Unmarshal(kve.Value(), &r) != nil || r.ID != id {
		return entry{}, ErrNotFound
	}
	s.mu.Lock()
	s.apply(r, kve.Revision())
	s.mu.Unlock()
	return entry{r, kve.Revision()}, nil
}

// expire deletes the room's key if it is still at e's revision (a replica
// that wrote it since knows better), marks it expired here and lets go of
// its slots. It reports whether it deleted the key.
func (s *Store) expire(e entry) bool {
	id := e.room.ID
	ctx, cancel := s.opCtx()
	defer cancel()
	err := s.kv.Delete(ctx, id, jetstream.LastRevision(e.rev))
	if err != nil {
		// Not deleted: another write came first (the watcher brings it),
		// or the bucket did not answer (the next Sweep tries again).
		if !broker.LostRace(err) {
			s.cfg.Logger.Warn("rooms: expiring", "room", id[:6]+"…", "err", err)
		}
		return false
	}
	s.mu.Lock()
	if cur, ok := s.rooms[id]; ok && cur.rev == e.rev {
		s.applyDelete(id, e.rev)
		s.gone = append(s.gone, id)
	}
	s.mu.Unlock()
	s.release(id, e.room.Slots)
	return true
}

// IsDriver reports whether key is the room's driver key, in constant time.
func (s *Store) IsDriver(id, key string) bool {
	r, err := s.Get(id)
	if err != nil || key == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashKey(key)), []byte(r.DriverHash)) == 1
}

// SetDriver hands the wheel of room id from reader from to reader to, if
// from still holds it (compare-and-set on the record: of two replicas
// handing the same wheel at once, one is refused with ErrWheelMoved). With
// lend, the wheel is lent: the ticket returned is to's, and a ticket lent
// before stops working; without, a loan ends. from "" takes a wheel no one
// holds; to "" leaves it with no one.
func (s *Store) SetDriver(id, from, to string, lend bool) (Room, string, error) {
	ticket := ""
	if lend {
		var err error
		if ticket, err = NewSecret(); err != nil {
			return Room{}, "", err
		}
	}
	r, err := s.update(id, func(r *Room) error {
		if r.Driver != from {
			return ErrWheelMoved
		}
		r.Driver = to
		r.WheelHash = ""
		if lend {
			r.WheelHash = hashKey(ticket)
		}
		return nil
	})
	return r, ticket, err
}

// TakeWheel gives reader to the wheel whoever holds it (a driver key's
// right), ending a loan.
func (s *Store) TakeWheel(id, to string) (Room, error) {
	return s.update(id, func(r *Room) error { r.Driver, r.WheelHash = to, ""; return nil })
}

// SetWheelHolder makes reader to drive if they hold ticket of the lent
// wheel and the wheel is with no one present, i.e. with from (what the
// caller saw), or with a reader holding the same ticket.
func (s *Store) SetWheelHolder(id, from, to string) (Room, error) {
	return s.update(id, func(r *Room) error {
		if r.Driver != from || r.WheelHash == "" {
			return ErrWheelMoved
		}
		r.Driver = to
		return nil
	})
}

// EndLoan ends the wheel's loan, if there is one: its ticket stops working.
func (s *Store) EndLoan(id string) error {
	r, err := s.Get(id)
	if err != nil || r.WheelHash == "" {
		return err
	}
	_, err = s.update(id, func(r *Room) error { r.WheelHash = ""; return nil })
	return err
}

// HoldsWheel reports whether ticket is the ticket of the room's lent wheel,
// in constant time.
func (s *Store) HoldsWheel(id, ticket string) bool {
	r, err := s.Get(id)
	if err != nil || ticket == "" || r.WheelHash == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashKey(ticket)), []byte(r.WheelHash)) == 1
}

// Token returns the room's ingest token; ok is false when there is no such room.
func (s *Store) Token(id string) (string, bool) {
	r, err := s.Get(id)
	if err != nil {
		return "", false
	}
	return r.IngestToken, true
}

// Touch marks the room used now. It is written with the next Flush.
func (s *Store) Touch(id string) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rooms[id]; ok {
		s.touched[id] = now
	}
}

// SetTag changes the tag the room reads.
func (s *Store) SetTag(id, tag string) (Room, error) {
	return s.update(id, func(r *Room) error { r.Tag = tag; return nil })
}

// RotateToken gives the room a new ingest token; the old one stops working.
func (s *Store) RotateToken(id string) (Room, error) {
	return s.update(id, func(r *Room) error {
		tok, err := NewSecret()
		r.IngestToken = tok
		return err
	})
}

// End ends the room (Room.Ended): what ended stays ended.
func (s *Store) End(id string) (Room, error) {
	return s.update(id, func(r *Room) error { r.Ended = true; return nil })
}

// OfClass is the live rooms of class, oldest first, as this replica's copy
// (of the whole bucket) knows them.
func (s *Store) OfClass(class string) []Room {
	now := s.cfg.Now()
	s.mu.Lock()
	var out []Room
	for id, e := range s.rooms {
		if e.room.Class != class || class == "" {
			continue
		}
		r := e.room
		if t, ok := s.touched[id]; ok && t.After(r.LastActive) {
			r.LastActive = t
		}
		if !s.over(r, now) {
			out = append(out, r)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].Created.Equal(out[j].Created) {
			return out[i].Created.Before(out[j].Created)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// MarkJoined records that a reader joined the room: from now on it lives
// until TTL after its last use (and its key loses its short TTL).
func (s *Store) MarkJoined(id string) error {
	r, err := s.Get(id)
	if err != nil || !r.NeverJoined {
		return err
	}
	_, err = s.update(id, func(r *Room) error { r.NeverJoined = false; return nil })
	return err
}

// update applies change to the room's record by compare-and-set on its
// revision, reading it again and retrying when another write came first.
// An error from change leaves the record as it was.
func (s *Store) update(id string, change func(*Room) error) (Room, error) {
	e, err := s.entry(id)
	if err != nil {
		return Room{}, err
	}
	ctx, cancel := s.opCtx()
	defer cancel()
	for range 10 {
		r := e.room
		if err := change(&r); err != nil {
			return Room{}, err
		}
		s.mu.Lock()
		if t, ok := s.touched[id]; ok && t.After(r.LastActive) {
			r.LastActive = t
		}
		s.mu.Unlock()
		if now := s.cfg.Now(); now.After(r.LastActive) {
			r.LastActive = now
		}
		if r.Owner != "" { // a record of an older version: keep only the hash
			r.OwnerHash, r.Owner = r.ownerHash(), ""
		}
		data, err := json.Marshal(r)
		if err != nil {
			return Room{}, err
		}
		rev, err := s.kv.Update(ctx, id, data, e.rev)
		if err == nil {
			s.mu.Lock()
			s.apply(r, rev)
			if t, ok := s.touched[id]; ok && !t.After(r.LastActive) {
				delete(s.touched, id)
			}
			s.mu.Unlock()
			return r, nil
		}
		if !broker.LostRace(err) {
			return Room{}, fmt.Errorf("rooms: saving %s…: %w", id[:6], err)
		}
		// Another write came first (or a delete): start from it.
		if e, err = s.fetch(id); err != nil {
			return Room{}, ErrNotFound
		}
	}
	return Room{}, fmt.Errorf("rooms: saving %s…: too many concurrent writes", id[:6])
}

// Sweep writes the rooms' LastActive, expires idle rooms and returns the
// ids of rooms that expired since the last Sweep (here or on another replica).
func (s *Store) Sweep() ([]string, error) {
	err := s.Flush()
	now := s.cfg.Now()
	s.mu.Lock()
	var over []entry
	for _, e := range s.rooms {
		if s.over(e.room, now) {
			over = append(over, e)
		}
	}
	s.mu.Unlock()
	for _, e := range over {
		s.expire(e)
	}
	s.mu.Lock()
	gone := s.gone
	s.gone = nil
	s.mu.Unlock()
	sort.Strings(gone)
	return slicesCompact(gone), err
}

func slicesCompact(ids []string) []string {
	out := ids[:0]
	for i, id := range ids {
		if i == 0 || id != ids[i-1] {
			out = append(out, id)
		}
	}
	return out
}

// over reports whether r's time is up at now: TTL after its last use, or
// UnjoinedTTL after its creation when no reader ever joined it.
func (s *Store) over(r Room, now time.Time) bool {
	if r.NeverJoined && now.Sub(r.Created) > s.cfg.UnjoinedTTL {
		return true
	}
	return now.Sub(r.LastActive) > s.cfg.TTL
}

// Len is the number of live rooms.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rooms)
}

// Flush writes the LastActive of rooms touched since the last write.
func (s *Store) Flush() error {
	s.mu.Lock()
	ids := make([]string, 0, len(s.touched))
	for id := range s.touched {
		ids = append(ids, id)
	}
	s.mu.Unlock()
	var errs []error
	for _, id := range ids {
		_, err := s.update(id, func(*Room) error { return nil })
		if err != nil && !errors.Is(err, ErrExpired) && !errors.Is(err, ErrNotFound) {
			errs = append(errs, err)
		}
		s.mu.Lock()
		if errors.Is(err, ErrExpired) || errors.Is(err, ErrNotFound) {
			delete(s.touched, id)
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// legacyFile is the rooms.json of versions that kept rooms in a file.
type legacyFile struct {
	Version int                  `json:"version"`
	Rooms   []*Room              `json:"rooms"`
	Expired map[string]time.Time `json:"expired,omitempty"`
}

// Import brings the rooms of an older version's rooms.json at path into
// the bucket, once: the file is renamed to path+".imported" after. Rooms
// the bucket holds already are left as they are; rooms whose time is up
// are not brought. An imported room takes the caps' slots as a new one
// does; one beyond the caps (the older version had them lower) is
// brought all the same, without slots, and counted as a room made before
// slots were (slots.go). A missing file is nothing to import.
func (s *Store) Import(path string) (int, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("rooms: %w", err)
	}
	var f legacyFile
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, fmt.Errorf("rooms: %s is not a rooms file (%v); move it aside to start without its rooms", path, err)
	}
	now, n := s.cfg.Now(), 0
	for _, r := range f.Rooms {
		if r == nil || !ValidID(r.ID) || s.over(*r, now) {
			continue
		}
		imported, err := s.importRoom(*r, now)
		if err != nil {
			return n, fmt.Errorf("rooms: importing %s: %w", path, err)
		}
		if imported {
			n++
		}
	}
	ctx, cancel := s.opCtx()
	defer cancel()
	// Expired rooms keep saying so: a key with a delete marker.
	for id := range f.Expired {
		if !ValidID(id) {
			continue
		}
		if _, err := s.kv.Create(ctx, id, []byte("{}")); err != nil {
			continue // it is there already, alive or expired
		}
		if err := s.kv.Delete(ctx, id); err != nil {
			return n, fmt.Errorf("rooms: importing %s: %w", path, err)
		}
	}
	if err := os.Rename(path, path+".imported"); err != nil {
		return n, fmt.Errorf("rooms: imported %s, but could not rename it: %w", path, err)
	}
	return n, nil
}

// importRoom brings one room of a rooms.json into the bucket, unless the
// bucket has it already.
func (s *Store) importRoom(r Room, now time.Time) (bool, error) {
	r.Driver = "" // no one is present yet
	r.OwnerHash, r.Owner = r.ownerHash(), ""
	ctx, cancel := context.WithTimeout(s.ctx, createTimeout) // as Create's
	defer cancel()
	slots, err := s.takeSlots(ctx, r.ID, r.OwnerHash, r.Class, 0)
	if errors.Is(err, ErrFull) || errors.Is(err, ErrOwnerFull) {
		s.cfg.Logger.Warn("rooms: importing a room beyond the caps: it counts against them until it ends", "room", r.ID[:6]+"…", "err", err)
	} else if err != nil {
		return false, err
	}
	r.Slots = slots
	val, err := json.Marshal(r)
	if err != nil {
		s.release(r.ID, slots)
		return false, err
	}
	var opts []jetstream.KVCreateOpt
	if r.NeverJoined {
		opts = append(opts, jetstream.KeyTTL(s.cfg.UnjoinedTTL-now.Sub(r.Created)+2*FlushEvery))
	}
	rev, err := s.kv.Create(ctx, r.ID, val, opts...)
	if err != nil {
		s.release(r.ID, slots)
		if broker.LostRace(err) {
			return false, nil
		}
		return false, err
	}
	s.mu.Lock()
	s.apply(r, rev)
	s.mu.Unlock()
	return true, nil
}

// NewSecret returns 128 random bits from crypto/rand, base64url without padding.
func NewSecret() (string, error) {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("rooms: random: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

var idRE = regexp.MustCompile(`^[A-Za-z0-9_-]{22}$`)

// ValidID reports whether id could be a room id (or a key, or a token).
func ValidID(id string) bool { return idRE.MatchString(id) }

// TicketHash is what the record keeps of a wheel ticket (Room.WheelHash).
func TicketHash(ticket string) string { return hashKey(ticket) }

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
