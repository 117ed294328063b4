package rooms

// The caps on rooms, for the whole cluster: at most MaxRooms rooms, and at
// most PerOwner of one client address, whichever replica made them.
//
// Each cap is a range of numbered slots, keys of the bucket beside the
// rooms' (syncloop_rooms_slots), each holding the id of the room that
// holds it:
//
//	slot.N            N < MaxRooms
//	owner.<hash>.N    N < PerOwner; hash is the SHA-256 of the client address (Room.OwnerHash)
//	class.<id>.N      N < the class's budget, for a class's rooms instead of their owner's range
//	creator.<hash>.N  N < the allowance of whoever made the class, over all their classes' rooms
//	class.<id>.student.<sid>.N  N < ClassPlace.PerStudent: the student who started it
//
// A class's rooms take slot.N only below MaxRooms less a reserve
// (Config.ClassReserve), so that classes never take every room.
//
// Why the count is right. A room takes a slot with kv.Create, which
// JetStream applies only when the key holds nothing (or a delete marker):
// of any number of Creates of one key, on any replicas, exactly one
// succeeds. Create returns a room only after it took a slot of each range
// and wrote the room's record, which names them (Room.Slots). So no more
// rooms hold slots than there are slots, as long as a slot is never let go
// while its room can still be used. A slot is let go by a delete
// conditioned on its revision (a slot taken again in between is left
// alone), and only:
//
//   - when its room expires (expire), after the room's key was deleted by
//     compare-and-set on its revision: a replica that used the room in
//     between keeps it, and no write brings a deleted room back (updates
//     are compare-and-set on the record's revision; new rooms have new ids);
//   - when a Create finds every slot of a range held (reclaim), if the
//     room it names is deleted, or its time is up and this replica could
//     delete it (as expire does), or no record of it exists and the slot
//     is older than creationGrace. That last is a Create that died between
//     taking its slots and writing its record: a Create that succeeds
//     writes its record within createTimeout of taking them (one deadline
//     for both, and a record is looked for only once the slot is older),
//     and creationGrace exceeds createTimeout with room for the clocks of
//     replica and NATS server to differ. (A record written after its
//     Create gave up is of a room whose id no one was told.)
//
// The slots have no TTL. A room in use lives as long as it is used, so a
// TTL would have to be renewed with every write of the room's record, by a
// second write that could fail after the first, leaving a live room
// without its slot. A slot left behind by a replica that died is taken
// back instead when a Create needs it.
//
// Rooms written before the caps had slots (by an older version) hold none.
// They are counted from this replica's copy (unslotted), and new rooms
// take slots only below the cap less their number. That number only falls
// (this version makes no such rooms), and the copy misses none of them (it
// starts from the whole bucket, and a copy a moment behind counts rooms
// since deleted, never too few), so every room holding a slot sits below
// the cap less the slotless rooms now: the two together are at most the
// cap. (A rooms.json with more rooms than the caps allow is imported whole:
// those beyond hold no slots, and the caps are exceeded until they end.)
// Every replica must be given the same caps.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
)

const (
	// createTimeout bounds a Create: its slots, its record.
	createTimeout = 10 * time.Second
	// defaultCreationGrace is how old a slot naming no room must be before
	// it is taken back: createTimeout, and a margin for clocks.
	defaultCreationGrace = time.Minute
	// markerTTL is how long the marker of a slot let go is kept; then the
	// key is gone whole, and the bucket keeps nothing of a client whose
	// rooms ended (but a slot a dead replica left, until it is taken back).
	markerTTL = time.Minute
)

// errNoSlot: every slot of a range is held.
var errNoSlot = errors.New("every slot is held")

func roomSlot(n int) string { return "slot." + strconv.Itoa(n) }

func classSlots(class string) func(int) string {
	return func(n int) string { return "class." + class + "." + strconv.Itoa(n) }
}

func creatorSlots(creator string) func(int) string {
	return func(n int) string { return "creator." + creator + "." + strconv.Itoa(n) }
}

func studentSlots(class, student string) func(int) string {
	return func(n int) string { return "class." + class + ".student." + student + "." + strconv.Itoa(n) }
}

