// Package rooms is pair-reading rooms, whole. Read from ls:
//
//   - record.go: a room's record and its changes (this file);
//   - store.go: the records in their KV bucket, this replica's copy of it
//     (kept by server/internal/kvmirror) and compare-and-set writes;
//     slots.go: the caps on how many rooms there are; import.go: an older
//     version's rooms.json;
//   - service.go: the rooms' HTTP side and what they ask of the site and
//     the feeds; metrics.go: their gauges;
//   - room.go: a room with readers on this replica; message.go: what a
//     reader's messages do; wheel.go: who drives, as pure rules;
//     presence.go: who is present on the other replicas; wire.go: what
//     replicas tell each other of a room;
//   - protocol.go: the websocket's messages, typed both ways, and its close
//     codes; socket.go: its I/O; limit.go: the token buckets that
//     rate-limit it.
//
// No lock of a room or of the service is held across a write to the
// bucket: a change is decided under the lock, written without it, and its
// result taken under it again (room.go).
//
// A room's record lives in a JetStream KV bucket (syncloop_rooms), one key
// per room id: its tag, its driver key (kept as a hash), its ingest token,
// when it was made and last used, who holds the wheel, the hash of the
// client address that made it, the caps' slots it holds and the names its
// readers gave. Every replica
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
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"time"

	"github.com/syncloop/syncloop/server/names"
)

// Errors a caller turns into pages.
var (
	ErrNotFound  = errors.New("no such room")
	ErrExpired   = errors.New("the room expired")
	ErrFull      = errors.New("too many rooms on this server")
	ErrOwnerFull = errors.New("this address holds as many rooms as it may")
	ErrClassFull = errors.New("this class holds as many rooms as its budget allows")
	// ErrCreatorFull: the classes of whoever made this class hold their
	// allowance of rooms.
	ErrCreatorFull = errors.New("the classes of this class's instructor hold as many rooms as this server allows them")
	// ErrStudentFull: the student holds as many open rooms of the class as
	// one student may.
	ErrStudentFull = errors.New("you hold as many open rooms of this class as one student may")
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
	// cluster: room.go), "" when no one does.
	Driver string `json:"driver,omitempty"`
	// Class is the id of the class the room was started in (package
	// classes), "" for a room of no class. A class's room takes a slot of
	// the class's budget instead of its owner address's (slots.go).
	Class string `json:"class,omitempty"`
	// Student is the id of the class's student who started the room (their
	// session's), "" for a room of no class.
	Student string `json:"student,omitempty"`
	// Ended is set when a driver ended the room: its notes turn read-only
	// and its feed takes no relay, but the record (and so its notes and
	// hand-in) stays until the room expires, for its class's instructor.
	// An ended room holds no slot (Store.End lets them go).
	Ended bool `json:"ended,omitempty"`
	// ActiveAtEnd is LastActive as it was when the room ended: its last
	// real use (ending it, and the readers still on its page after, move
	// LastActive, which keeps the record for its TTL). Zero for a room not
	// ended, or ended before it was kept.
	ActiveAtEnd time.Time `json:"active_at_end,omitzero"`
	// Readers are the names readers gave in the room, each once, in the
	// order first given, at most maxReadersKept: who was in it, for a
	// hand-in read after they left (presence ends with the sockets).
	Readers []string `json:"readers,omitempty"`
	// Names is who each reader is in the room: the name each reader's
	// browser (its reader cookie's hash) or class session ("s:" and the
	// student id) goes by here, as the notes they write are signed. A name
	// that looks like another reader's (names.Skeleton) is numbered:
	// "Sam (2)".
	Names map[string]string `json:"names,omitempty"`
	// Reading is what the room reads, chosen when it was made: "" for the
	// first reading (syncLoopIteration), ReadingVolume for the second.
	Reading string `json:"reading,omitempty"`
}

// ReadingVolume is Room.Reading for a room that reads the volume
// manager's reconciler (/rooms/{id} shows /k8s/{tag}/volume-manager).
const ReadingVolume = "volume-manager"

// ParseReading is the Room.Reading a form's reading= names: "" (or
// "sync-loop") for the first reading, ReadingVolume for the second; false
// for any other.
func ParseReading(s string) (string, bool) {
	switch s {
	case "", "sync-loop", "syncloop":
		return "", true
	case ReadingVolume:
		return ReadingVolume, true
	}
	return "", false
}

