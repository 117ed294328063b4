// Package annotations keeps what readers write about the function: a note
// per case, the worksheet's answers, and comments on lines. A room's notes
// live in a NATS JetStream key-value bucket, one key per note, so that every
// replica and every restart sees them; a note's revision is the bucket's,
// and an edit names the revision it started from (compare-and-set), so a
// conflicting edit is refused with the text that won instead of losing it.
// A reader without a room keeps notes in the browser; this package then
// only renders, checks and exports them (see http.go).
//
// The package owns its state; the server talks to it through Store's
// methods and the handlers in http.go.
package annotations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/kvmirror"

	"github.com/syncloop/syncloop/server/annotations/anchor"
	"github.com/syncloop/syncloop/server/internal/wake"
)

// Note is one thing a reader wrote. Its ID says what it is:
//
//	case.<key>       the reader's note on a case (Markdown)
//	writer.<key>     who writes that case's channel (a symbol, or words)
//	set.desired      where DesiredStateOfWorld is declared (file:line)
//	set.actual       where ActualStateOfWorld is declared (file:line)
//	sentence         the pattern and level-triggered reconcile, in one sentence
//	comment.<id>     a comment on lines of code (Markdown), with its Quote
type Note struct {
	ID     string        `json:"id"`
	Text   string        `json:"text"`
	Author string        `json:"author"`
	Color  int           `json:"color"`
	Quote  *anchor.Quote `json:"quote,omitempty"`
	At     time.Time     `json:"at"`
	// Created is when the note was first written (At is its last change):
	// a thread of comments is in the order they were written.
	Created time.Time `json:"created,omitzero"`
	// Prev is the text this change replaced, and who had written it.
	Prev *Version `json:"prev,omitempty"`
	// Rev is the bucket's revision of this version; 0 for a note not yet
	// written. It is not stored in the value.
	Rev uint64 `json:"rev"`
	// Deleted is set on the live event of a deleted comment; Gone on the
	// events of a room whose notes were purged (the room expired).
	Deleted bool `json:"deleted,omitempty"`
	Gone    bool `json:"gone,omitempty"`
}

// Version is an earlier text of a note.
type Version struct {
	Text   string    `json:"text"`
	Author string    `json:"author"`
	At     time.Time `json:"at"`
}

// Limits.
const (
	MaxNoteBytes = 8 << 10   // per note
	MaxRoomBytes = 256 << 10 // all of a room's notes together
	MaxRoomNotes = 400       // notes per room
	Colors       = 8         // reader colours (room.css .rc-0 … .rc-7)
)

var idRE = regexp.MustCompile(`^(case\.[a-z][a-z0-9]{0,31}|writer\.[a-z][a-z0-9]{0,31}|exercise\.[a-z][a-z0-9]{0,31}|set\.desired|set\.actual|sentence|podworkers|vm\.(?:desired|actual|sentence|controllers)|vmphase\.[A-Za-z][A-Za-z0-9]{0,47}|comment\.[A-Za-z0-9_-]{6,32}|pin\.[A-Za-z0-9_-]{1,80})$`)

// ValidID reports whether id names a kind of note this package keeps.
func ValidID(id string) bool { return idRE.MatchString(id) }

// Kind is the part of a note's id before the first dot.
func Kind(id string) string { k, _, _ := strings.Cut(id, "."); return k }

// Errors.
var (
	ErrTooLarge = errors.New("too large")
	ErrInvalid  = errors.New("invalid note")
)

// ConflictError is returned when a note changed since the revision an edit
// started from: Current is the version that is there now.
type ConflictError struct{ Current Note }

func (e *ConflictError) Error() string {
	return fmt.Sprintf("note %s changed meanwhile (revision %d, by %s)", e.Current.ID, e.Current.Rev, e.Current.Author)
}

