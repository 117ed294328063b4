package classes

import (
	"cmp"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/rooms"
)

// DefaultBucket is the KV bucket that holds the classes.
const DefaultBucket = "syncloop_classes"

// touchEvery is how often a class in use has its LastActive written.
const touchEvery = time.Minute

// StoreConfig says where classes are kept and for how long.
type StoreConfig struct {
	JS       jetstream.JetStream
	Bucket   string        // "" means DefaultBucket
	Memory   bool          // keep the bucket in memory
	Replicas int           // copies of the bucket in a cluster; 0 means 1
	TTL      time.Duration // time after the instructor last looked; 0 means DefaultTTL
	Now      func() time.Time
}

// Store holds the classes. Every read asks the bucket (a class is read a
// few times a minute, by a handful of pages), so every replica sees a
// class as soon as it is made.
type Store struct {
	cfg StoreConfig
	kv  jetstream.KeyValue
}

// OpenStore makes (or updates) the bucket.
func OpenStore(ctx context.Context, cfg StoreConfig) (*Store, error) {
	if cfg.Bucket == "" {
		cfg.Bucket = DefaultBucket
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	kv, err := cfg.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      cfg.Bucket,
		Description: "syncloop: classes, a key per class id",
		History:     1,
		TTL:         cfg.TTL + 2*touchEvery,
		Storage:     broker.Storage(cfg.Memory),
		Replicas:    cfg.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("classes: bucket %s: %w", cfg.Bucket, err)
	}
	return &Store{cfg: cfg, kv: kv}, nil
}

// TTL is how long a class lives after its instructor last looked at it.
func (s *Store) TTL() time.Duration { return s.cfg.TTL }

// Create makes a class and returns it with its instructor key, which is
// not stored and cannot be recovered.
func (s *Store) Create(ctx context.Context, c Class) (Class, string, error) {
	id, err := rooms.NewSecret()
	if err != nil {
		return Class{}, "", err
	}
	key, err := rooms.NewSecret()
	if err != nil {
		return Class{}, "", err
	}
	now := s.cfg.Now()
	c.ID, c.KeyHash, c.Created, c.LastActive = id, hashKey(key), now, now
	if c.Budget <= 0 {
		c.Budget = DefaultBudget
	}
	data, err := json.Marshal(c)
	if err != nil {
		return Class{}, "", err
	}
	if _, err := s.kv.Create(ctx, id, data); err != nil {
		return Class{}, "", fmt.Errorf("classes: create: %w", err)
	}
	return c, key, nil
}

// Get returns the class id names: ErrNotFound when there is none (or its
// time is up).
func (s *Store) Get(ctx context.Context, id string) (Class, error) {
	c, _, err := s.get(ctx, id)
	return c, err
}

func (s *Store) get(ctx context.Context, id string) (Class, uint64, error) {
	if !rooms.ValidID(id) {
		return Class{}, 0, ErrNotFound
	}
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return Class{}, 0, ErrNotFound
	}
	if err != nil {
		return Class{}, 0, fmt.Errorf("classes: reading %s…: %w", id[:6], err)
	}
	var c Class
	if json.Unmarshal(e.Value(), &c) != nil || c.ID != id {
		return Class{}, 0, ErrNotFound
	}
	if s.cfg.Now().Sub(c.LastActive) > s.cfg.TTL {
		return Class{}, 0, ErrNotFound
	}
	return c, e.Revision(), nil
}

// Instructor returns the class if key is its instructor key (compared in
// constant time): ErrBadKey when it is not.
func (s *Store) Instructor(ctx context.Context, id, key string) (Class, error) {
	c, err := s.Get(ctx, id)
	if err != nil {
		return Class{}, err
	}
	if key == "" || subtle.ConstantTimeCompare([]byte(hashKey(key)), []byte(c.KeyHash)) != 1 {
		return Class{}, ErrBadKey
	}
	return c, nil
}

// Update applies change to the class by compare-and-set on its revision,
// retrying when another write came first.
func (s *Store) Update(ctx context.Context, id string, change func(*Class) error) (Class, error) {
	for range 10 {
		c, rev, err := s.get(ctx, id)
		if err != nil {
			return Class{}, err
		}
		if err := change(&c); err != nil {
			return Class{}, err
		}
		c.LastActive = s.cfg.Now()
		data, err := json.Marshal(c)
		if err != nil {
			return Class{}, err
		}
		if _, err = s.kv.Update(ctx, id, data, rev); err == nil {
			return c, nil
		}
		if !broker.LostRace(err) {
			return Class{}, fmt.Errorf("classes: saving %s…: %w", id[:6], err)
		}
	}
	return Class{}, fmt.Errorf("classes: saving %s…: too many concurrent writes", id[:6])
}

// studentKey is the bucket's key of student sid of class id: under the
// class's id, so that one filter lists them.
func studentKey(id, sid string) string { return id + ".s." + sid }

// Students is class id's roster: every student who gave a name on its
// page within the bucket's TTL, by name.
func (s *Store) Students(ctx context.Context, id string) ([]Student, error) {
	if !rooms.ValidID(id) {
		return nil, ErrNotFound
	}
	w, err := s.kv.WatchFiltered(ctx, []string{studentKey(id, "*")}, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("classes: roster of %s…: %w", id[:6], err)
	}
	defer w.Stop()
	var out []Student
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("classes: roster of %s…: the watch ended", id[:6])
			}
			if e == nil { // the current values are all in
				slices.SortFunc(out, func(a, b Student) int { return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.ID, b.ID)) })
				return out, nil
			}
			var st Student
			if json.Unmarshal(e.Value(), &st) != nil || st.Name == "" {
				continue
			}
			_, st.ID, _ = strings.Cut(strings.TrimPrefix(e.Key(), id), ".s.")
			out = append(out, st)
		}
	}
}

// Touch marks the class used now, writing it at most every touchEvery.
func (s *Store) Touch(ctx context.Context, c Class) {
	if s.cfg.Now().Sub(c.LastActive) < touchEvery {
		return
	}
	s.Update(ctx, c.ID, func(*Class) error { return nil })
}
