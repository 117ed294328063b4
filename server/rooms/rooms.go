// Package rooms is the durable side of pair-reading rooms: a room's id, its
// tag, its driver key (kept as a hash) and its ingest token, when it was made
// and last used; their persistence in one JSON file written atomically; idle
// expiry; the limit on how many rooms a server holds; and the token buckets
// that rate-limit room creation and room messages. It knows nothing of HTTP
// or websockets: who is present in a room lives in the server.
//
// Capabilities are random strings of 128 bits (crypto/rand, base64url):
//
//   - the room id is the viewer link (/rooms/{id}): whoever holds it reads along;
//   - the driver key (/rooms/{id}?k=KEY) lets its holder steer; only its
//     SHA-256 is stored, so the store file does not hand out the wheel;
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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"sync"
	"time"
)

// Defaults for Config's zero values.
const (
	DefaultTTL      = 24 * time.Hour
	DefaultMaxRooms = 48 // each room's feed counts against the live side's 64 feeds
	// DefaultPerOwner is how many rooms one client address holds at once:
	// without it, one address could take every room for a day.
	DefaultPerOwner = 4
	// DefaultUnjoinedTTL is how long a room lives that no reader ever
	// joined (opened its socket): a pair who start a session join within
	// seconds, so only unused rooms are cut short.
	DefaultUnjoinedTTL = 10 * time.Minute
	maxTombstones      = 10000
)

// Errors a caller turns into pages.
var (
	ErrNotFound  = errors.New("no such room")
	ErrExpired   = errors.New("the room expired")
	ErrFull      = errors.New("too many rooms on this server")
	ErrOwnerFull = errors.New("this address holds as many rooms as it may")
)

// Room is what is remembered of a room across restarts.
type Room struct {
	ID          string    `json:"id"`
	Tag         string    `json:"tag"`
	DriverHash  string    `json:"driver_key_sha256"`             // hex SHA-256 of the driver key
	WheelHash   string    `json:"wheel_ticket_sha256,omitempty"` // hex SHA-256 of the lent wheel's ticket; "" when not lent
	IngestToken string    `json:"ingest_token"`
	Created     time.Time `json:"created"`
	LastActive  time.Time `json:"last_active"`
	// Owner is the client address that created the room, for the cap on
	// rooms per address.
	Owner string `json:"owner,omitempty"`
	// NeverJoined is set until a reader first joins: such a room expires
	// after UnjoinedTTL from its creation. (Negative, so that rooms written
	// before it existed count as joined.)
	NeverJoined bool `json:"never_joined,omitempty"`
}

// Feed is the name of the room's live feed.
func (r Room) Feed() string { return FeedPrefix + r.ID }

// FeedPrefix starts the name of every room's feed.
const FeedPrefix = "room-"

// Config says where rooms are kept and how many, for how long.
type Config struct {
	Path     string        // the JSON file; "" keeps rooms in memory only
	TTL      time.Duration // idle time after which a room expires; 0 means DefaultTTL
	MaxRooms int           // 0 means DefaultMaxRooms
	PerOwner int           // rooms one owner holds at once; 0 means DefaultPerOwner
	// UnjoinedTTL is how long a room no reader joined lives after its
	// creation; 0 means DefaultUnjoinedTTL. (It is at most TTL.)
	UnjoinedTTL time.Duration
	Now         func() time.Time
}

// Store holds the rooms. Its methods are safe for concurrent use.
type Store struct {
	cfg Config

	mu      sync.Mutex
	rooms   map[string]*Room
	expired map[string]time.Time // tombstones: expired ids, so their links say so
	dirty   bool                 // LastActive changed since the last write
}

// file is the store's format on disk.
type file struct {
	Version int                  `json:"version"`
	Rooms   []*Room              `json:"rooms"`
	Expired map[string]time.Time `json:"expired,omitempty"`
}

// Open reads the store's file, if there is one. A missing file is an empty
// store; an unreadable one is an error (rooms must not vanish silently).
func Open(cfg Config) (*Store, error) {
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
	s := &Store{cfg: cfg, rooms: map[string]*Room{}, expired: map[string]time.Time{}}
	if cfg.Path == "" {
		return s, nil
	}
	data, err := os.ReadFile(cfg.Path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rooms: %w", err)
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("rooms: %s is not a rooms file (%v); move it aside to start with no rooms", cfg.Path, err)
	}
	for _, r := range f.Rooms {
		if r != nil && ValidID(r.ID) {
			s.rooms[r.ID] = r
		}
	}
	for id, t := range f.Expired {
		s.expired[id] = t
	}
	if len(s.sweep()) > 0 {
		// Written now, not at the next Flush: a server killed before then
		// and started with a longer TTL would bring the rooms back. A
		// failed write is tried again with the next Flush.
		s.save()
	}
	return s, nil
}

// TTL is how long an idle room lives.
func (s *Store) TTL() time.Duration { return s.cfg.TTL }

// MaxRooms is how many rooms the store holds at most.
func (s *Store) MaxRooms() int { return s.cfg.MaxRooms }

// PerOwner is how many rooms one owner holds at once.
func (s *Store) PerOwner() int { return s.cfg.PerOwner }

// UnjoinedTTL is how long a room no reader joined lives.
func (s *Store) UnjoinedTTL() time.Duration { return s.cfg.UnjoinedTTL }

