package rooms

// The rooms' records in their KV bucket (see record.go for what a record
// holds): this replica's copy of the bucket, kept current by its watcher,
// and every change to a record, by compare-and-set on its revision.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/kvmirror"
	"github.com/syncloop/syncloop/server/internal/wake"
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

// Config says where rooms are kept and how many, for how long.
type Config struct {
	JS       jetstream.JetStream
	Bucket   string        // "" means DefaultBucket
	Memory   bool          // keep the bucket in memory (nothing outlives the NATS server)
	Replicas int           // copies of the bucket in a cluster; 0 means 1
	TTL      time.Duration // idle time after which a room expires; 0 means DefaultTTL
	MaxRooms int           // 0 means DefaultMaxRooms
	PerOwner int           // rooms one owner holds at once; 0 means DefaultPerOwner
	// ClassReserve is how many of MaxRooms the classes' rooms cannot take;
	// 0 means a quarter of MaxRooms, at least 4.
	ClassReserve int
	// UnjoinedTTL is how long a room no reader joined lives after its
	// creation; 0 means DefaultUnjoinedTTL. (It is at most TTL.)
	UnjoinedTTL time.Duration
	Now         func() time.Time
	Logger      *slog.Logger
	// Sync, when set, waits until what JetStream acknowledged is on disk
	// (broker.Sync): a room is handed out once it would outlive a host crash.
	Sync func(ctx context.Context) error
	// Changed, when set, is told of each change to a room's record (here
	// or on another replica) and to who is in a room here.
	Changed *wake.Signal

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
	mirror *kvmirror.Mirror // keeps rooms and expired current

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
	s := &Store{cfg: cfg, kv: kv, slots: slots,
		rooms: map[string]entry{}, expired: map[string]uint64{}, touched: map[string]time.Time{}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if s.mirror, err = kvmirror.Start(ctx, kv, s.mirrored); err != nil {
		s.cancel()
		return nil, fmt.Errorf("rooms: %w", err)
	}
	return s, nil
}

// OnChange sets f to be told of each room created here, and each room
// another write changed (from this replica or another), after the initial
// state. Set it before use.
func (s *Store) OnChange(f func(id string)) {
	s.mu.Lock()
	s.onChange = f
	s.mu.Unlock()
}

// mirrored applies an entry of the bucket to the copy, and tells of a
// change made since the copy began (kvmirror).
func (s *Store) mirrored(e kvmirror.Entry) {
	defer s.cfg.Changed.Notify()
	id := e.Key()
	if !e.Put() {
		s.mu.Lock()
		_, had := s.rooms[id]
		s.applyDelete(id, e.Revision())
		if had && !e.Initial {
			s.gone = append(s.gone, id)
		}
		f := s.onChange
		s.mu.Unlock()
		if f != nil && !e.Initial {
			f(id)
		}
		return
	}
	var r Room
	if err := json.Unmarshal(e.Value(), &r); err != nil || r.ID != id {
		s.cfg.Logger.Warn("rooms: a record that is not a room", "key", id, "err", err)
		return
	}
	s.mu.Lock()
	changed := s.apply(r, e.Revision())
	f := s.onChange
	s.mu.Unlock()
	if f != nil && changed && !e.Initial {
		f(id)
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
	s.mirror.Stop()
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
	return s.create(tag, owner, nil, "")
}

// CreateReading is Create for a room that reads reading (Room.Reading).
func (s *Store) CreateReading(tag, reading, owner string) (Room, string, error) {
	return s.create(tag, owner, nil, reading)
}

// ClassPlace is what a room of a class counts against: the class's
// budget, the allowance of whoever made the class (over all their
// classes), and the share of the student who starts it.
type ClassPlace struct {
	Class  string // the class's id (package classes)
	Budget int    // rooms of the class at once
	// Creator names who made the class (a hash of their client address),
	// "" for no allowance: Allowance is how many rooms all their classes
	// hold at once (ErrCreatorFull).
	Creator   string
	Allowance int
	// Student is the id of the student who starts the room, "" for none:
	// they hold at most PerStudent open rooms of the class (ErrStudentFull).
	Student    string
	PerStudent int
	// Reading is what the room reads (Room.Reading): the class's choice.
	Reading string
}

// CreateInClass makes a room of a class reading tag, as Create does, but
// counted against the class's caps (ClassPlace) instead of owner's
// PerOwner; MaxRooms still applies, less the reserve classes cannot take.
// owner is recorded all the same.
func (s *Store) CreateInClass(tag, owner string, place ClassPlace) (Room, string, error) {
	if !ValidID(place.Class) || (place.Student != "" && !ValidID(place.Student)) {
		return Room{}, "", fmt.Errorf("rooms: class id %q is not an id", place.Class)
	}
	place.Budget = max(place.Budget, 1)
	return s.create(tag, owner, &place, place.Reading)
}

func (s *Store) create(tag, owner string, place *ClassPlace, reading string) (Room, string, error) {
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
	slots, err := s.takeSlots(ctx, id, oh, place)
	if err != nil {
		return Room{}, "", err
	}
	now := s.cfg.Now()
	r := Room{ID: id, Tag: tag, DriverHash: hashKey(key), IngestToken: tok, Created: now, LastActive: now,
		OwnerHash: oh, Slots: slots, NeverJoined: true, Reading: reading}
	if place != nil {
		r.Class, r.Student = place.Class, place.Student
	}
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
	f := s.onChange
	s.mu.Unlock()
	if f != nil {
		f(id) // the watcher, bringing what the copy has, will not tell
	}
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

// peek is the record of room id as this replica's copy has it, with its
// use here not yet written, for a caller that holds a lock: it neither
// asks the bucket (a room this replica has not heard of is ErrNotFound)
// nor deletes a room whose time is up (that is ErrExpired).
func (s *Store) peek(id string) (Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.rooms[id]
	if !ok {
		if _, gone := s.expired[id]; gone {
			return Room{}, ErrExpired
		}
		return Room{}, ErrNotFound
	}
	if t, ok := s.touched[id]; ok && t.After(e.room.LastActive) {
		e.room.LastActive = t
	}
	if s.over(e.room, s.cfg.Now()) {
		return Room{}, ErrExpired
	}
	return e.room, nil
}

// Each calls f with every room of this replica's copy (some may have
// expired by now: Get says so).
func (s *Store) Each(f func(Room)) {
	s.mu.Lock()
	all := make([]Room, 0, len(s.rooms))
	for _, e := range s.rooms {
		all = append(all, e.room)
	}
	s.mu.Unlock()
	for _, r := range all {
		f(r)
	}
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

// Touch marks the room used now. It is written with the next Flush.
func (s *Store) Touch(id string) {
	now := s.cfg.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rooms[id]; ok {
		s.touched[id] = now
	}
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
	return slices.Compact(gone), err
}

// over reports whether r's time is up at now, by the store's TTLs.
func (s *Store) over(r Room, now time.Time) bool { return r.over(now, s.cfg.TTL, s.cfg.UnjoinedTTL) }

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