// maxReadersKept bounds Room.Readers, and maxNamesKept Room.Names: a name
// given past them is not kept.
const (
	maxReadersKept = 32
	maxNamesKept   = 64
)

// nameFor is the name reader key goes by in the room when they give name:
// name, numbered when another reader's looks the same; changed reports
// whether the record would change.
func (r Room) nameFor(key, name string) (kept string, changed bool) {
	kept = name
	for n := 2; ; n++ {
		clash := false
		for k, v := range r.Names {
			if k != key && names.Skeleton(v) == names.Skeleton(kept) {
				clash = true
				break
			}
		}
		if !clash {
			break
		}
		kept = fmt.Sprintf("%s (%d)", name, n)
	}
	if r.Ended || key == "" {
		return kept, false
	}
	_, known := r.Names[key]
	if !known && len(r.Names) >= maxNamesKept {
		return kept, false
	}
	return kept, r.Names[key] != kept || r.keepsName(kept)
}

// keepsName reports whether the record would add name to its Readers.
func (r Room) keepsName(name string) bool {
	return name != "" && !r.Ended && len(r.Readers) < maxReadersKept && !slices.Contains(r.Readers, name)
}

// NameOf is the name reader key goes by in the room, "" when none.
func (r Room) NameOf(key string) string { return r.Names[key] }

// keyIs reports whether key is the room's driver key, in constant time.
func (r Room) keyIs(key string) bool {
	return key != "" && subtle.ConstantTimeCompare([]byte(hashKey(key)), []byte(r.DriverHash)) == 1
}

// ticketIs reports whether ticket is the ticket of the room's lent wheel,
// in constant time.
func (r Room) ticketIs(ticket string) bool {
	return ticket != "" && r.WheelHash != "" && subtle.ConstantTimeCompare([]byte(hashKey(ticket)), []byte(r.WheelHash)) == 1
}

// over reports whether r's time is up at now: ttl after its last use, or
// unjoined after its creation when no reader ever joined it (however
// recently its page was opened). A room is still there at exactly its
// time, and gone a moment after.
func (r Room) over(now time.Time, ttl, unjoined time.Duration) bool {
	if r.NeverJoined && now.Sub(r.Created) > unjoined {
		return true
	}
	return now.Sub(r.LastActive) > ttl
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

// The changes a room's record sees, each a compare-and-set (Store.update).

// IsDriver reports whether key is the room's driver key, in constant time.
func (s *Store) IsDriver(id, key string) bool {
	r, err := s.Get(id)
	return err == nil && r.keyIs(key)
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
	return err == nil && r.ticketIs(ticket)
}

// Token returns the room's ingest token; ok is false when there is no such room.
func (s *Store) Token(id string) (string, bool) {
	r, err := s.Get(id)
	if err != nil {
		return "", false
	}
	return r.IngestToken, true
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

// End ends the room (Room.Ended): what ended stays ended. It lets go of
// the caps' slots the room held at once (a room ended holds none: its
// class's budget, its owner's share and MaxRooms have its place back),
// while its record, and so its hand-in, stays until it expires.
func (s *Store) End(id string) (Room, error) {
	var held []string
	r, err := s.update(id, func(r *Room) error {
		held = append(held[:0], r.Slots...)
		if !r.Ended {
			r.ActiveAtEnd = r.LastActive
			s.mu.Lock()
			if t, ok := s.touched[id]; ok && t.After(r.ActiveAtEnd) {
				r.ActiveAtEnd = t
			}
			s.mu.Unlock()
		}
		r.Ended, r.Slots = true, nil
		return nil
	})
	if err == nil {
		s.release(id, held)
	}
	return r, err
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

// AddReader records that reader key (Room.Names) goes by name in the
// room, and name among its readers (Room.Readers), once; it returns the
// name kept, numbered when another reader's looks the same.
func (s *Store) AddReader(id, key, name string) (string, error) {
	r, err := s.Get(id)
	if err != nil {
		return name, err
	}
	kept, changed := r.nameFor(key, name)
	if !changed {
		return kept, nil
	}
	_, err = s.update(id, func(r *Room) error {
		kept, changed = r.nameFor(key, name) // another replica may have written since
		if !changed {
			return nil
		}
		if r.Names == nil {
			r.Names = map[string]string{}
		}
		r.Names[key] = kept
		if r.keepsName(kept) {
			r.Readers = append(r.Readers, kept)
		}
		return nil
	})
	return kept, err
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