func ownerSlots(owner string) func(int) string {
	return func(n int) string { return "owner." + owner + "." + strconv.Itoa(n) }
}

// openSlots makes (or updates) the slots' bucket.
func openSlots(ctx context.Context, cfg Config) (jetstream.KeyValue, error) {
	kv, err := cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket + "_slots",
		Description: "syncloop: the caps on rooms, a key per slot held, holding its room's id",
		History:     1,
		// For the markers' own TTL (PurgeTTL); nothing else expires.
		LimitMarkerTTL: markerTTL,
		Storage:        broker.Storage(cfg.Memory),
		Replicas:       cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("rooms: bucket %s_slots: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// slotRange is one cap a room counts against: n slots key(0) … key(n-1),
// and the error a room is refused with when they are all held.
type slotRange struct {
	n    int
	key  func(int) string
	full error
}

// ranges are the caps a new room counts against besides MaxRooms: its
// class's (the class's budget, its creator's allowance, its student's
// share) when it is a class's, else its owner's (when owner is not "").
func (s *Store) ranges(owner string, own int, place *ClassPlace) []slotRange {
	if place == nil {
		if owner == "" {
			return nil
		}
		return []slotRange{{s.cfg.PerOwner - own, ownerSlots(owner), ErrOwnerFull}}
	}
	out := []slotRange{{place.Budget, classSlots(place.Class), ErrClassFull}}
	if place.Creator != "" {
		out = append(out, slotRange{place.Allowance, creatorSlots(place.Creator), ErrCreatorFull})
	}
	if place.Student != "" {
		out = append(out, slotRange{place.PerStudent, studentSlots(place.Class, place.Student), ErrStudentFull})
	}
	return out
}

// takeSlots takes for room id a slot of each of its caps (ranges) and one
// of the rooms' range, and returns their keys: the range's error
// (ErrClassFull, ErrOwnerFull…) or ErrFull when a range is all held. A
// class's room takes a slot of the rooms' range only below MaxRooms less
// the reserve (Config.ClassReserve), which is left to rooms of no class.
func (s *Store) takeSlots(ctx context.Context, id, owner string, place *ClassPlace) ([]string, error) {
	all, own := s.unslotted(owner)
	var slots []string
	for _, r := range s.ranges(owner, own, place) {
		k, err := s.takeSlot(ctx, id, r.n, r.key)
		if err != nil {
			s.release(id, slots)
			if errors.Is(err, errNoSlot) {
				return nil, r.full
			}
			return nil, err
		}
		slots = append(slots, k)
	}
	k, err := s.takeRoomSlot(ctx, id, s.cfg.MaxRooms-all, place != nil)
	if err != nil {
		s.release(id, slots)
		if errors.Is(err, errNoSlot) {
			return nil, ErrFull
		}
		return nil, err
	}
	return append([]string{k}, slots...), nil
}

// takeRoomSlot takes one of the n slots of the rooms' range: for a class's
// room one below n less the reserve; for another room one of the reserve
// first, so that rooms of no class leave the classes' part alone while
// the reserve has room.
func (s *Store) takeRoomSlot(ctx context.Context, id string, n int, class bool) (string, error) {
	low := n - s.reserve()
	if class {
		return s.takeSlot(ctx, id, low, roomSlot)
	}
	if low < 0 {
		low = 0
	}
	k, err := s.takeSlot(ctx, id, n-low, func(i int) string { return roomSlot(low + i) })
	if !errors.Is(err, errNoSlot) {
		return k, err
	}
	return s.takeSlot(ctx, id, low, roomSlot)
}

// reserve is how many of MaxRooms classes cannot take (ClassRooms).
func (s *Store) reserve() int { return s.cfg.MaxRooms - ClassRooms(s.cfg.MaxRooms, s.cfg.ClassReserve) }

// ClassRooms is how many of maxRooms the classes' rooms may hold: all but
// reserve, or when reserve is 0 all but a quarter of them and at least 4;
// at least one.
func ClassRooms(maxRooms, reserve int) int {
	if reserve <= 0 {
		reserve = max(maxRooms/4, 4)
	}
	return max(maxRooms-reserve, 1)
}

// takeSlot takes one of the n slots key(0) … key(n-1) for room id: a free
// one, else one whose room no longer holds it.
func (s *Store) takeSlot(ctx context.Context, id string, n int, key func(int) string) (string, error) {
	if n <= 0 {
		return "", errNoSlot
	}
	take := func(k string) (bool, error) {
		_, err := s.slots.Create(ctx, k, []byte(id))
		if err != nil && !broker.LostRace(err) {
			return false, fmt.Errorf("rooms: taking a slot: %w", err)
		}
		return err == nil, nil
	}
	// From a random one: Creates at the same moment try different keys.
	start := rand.IntN(n)
	for i := range n {
		k := key((start + i) % n)
		if ok, err := take(k); err != nil {
			return "", err
		} else if ok {
			return k, nil
		}
	}
	for i := range n {
		k := key(i)
		if !s.reclaim(ctx, k) {
			continue
		}
		if ok, err := take(k); err != nil {
			return "", err
		} else if ok {
			return k, nil
		}
	}
	return "", errNoSlot
}

// reclaim lets the slot at key go when the room it names no longer holds
// it, and reports whether the slot may be free now.
func (s *Store) reclaim(ctx context.Context, key string) bool {
	e, err := s.slots.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return true // let go in the meantime
	}
	if err != nil || s.holds(string(e.Value()), time.Since(e.Created())) {
		return false
	}
	err = s.slots.Purge(ctx, key, jetstream.LastRevision(e.Revision()), jetstream.PurgeTTL(markerTTL))
	return err == nil || broker.LostRace(err) // a mismatch: let go, or taken, in the meantime
}

// holds reports whether room id still holds its slots (see the top of
// this file); a slot of age is one of them. A room whose time is up is
// expired here, and holds on if it could not be (a replica used it in the
// meantime, or the bucket did not answer).
func (s *Store) holds(id string, age time.Duration) bool {
	e, err := s.lookup(id)
	for try := range 2 {
		switch {
		case errors.Is(err, ErrExpired):
			return false
		case errors.Is(err, ErrNotFound):
			return age < s.cfg.creationGrace
		case err != nil:
			return true
		}
		if e.room.Ended {
			return false // its slots were let go when it ended (Store.End)
		}
		if !s.over(e.room, s.cfg.Now()) {
			return true
		}
		if s.expire(e) {
			return false
		}
		if try > 0 {
			return true
		}
		// The delete lost: this replica's copy was behind the bucket (or
		// another replica wrote the room, or deleted it). Once more, from
		// the bucket.
		e, err = s.fetch(id)
	}
	return true
}

// release lets go of room id's slots at keys, those that still name it.
func (s *Store) release(id string, keys []string) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := s.opCtx()
	defer cancel()
	for _, k := range keys {
		e, err := s.slots.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || (err == nil && string(e.Value()) != id) {
			continue
		}
		if err == nil {
			err = s.slots.Purge(ctx, k, jetstream.LastRevision(e.Revision()), jetstream.PurgeTTL(markerTTL))
		}
		if err != nil && !broker.LostRace(err) {
			// It stays held until a Create finds it so (reclaim).
			s.cfg.Logger.Warn("rooms: letting a slot go", "room", id[:6]+"…", "err", err)
		}
	}
}

// unslotted counts the rooms that hold no slots, all of them and those of
// owner: rooms made before the caps had slots, or imported beyond them.
// One whose time is up is expired, and counted if it could not be (holds).
func (s *Store) unslotted(owner string) (all, own int) {
	now := s.cfg.Now()
	var held, over []entry
	s.mu.Lock()
	for id, e := range s.rooms {
		if len(e.room.Slots) > 0 || e.room.Ended {
			continue
		}
		if t, ok := s.touched[id]; ok && t.After(e.room.LastActive) {
			e.room.LastActive = t
		}
		if s.over(e.room, now) {
			over = append(over, e)
		} else {
			held = append(held, e)
		}
	}
	s.mu.Unlock()
	for _, e := range over {
		if s.holds(e.room.ID, 0) {
			held = append(held, e)
		}
	}
	for _, e := range held {
		all++
		if owner != "" && e.room.ownerHash() == owner {
			own++
		}
	}
	return all, own
}
