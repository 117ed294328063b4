package rooms

// Who is present in a room on the other replicas: each replica says who it
// has every tick (ServiceConfig.Tick) and on a change (wire.go); what it
// said is kept until it says otherwise, says goodbye, or falls silent for
// the presence TTL. A room with readers here keeps one (roomLive.remote);
// the service keeps one per room for those it does not hold (Present).

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Defaults of ServiceConfig's presence timings.
const (
	// DefaultPresenceTTL: a replica's readers are forgotten when it said
	// nothing for this long (it says who is there every tick).
	DefaultPresenceTTL = 3500 * time.Millisecond
	// DefaultTick is how often a room with readers here reads its record
	// and feed, tells the others who is here, and rescues the wheel.
	DefaultTick = time.Second
	// presenceSettle is how long a replica that just began to hold a room
	// waits to hear the others before it judges the driver absent.
	presenceSettle = 300 * time.Millisecond
)

// presence is what the other replicas last said of their readers in one
// room. Not safe for concurrent use: its owner's lock guards it.
type presence struct {
	ttl  time.Duration
	reps map[string]heard // replica → what it said
}

// heard is what a replica last said, and when.
type heard struct {
	readers []wireReader
	seen    time.Time
}

func newPresence(ttl time.Duration) *presence {
	return &presence{ttl: ttl, reps: map[string]heard{}}
}

// hear keeps what replica from says of its readers at now, and reports
// whether from is new (it was not heard from, or was forgotten).
func (p *presence) hear(from string, readers []wireReader, now time.Time) bool {
	_, known := p.reps[from]
	p.reps[from] = heard{readers, now}
	return !known
}

// bye forgets replica from: its last reader in the room left.
func (p *presence) bye(from string) { delete(p.reps, from) }

// forget drops the replicas silent for longer than the TTL at now.
func (p *presence) forget(now time.Time) {
	for from, h := range p.reps {
		if now.Sub(h.seen) > p.ttl {
			delete(p.reps, from)
		}
	}
}

// empty reports whether no replica is remembered.
func (p *presence) empty() bool { return len(p.reps) == 0 }

// readers is the readers the replicas heard within the TTL at now said
// they have, replica by replica in order of name.
func (p *presence) readers(now time.Time) []wireReader {
	froms := make([]string, 0, len(p.reps))
	for from := range p.reps {
		froms = append(froms, from)
	}
	slices.Sort(froms)
	var out []wireReader
	for _, from := range froms {
		if h := p.reps[from]; now.Sub(h.seen) <= p.ttl {
			out = append(out, h.readers...)
		}
	}
	return out
}

// Reader is a reader present in a room, as an overview shows them.
type Reader struct {
	Name    string `json:"name"`
	Driving bool   `json:"driving,omitempty"`
}

// hearPresence follows every room's presence subject, for Present; the
// func returned stops.
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
		p := rs.heard[id]
		if m.Bye {
			if p != nil {
				p.bye(m.From)
				if p.empty() {
					delete(rs.heard, id)
				}
			}
			return
		}
		if p == nil {
			p = newPresence(rs.presenceTTL)
			rs.heard[id] = p
		}
		p.hear(m.From, m.Readers, time.Now())
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
	for id, p := range rs.heard {
		p.forget(now)
		if p.empty() {
			delete(rs.heard, id)
		}
	}
}

// Present is who reads in room id now, on every replica, in order of
// arrival here then by replica; Driving marks who holds the wheel. An
// instructor watching, and in a class's room whoever has no session of
// the class, are not among them.
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
			if !r.unlisted(room) {
				out = append(out, Reader{r.name, r.id == room.Driver})
			}
		}
		rl.mu.Unlock()
	}
	rs.heardMu.Lock()
	var there []wireReader
	if p := rs.heard[id]; p != nil {
		there = p.readers(time.Now())
	}
	rs.heardMu.Unlock()
	for _, r := range there {
		if !r.Unlisted {
			out = append(out, Reader{r.Name, r.ID == room.Driver})
		}
	}
	return out
}