// Create makes a room reading tag for owner (a client address). It returns
// the room and its driver key, which is not stored and cannot be recovered.
// The room counts as never joined until MarkJoined.
func (s *Store) Create(tag, owner string) (Room, string, error) {
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
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sweep()
	if len(s.rooms) >= s.cfg.MaxRooms {
		return Room{}, "", ErrFull
	}
	held := 0
	for _, r := range s.rooms {
		if r.Owner == owner {
			held++
		}
	}
	if held >= s.cfg.PerOwner {
		return Room{}, "", ErrOwnerFull
	}
	now := s.cfg.Now()
	r := &Room{ID: id, Tag: tag, DriverHash: hashKey(key), IngestToken: tok, Created: now, LastActive: now, Owner: owner, NeverJoined: true}
	s.rooms[id] = r
	if err := s.save(); err != nil {
		delete(s.rooms, id)
		return Room{}, "", err
	}
	return *r, key, nil
}

// Get returns the room id names: ErrExpired when it lived and expired,
// ErrNotFound when it never was (or its tombstone was forgotten).
func (s *Store) Get(id string) (Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return Room{}, err
	}
	return *r, nil
}

// get is Get with s.mu held; it expires the room when its time is up.
func (s *Store) get(id string) (*Room, error) {
	r, ok := s.rooms[id]
	if !ok {
		if _, gone := s.expired[id]; gone {
			return nil, ErrExpired
		}
		return nil, ErrNotFound
	}
	if s.over(r, s.cfg.Now()) {
		s.expire(id)
		s.save()
		return nil, ErrExpired
	}
	return r, nil
}

// IsDriver reports whether key is the room's driver key, in constant time.
func (s *Store) IsDriver(id, key string) bool {
	r, err := s.Get(id)
	if err != nil || key == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(hashKey(key)), []byte(r.DriverHash)) == 1
}

// Lend starts a loan of the wheel and returns its ticket, which is not
// stored and cannot be recovered. A ticket lent before stops working.
func (s *Store) Lend(id string) (string, error) {
	ticket, err := NewSecret()
	if err != nil {
		return "", err
	}
	if _, err := s.update(id, func(r *Room) error { r.WheelHash = hashKey(ticket); return nil }); err != nil {
		return "", err
	}
	return ticket, nil
}

// EndLoan ends the wheel's loan, if there is one: its ticket stops working.
// It stops working even when the store cannot be written (the error says
// so): the write is tried again with the next Flush.
func (s *Store) EndLoan(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil || r.WheelHash == "" {
		return err
	}
	r.WheelHash = ""
	s.dirty = true
	return s.save()
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, err := s.get(id); err == nil {
		r.LastActive = s.cfg.Now()
		s.dirty = true
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

func (s *Store) update(id string, change func(*Room) error) (Room, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.get(id)
	if err != nil {
		return Room{}, err
	}
	old := *r
	if err := change(r); err != nil {
		*r = old
		return Room{}, err
	}
	r.LastActive = s.cfg.Now()
	if err := s.save(); err != nil {
		*r = old
		return Room{}, err
	}
	return *r, nil
}

// Sweep expires idle rooms and returns their ids.
func (s *Store) Sweep() ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gone := s.sweep()
	if len(gone) == 0 && !s.dirty {
		return nil, nil
	}
	return gone, s.save()
}

func (s *Store) sweep() []string {
	var gone []string
	now := s.cfg.Now()
	for id, r := range s.rooms {
		if s.over(r, now) {
			s.expire(id)
			gone = append(gone, id)
		}
	}
	sort.Strings(gone)
	return gone
}

// over reports whether r's time is up at now: TTL after its last use, or
// UnjoinedTTL after its creation when no reader ever joined it.
func (s *Store) over(r *Room, now time.Time) bool {
	if r.NeverJoined && now.Sub(r.Created) > s.cfg.UnjoinedTTL {
		return true
	}
	return now.Sub(r.LastActive) > s.cfg.TTL
}

// MarkJoined records that a reader joined the room: from now on it lives
// until TTL after its last use. It is written with the next Flush.
func (s *Store) MarkJoined(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, err := s.get(id); err == nil && r.NeverJoined {
		r.NeverJoined = false
		r.LastActive = s.cfg.Now()
		s.dirty = true
	}
}

// expire replaces a room with its tombstone; s.mu is held.
func (s *Store) expire(id string) {
	delete(s.rooms, id)
	s.expired[id] = s.cfg.Now()
	if len(s.expired) > maxTombstones {
		oldest, at := "", time.Time{}
		for id, t := range s.expired {
			if oldest == "" || t.Before(at) {
				oldest, at = id, t
			}
		}
		delete(s.expired, oldest)
	}
	s.dirty = true
}

// Len is the number of live rooms.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.rooms)
}

// Flush writes the store when something changed since the last write.
func (s *Store) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dirty {
		return nil
	}
	return s.save()
}

// save writes the whole store atomically: a temporary file in the same
// directory, synced, then renamed over the old one. s.mu is held.
func (s *Store) save() error {
	if s.cfg.Path == "" {
		s.dirty = false
		return nil
	}
	f := file{Version: 1, Rooms: make([]*Room, 0, len(s.rooms)), Expired: s.expired}
	for _, r := range s.rooms {
		f.Rooms = append(f.Rooms, r)
	}
	sort.Slice(f.Rooms, func(i, j int) bool { return f.Rooms[i].Created.Before(f.Rooms[j].Created) })
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("rooms: %w", err)
	}
	if err := writeAtomic(s.cfg.Path, append(data, '\n')); err != nil {
		return fmt.Errorf("rooms: saving %s: %w", s.cfg.Path, err)
	}
	s.dirty = false
	return nil
}

func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after a successful rename there is nothing to remove
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
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

func hashKey(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
