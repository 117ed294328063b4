package classes

// A class's students and their sessions, in the classes' bucket beside
// the class's record (under its id, so that one filter lists each kind):
//
//	ID.s.SID    the student SID: their name, when last seen, their roster place
//	ID.r.N      roster place N < MaxStudents, held by a student id (taken by Create: compare-and-set)
//	ID.n.HASH   the name whose look-alike skeleton (package names) hashes to HASH, held by a student id
//	ID.t.HASH   the session whose token hashes to HASH: the student id it is
//
// A student is who holds a session: the class page's hello gives one (a
// random token in an HttpOnly cookie, syncloop-class-ID; the bucket keeps
// only its SHA-256), and every hello renews it, their roster place and
// their name, which otherwise expire with the bucket's TTL. Each place
// and each name is taken by kv.Create, which exactly one of any number of
// concurrent writers wins, on any replica: the roster never holds more
// than MaxStudents, and no two students of a class hold look-alike names.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/names"
	"github.com/syncloop/syncloop/server/rooms"
)

// ErrNoSession: the request carries no session of the class (or one that
// expired): its holder has not given a name on the class's page.
var ErrNoSession = errors.New("not a student of this class")

// NameTakenError: another student of the class goes by a name that looks
// the same.
type NameTakenError struct{ Name string }

func (e *NameTakenError) Error() string {
	return fmt.Sprintf("a student named %s is already in this class; add an initial", e.Name)
}

// CookieName is the cookie that holds a student's session of class id.
func CookieName(id string) string { return "syncloop-class-" + id }

// rosterEntry is a student's key's value.
type rosterEntry struct {
	Name  string    `json:"name"`
	Seen  time.Time `json:"seen"`
	Place int       `json:"place"`
}

func placeKey(id string, n int) string   { return id + ".r." + strconv.Itoa(n) }
func nameKey(id, name string) string     { return id + ".n." + hashKey(names.Skeleton(name))[:32] }
func sessionKey(id, token string) string { return id + ".t." + hashKey(token) }

// NewSession makes student of class id, named name, and returns them with
// their session's token: ErrRoster when the roster is full, a
// *NameTakenError when another student's name looks the same.
func (s *Store) NewSession(ctx context.Context, id, name string) (Student, string, error) {
	sid, err := rooms.NewSecret()
	if err != nil {
		return Student{}, "", err
	}
	token, err := rooms.NewSecret()
	if err != nil {
		return Student{}, "", err
	}
	st, err := s.Hello(ctx, id, sid, name)
	if err != nil {
		return Student{}, "", err
	}
	if err := s.Renew(ctx, id, token, sid); err != nil {
		return Student{}, "", err
	}
	return st, token, nil
}

// Renew writes session token of class id, student sid, again: it lives
// the bucket's TTL from now.
func (s *Store) Renew(ctx context.Context, id, token, sid string) error {
	if _, err := s.kv.Put(ctx, sessionKey(id, token), []byte(sid)); err != nil {
		return fmt.Errorf("classes: session of %s…: %w", id[:6], err)
	}
	return nil
}

// Session is the student whose session of class id token is:
// ErrNoSession when it is none (or theirs expired).
func (s *Store) Session(ctx context.Context, id, token string) (Student, error) {
	if !rooms.ValidID(id) || !rooms.ValidID(token) {
		return Student{}, ErrNoSession
	}
	e, err := s.kv.Get(ctx, sessionKey(id, token))
	if err != nil {
		return Student{}, noSession(err)
	}
	sid := string(e.Value())
	st, _, err := s.student(ctx, id, sid)
	return st, err
}

// SessionOf is the student whose session of class id r carries.
func (s *Store) SessionOf(r *http.Request, id string) (Student, string, error) {
	c, err := r.Cookie(CookieName(id))
	if err != nil {
		return Student{}, "", ErrNoSession
	}
	st, err := s.Session(r.Context(), id, c.Value)
	return st, c.Value, err
}

func noSession(err error) error {
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return ErrNoSession
	}
	return err
}

// student reads student sid of class id, and their entry.
func (s *Store) student(ctx context.Context, id, sid string) (Student, rosterEntry, error) {
	if !rooms.ValidID(sid) {
		return Student{}, rosterEntry{}, ErrNoSession
	}
	e, err := s.kv.Get(ctx, studentKey(id, sid))
	if err != nil {
		return Student{}, rosterEntry{}, noSession(err)
	}
	var re rosterEntry
	if json.Unmarshal(e.Value(), &re) != nil || re.Name == "" {
		return Student{}, rosterEntry{}, ErrNoSession
	}
	return Student{ID: sid, Name: re.Name, Seen: re.Seen}, re, nil
}