// Config is what a Store needs.
type Config struct {
	JS       jetstream.JetStream
	Bucket   string // "" means "annotations"
	Memory   bool   // memory storage (nothing outlives the NATS server)
	Replicas int    // 0 means 1
	// Sync, when set, waits until what JetStream acknowledged is on disk
	// (broker.Sync): a write is answered once it would outlive a host crash.
	Sync   func(ctx context.Context) error
	Logger *slog.Logger
	// Changed, when set, is told of each note written or deleted, here or
	// on another replica.
	Changed *wake.Signal
}

// Store is the rooms' notes: the bucket, and a copy of it kept current by
// one watcher per process, from which reads and live events are served.
type Store struct {
	kv      jetstream.KeyValue
	sync    func(ctx context.Context) error
	log     *slog.Logger
	changed *wake.Signal

	mirror *kvmirror.Mirror // keeps the copy (rooms) current

	mu    sync.Mutex
	rooms map[string]map[string]Note // room → id → latest
	subs  map[string]map[chan Note]struct{}
}

// history is how many versions of a note the bucket keeps.
const history = 8

// Open creates the bucket when it is missing and starts watching it. It
// returns when the copy holds everything the bucket had.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = "annotations"
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	kv, err := cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "syncloop: what readers wrote in rooms, a key per note (<room>.<note>)",
		History:     history,
		Storage:     broker.Storage(cfg.Memory),
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("annotations: bucket %s: %w", cfg.Bucket, err)
	}
	s := &Store{kv: kv, sync: cfg.Sync, log: cfg.Logger, changed: cfg.Changed,
		rooms: map[string]map[string]Note{}, subs: map[string]map[chan Note]struct{}{}}
	if s.mirror, err = kvmirror.Start(ctx, kv, s.mirrored); err != nil {
		return nil, fmt.Errorf("annotations: %w", err)
	}
	return s, nil
}

// mirrored applies an entry of the bucket to the copy and tells the room's
// subscribers. It is the only writer of s.rooms (on the mirror's goroutine).
func (s *Store) mirrored(e kvmirror.Entry) {
	room, id, ok := strings.Cut(e.Key(), ".")
	if !ok || id == totalsID {
		return
	}
	var n Note
	if e.Put() {
		if err := json.Unmarshal(e.Value(), &n); err != nil {
			s.log.Warn("annotations: bad value", "key", e.Key(), "err", err)
			return
		}
	} else {
		n.Deleted = true
		n.Gone = e.Operation() == jetstream.KeyValuePurge
	}
	n.ID, n.Rev = id, e.Revision()
	s.apply(room, n)
	s.changed.Notify()
}

func (s *Store) apply(room string, n Note) {
	s.mu.Lock()
	defer s.mu.Unlock()
	notes := s.rooms[room]
	if n.Deleted {
		delete(notes, n.ID)
		if len(notes) == 0 {
			delete(s.rooms, room)
		}
	} else {
		if notes == nil {
			notes = map[string]Note{}
			s.rooms[room] = notes
		}
		notes[n.ID] = n
	}
	for ch := range s.subs[room] {
		select {
		case ch <- n:
		default:
			// A subscriber this far behind reloads everything: closing
			// its channel tells it so.
			delete(s.subs[room], ch)
			close(ch)
		}
	}
}

// Close stops the watcher and ends every subscription.
func (s *Store) Close() {
	s.mirror.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for room, chs := range s.subs {
		for ch := range chs {
			close(ch)
		}
		delete(s.subs, room)
	}
}

// Notes returns the room's notes.
func (s *Store) Notes(room string) []Note {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Note, 0, len(s.rooms[room]))
	for _, n := range s.rooms[room] {
		out = append(out, n)
	}
	return out
}

// Subscribe returns the room's notes now and a channel of their changes,
// which is closed when the subscriber falls behind or the store closes
// (reload then), or by cancel.
func (s *Store) Subscribe(room string) ([]Note, <-chan Note, func()) {
	ch := make(chan Note, 64)
	s.mu.Lock()
	out := make([]Note, 0, len(s.rooms[room]))
	for _, n := range s.rooms[room] {
		out = append(out, n)
	}
	if s.subs[room] == nil {
		s.subs[room] = map[chan Note]struct{}{}
	}
	s.subs[room][ch] = struct{}{}
	s.mu.Unlock()
	return out, ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, ok := s.subs[room][ch]; ok {
			delete(s.subs[room], ch)
			close(ch)
		}
	}
}

