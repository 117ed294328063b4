package rooms

// Rooms of an older version, kept in a file (rooms.json), brought into the
// bucket once.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
)

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
	slots, err := s.takeSlots(ctx, r.ID, r.OwnerHash, nil) // (rooms.json predates classes)
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