// Hello records that student sid of class id goes by name, now. A new
// student past MaxStudents is refused (ErrRoster); a student on the
// roster never is. A name that looks like another student's is refused
// (*NameTakenError).
func (s *Store) Hello(ctx context.Context, id, sid, name string) (Student, error) {
	if !rooms.ValidID(id) || !rooms.ValidID(sid) {
		return Student{}, ErrNotFound
	}
	old, re, err := s.student(ctx, id, sid)
	known := err == nil
	if err != nil && !errors.Is(err, ErrNoSession) {
		return Student{}, err
	}
	if err := s.claim(ctx, id, sid, name); err != nil {
		return Student{}, err
	}
	if known && names.Skeleton(old.Name) != names.Skeleton(name) {
		s.let(ctx, nameKey(id, old.Name), sid)
	}
	if !known {
		if re.Place, err = s.takePlace(ctx, id, sid); err != nil {
			s.let(ctx, nameKey(id, name), sid)
			return Student{}, err
		}
	} else if _, err := s.kv.Put(ctx, placeKey(id, re.Place), []byte(sid)); err != nil { // renewed
		return Student{}, fmt.Errorf("classes: roster of %s…: %w", id[:6], err)
	}
	st := Student{ID: sid, Name: name, Seen: s.cfg.Now()}
	re.Name, re.Seen = name, st.Seen
	data, err := json.Marshal(re)
	if err != nil {
		return Student{}, err
	}
	if _, err := s.kv.Put(ctx, studentKey(id, sid), data); err != nil {
		return Student{}, fmt.Errorf("classes: roster of %s…: %w", id[:6], err)
	}
	return st, nil
}

// claim takes (or renews) name's key of class id for student sid. Another
// student holding it is a *NameTakenError, unless they are gone.
func (s *Store) claim(ctx context.Context, id, sid, name string) error {
	key := nameKey(id, name)
	for range 5 {
		_, err := s.kv.Create(ctx, key, []byte(sid))
		if err == nil {
			return nil
		}
		if !broker.LostRace(err) {
			return fmt.Errorf("classes: a name: %w", err)
		}
		e, err := s.kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // let go meanwhile
		}
		if err != nil {
			return fmt.Errorf("classes: a name: %w", err)
		}
		holder := string(e.Value())
		if holder == sid {
			_, err = s.kv.Update(ctx, key, []byte(sid), e.Revision()) // renewed
			if err == nil || broker.LostRace(err) {
				return nil
			}
			return fmt.Errorf("classes: a name: %w", err)
		}
		cur, _, err := s.student(ctx, id, holder)
		if err == nil && names.Skeleton(cur.Name) == names.Skeleton(name) {
			return &NameTakenError{Name: cur.Name}
		}
		// Its holder is gone, or goes by another name now: take it over,
		// unless another did first.
		if _, err := s.kv.Update(ctx, key, []byte(sid), e.Revision()); err == nil {
			return nil
		}
	}
	return fmt.Errorf("classes: a name: too many concurrent writes")
}

// let lets go of key if sid holds it.
func (s *Store) let(ctx context.Context, key, sid string) {
	e, err := s.kv.Get(ctx, key)
	if err == nil && string(e.Value()) == sid {
		s.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	}
}

// takePlace takes a free place of class id's roster for sid: ErrRoster
// when all MaxStudents are held. A few places at random first (concurrent
// hellos try different ones), then those the bucket lists as free.
func (s *Store) takePlace(ctx context.Context, id, sid string) (int, error) {
	take := func(n int) (bool, error) {
		_, err := s.kv.Create(ctx, placeKey(id, n), []byte(sid))
		if err != nil && !broker.LostRace(err) {
			return false, fmt.Errorf("classes: roster of %s…: %w", id[:6], err)
		}
		return err == nil, nil
	}
	for range 4 {
		n := rand.IntN(MaxStudents)
		if ok, err := take(n); ok || err != nil {
			return n, err
		}
	}
	held, err := s.places(ctx, id)
	if err != nil {
		return 0, err
	}
	for _, n := range rand.Perm(MaxStudents) {
		if held[n] {
			continue
		}
		if ok, err := take(n); ok || err != nil {
			return n, err
		}
	}
	return 0, ErrRoster
}

// places are the roster places of class id held now.
func (s *Store) places(ctx context.Context, id string) (map[int]bool, error) {
	w, err := s.kv.WatchFiltered(ctx, []string{placeKey(id, 0)[:len(id)+3] + "*"}, jetstream.IgnoreDeletes(), jetstream.MetaOnly())
	if err != nil {
		return nil, fmt.Errorf("classes: roster of %s…: %w", id[:6], err)
	}
	defer w.Stop()
	held := map[int]bool{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("classes: roster of %s…: the watch ended", id[:6])
			}
			if e == nil {
				return held, nil
			}
			if n, err := strconv.Atoi(e.Key()[len(id)+3:]); err == nil {
				held[n] = true
			}
		}
	}
}