// End tells the room's subscribers here that the room is gone, and ends
// their subscriptions. A room's notes tell their pages so when they are
// purged; a room with no notes has nothing to purge, and would tell no one.
func (s *Store) End(room string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs[room] {
		select {
		case ch <- Note{Deleted: true, Gone: true}:
		default:
		}
		close(ch)
	}
	delete(s.subs, room)
}

// Put writes n into the room's notes if the note's revision is still rev
// (0: the note must not exist yet). On a conflict it returns a
// *ConflictError holding the note as it is now. The returned note has its
// new revision.
func (s *Store) Put(ctx context.Context, room string, n Note, rev uint64) (Note, error) {
	key := room + "." + n.ID
	if n.Quote == nil && rev != 0 && Kind(n.ID) == "comment" {
		// An edit of a comment keeps the lines it was written on.
		cur, err := s.get(ctx, key)
		if err != nil {
			return Note{}, err
		}
		n.Quote = cur.Quote
	}
	if err := s.check(room, &n); err != nil {
		return Note{}, err
	}
	cur, err := s.get(ctx, key)
	if err != nil {
		return Note{}, err
	}
	if cur.Rev != rev {
		cur.ID = n.ID
		return Note{}, &ConflictError{Current: cur}
	}
	if cur.Rev != 0 && cur.Text != n.Text {
		n.Prev = &Version{Text: cur.Text, Author: cur.Author, At: cur.At}
	} else if cur.Rev != 0 {
		n.Prev = cur.Prev
	}
	if n.Quote == nil && cur.Quote != nil {
		n.Quote = cur.Quote // a comment keeps the lines it was written on
	}
	n.At = time.Now().UTC().Truncate(time.Millisecond)
	n.Created = n.At
	if cur.Rev != 0 {
		n.Created = cur.CreatedAt()
	}
	b, err := json.Marshal(stored(n))
	if err != nil {
		return Note{}, err
	}
	// The room's caps hold across writers and replicas: the note's share
	// of them is taken, compare-and-set, before the note is written, and
	// given back if it is not.
	delta := totals{Bytes: size(n) - size(cur)}
	if cur.Rev == 0 {
		delta.Notes = 1
	}
	if err := s.reserve(ctx, room, delta); err != nil {
		return Note{}, err
	}
	var newRev uint64
	if rev == 0 {
		newRev, err = s.kv.Create(ctx, key, b)
	} else {
		newRev, err = s.kv.Update(ctx, key, b, rev)
	}
	if err != nil {
		if uerr := s.reserve(context.WithoutCancel(ctx), room, delta.neg()); uerr != nil {
			s.log.Warn("annotations: give back a room's share", "err", uerr)
		}
	}
	if broker.LostRace(err) {
		// Someone wrote between our read and our write.
		cur, gerr := s.get(ctx, key)
		if gerr != nil {
			return Note{}, gerr
		}
		cur.ID = n.ID
		return Note{}, &ConflictError{Current: cur}
	}
	if err != nil {
		return Note{}, fmt.Errorf("annotations: put %s: %w", n.ID, err)
	}
	if err := s.durable(ctx); err != nil {
		return Note{}, fmt.Errorf("annotations: put %s: %w", n.ID, err)
	}
	n.Rev = newRev
	return n, nil
}

// durable waits for Config.Sync, when set.
func (s *Store) durable(ctx context.Context) error {
	if s.sync == nil {
		return nil
	}
	return s.sync(ctx)
}

// CreatedAt is when the note was first written, as far as it says.
func (n Note) CreatedAt() time.Time {
	if n.Created.IsZero() {
		return n.At
	}
	return n.Created
}

// stored is a note as the bucket keeps it: without the revision, which is
// the bucket's.
func stored(n Note) Note {
	n.Rev, n.Deleted, n.Gone = 0, false, false
	return n
}

