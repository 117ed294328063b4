package rooms

// Who is in a room, for someone who is not in it (a class's instructor,
// package classes): the readers present on this replica, and those the
// other replicas announce on the rooms' presence subjects (wire.go), which
// this replica hears for every room, not only the rooms it holds.

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Reader is a reader present in a room, as an overview shows them.
type Reader struct {
	Name    string `json:"name"`
	Driving bool   `json:"driving,omitempty"`
}

// heard is what another replica last said of its readers in a room.
type heard struct {
	readers []wireReader
	seen    time.Time
}

// hearPresence follows every room's presence subject; the func returned stops.
func (rs *Service) hearPresence() func() {
	if rs.nc == nil {
		return func() {}
	}
	sub, err := rs.nc.Subscribe(roomSubject("*", "presence"), func(msg *nats.Msg) {
		var m wireMsg
		if json.Unmarshal(msg.Data, &m) != nil || m.From == rs.replica {
			return
		}
		id := strings.TrimSuffix(strings.TrimPrefix(msg.Subject, "syncloop.rooms."), ".presence")
		rs.heardMu.Lock()
		defer rs.heardMu.Unlock()
		reps := rs.heard[id]
		if m.Bye {
			delete(reps, m.From)
			if len(reps) == 0 {
				delete(rs.heard, id)
			}
			return
		}
		if reps == nil {
			reps = map[string]heard{}
			rs.heard[id] = reps
		}
		reps[m.From] = heard{m.Readers, time.Now()}
	})
	if err != nil {
		rs.log.Warn("rooms: following the replicas' presence", "err", err)
		return func() {}
	}
	return func() { sub.Unsubscribe() }
}

// forgetHeard drops what replicas that fell silent said (housekeep).
func (rs *Service) forgetHeard(now time.Time) {
	rs.heardMu.Lock()
	defer rs.heardMu.Unlock()
	for id, reps := range rs.heard {
		for from, h := range reps {
			if now.Sub(h.seen) > presenceTTL {
				delete(reps, from)
			}
		}
		if len(reps) == 0 {
			delete(rs.heard, id)
		}
	}
}

// Present is who is in room id now, on every replica, in order of
// arrival here then by replica; Driving marks who holds the wheel.
func (rs *Service) Present(id string) []Reader {
	room, err := rs.Get(id)
	if err != nil {
		return nil
	}
	var out []Reader
	rs.mu.Lock()
	rl := rs.active[id]
	rs.mu.Unlock()
	if rl != nil {
		rl.mu.Lock()
		for _, r := range rl.readers {
			out = append(out, Reader{r.name, r.id == room.Driver})
		}
		rl.mu.Unlock()
	}
	now := time.Now()
	rs.heardMu.Lock()
	reps := rs.heard[id]
	froms := make([]string, 0, len(reps))
	for from := range reps {
		froms = append(froms, from)
	}
	slices.Sort(froms)
	for _, from := range froms {
		if h := reps[from]; now.Sub(h.seen) <= presenceTTL {
			for _, r := range h.readers {
				out = append(out, Reader{r.Name, r.ID == room.Driver})
			}
		}
	}
	rs.heardMu.Unlock()
	return out
}