// get reads a key; a missing or deleted key is a Note with Rev 0, except
// that the revision of a delete is kept, so that a write after it must name
// it (a comment deleted meanwhile is a conflict too).
func (s *Store) get(ctx context.Context, key string) (Note, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Note{}, nil
	}
	if err != nil {
		return Note{}, fmt.Errorf("annotations: get: %w", err)
	}
	var n Note
	if err := json.Unmarshal(e.Value(), &n); err != nil {
		return Note{}, fmt.Errorf("annotations: %s: %w", key, err)
	}
	n.Rev = e.Revision()
	return n, nil
}

// Delete removes a comment, if it is still at revision rev.
func (s *Store) Delete(ctx context.Context, room, id string, rev uint64) error {
	if !ValidID(id) || Kind(id) != "comment" {
		return fmt.Errorf("%w: only comments are deleted; empty a note instead", ErrInvalid)
	}
	cur, err := s.get(ctx, room+"."+id)
	if err != nil {
		return err
	}
	err = s.kv.Delete(ctx, room+"."+id, jetstream.LastRevision(rev))
	if err == nil && cur.Rev == rev && rev != 0 {
		if uerr := s.reserve(context.WithoutCancel(ctx), room, totals{Notes: -1, Bytes: -size(cur)}); uerr != nil {
			s.log.Warn("annotations: give back a deleted comment's share", "err", uerr)
		}
	}
	if broker.LostRace(err) {
		cur, gerr := s.get(ctx, room+"."+id)
		if gerr != nil {
			return gerr
		}
		cur.ID = id
		return &ConflictError{Current: cur}
	}
	if err != nil {
		return err
	}
	return s.durable(ctx)
}

// History returns a note's versions, newest first (deletes included, marked).
func (s *Store) History(ctx context.Context, room, id string) ([]Note, error) {
	es, err := s.kv.History(ctx, room+"."+id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("annotations: history: %w", err)
	}
	out := make([]Note, 0, len(es))
	for i := len(es) - 1; i >= 0; i-- {
		e := es[i]
		if e.Operation() == jetstream.KeyValuePurge {
			break // a purge leaves only its marker: nothing before it is kept
		}
		var n Note
		if e.Operation() == jetstream.KeyValuePut {
			if err := json.Unmarshal(e.Value(), &n); err != nil {
				continue
			}
		} else {
			n.Deleted, n.At = true, e.Created()
		}
		n.ID, n.Rev = id, e.Revision()
		out = append(out, n)
	}
	return out, nil
}

// totalsID is the key, in a room's keys, of its totals: what its notes
// hold together, counted against MaxRoomNotes and MaxRoomBytes. It is not
// a note's id (ValidID).
const totalsID = "_totals"

// totals is a room's notes counted together.
type totals struct {
	Notes int `json:"notes"`
	Bytes int `json:"bytes"`
}

func (t totals) neg() totals { return totals{-t.Notes, -t.Bytes} }

// reserve adds delta to the room's totals, compare-and-set against the
// bucket's revision of them, unless that would take the room over its
// caps (ErrTooLarge). A room without totals (written before they were
// kept) starts from the notes this process knows of.
func (s *Store) reserve(ctx context.Context, room string, delta totals) error {
	key := room + "." + totalsID
	for range 1000 {
		var t totals
		var rev uint64
		e, err := s.kv.Get(ctx, key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			t = s.counted(room)
		case err != nil:
			return fmt.Errorf("annotations: the room's totals: %w", err)
		default:
			if err := json.Unmarshal(e.Value(), &t); err != nil {
				return fmt.Errorf("annotations: the room's totals: %w", err)
			}
			rev = e.Revision()
		}
		next := totals{max(0, t.Notes+delta.Notes), max(0, t.Bytes+delta.Bytes)}
		if delta.Notes > 0 && next.Notes > MaxRoomNotes {
			return fmt.Errorf("%w: a room holds at most %d notes", ErrTooLarge, MaxRoomNotes)
		}
		if delta.Bytes > 0 && next.Bytes > MaxRoomBytes {
			return fmt.Errorf("%w: a room's notes hold at most %d KB together", ErrTooLarge, MaxRoomBytes>>10)
		}
		b, _ := json.Marshal(next)
		if rev == 0 {
			_, err = s.kv.Create(ctx, key, b)
		} else {
			_, err = s.kv.Update(ctx, key, b, rev)
		}
		if broker.LostRace(err) {
			continue // another writer counted meanwhile: count again
		}
		if err != nil {
			return fmt.Errorf("annotations: the room's totals: %w", err)
		}
		return nil
	}
	return fmt.Errorf("annotations: the room's totals: too many writers at once; try again")
}

// counted is the room's totals from this process's copy.
func (s *Store) counted(room string) totals {
	s.mu.Lock()
	defer s.mu.Unlock()
	var t totals
	for _, n := range s.rooms[room] {
		t.Notes++
		t.Bytes += size(n)
	}
	return t
}

// DeleteRoom purges every note of a room: the room is gone.
func (s *Store) DeleteRoom(ctx context.Context, room string) error {
	keys, err := s.kv.ListKeysFiltered(ctx, room+".>")
	if err != nil {
		return fmt.Errorf("annotations: list %s: %w", room, err)
	}
	var errs []error
	for k := range keys.Keys() {
		if err := s.kv.Purge(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// check validates a note before it is written: its id, its size, the
// room's size, the author's name and colour, and a comment's quote. It
// cleans the text of bidirectional overrides, which could make a note read
// otherwise than it is written.
func (s *Store) check(room string, n *Note) error {
	if !ValidID(n.ID) {
		return fmt.Errorf("%w: no such kind of note %q", ErrInvalid, n.ID)
	}
	if !utf8.ValidString(n.Text) {
		return fmt.Errorf("%w: the text is not UTF-8", ErrInvalid)
	}
	n.Text = CleanText(n.Text)
	if len(n.Text) > MaxNoteBytes {
		return fmt.Errorf("%w: a note holds at most %d KB", ErrTooLarge, MaxNoteBytes>>10)
	}
	name, ok := CleanName(n.Author)
	if !ok {
		return fmt.Errorf("%w: a name is 1 to 32 printable characters", ErrInvalid)
	}
	n.Author = name
	if n.Color < 0 || n.Color >= Colors {
		n.Color = 0
	}
	if Kind(n.ID) == "comment" {
		if n.Quote == nil {
			return fmt.Errorf("%w: a comment quotes the lines it is about", ErrInvalid)
		}
		if err := n.Quote.Valid(); err != nil {
			return fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	} else {
		n.Quote = nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	total, count := 0, 0
	for id, o := range s.rooms[room] {
		if id == n.ID {
			continue
		}
		total += size(o)
		count++
	}
	if count+1 > MaxRoomNotes {
		return fmt.Errorf("%w: a room holds at most %d notes", ErrTooLarge, MaxRoomNotes)
	}
	if total+size(*n) > MaxRoomBytes {
		return fmt.Errorf("%w: a room's notes hold at most %d KB together", ErrTooLarge, MaxRoomBytes>>10)
	}
	return nil
}

func size(n Note) int {
	s := len(n.Text)
	if n.Quote != nil {
		s += len(n.Quote.Exact) + len(n.Quote.Prefix) + len(n.Quote.Suffix)
	}
	return s
}

// CleanText drops bidirectional embedding, override and isolate controls
// (U+202A–U+202E, U+2066–U+2069) and NULs: a note is text to read as
// written.
func CleanText(s string) string {
	return strings.Map(func(r rune) rune {
		if r == 0 || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return -1
		}
		return r
	}, s)
}

// CleanName is an author's name as shown: printable, no bidi controls, 1
// to 32 characters.
func CleanName(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	out := make([]rune, 0, len(s))
	for _, c := range CleanText(strings.TrimSpace(s)) {
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) {
			continue
		}
		out = append(out, c)
	}
	if len(out) == 0 || len(out) > 32 {
		return "", false
	}
	return string(out), true
}
