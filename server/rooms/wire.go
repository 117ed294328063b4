package rooms

// Rooms across replicas: what a replica tells the others of a room, on core
// NATS subjects (no JetStream: presence and steering are of the moment).
//
//	syncloop.rooms.{id}.presence   who is here (every tick, and on a change: presence.go); Bye when the last leaves
//	syncloop.rooms.{id}.at         the driver moved (the position, as the "at" message to browsers)
//	syncloop.rooms.{id}.to         the wheel's ticket, for a reader on the replica that holds them
//	syncloop.rooms.{id}.all        a message for every reader (a reload after a tag switch), or every key holder (a rotated token)
//
// Each replica subscribes while it has readers in the room. Who drives is
// not said here: it is the room's record (rooms.Store), and every replica
// sees it change through the bucket's watcher.

import (
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// wireReader is a reader as presence tells of it.
type wireReader struct {
	readerJSON
	Wheel bool `json:"wheel,omitempty"`
}

// wireMsg is every message between replicas.
type wireMsg struct {
	From    string          `json:"from"`
	Readers []wireReader    `json:"readers,omitempty"`
	Bye     bool            `json:"bye,omitempty"`
	At      *position       `json:"at,omitempty"`
	To      string          `json:"to,omitempty"`
	Ticket  string          `json:"ticket,omitempty"`
	Msg     json.RawMessage `json:"msg,omitempty"`
	Keys    bool            `json:"keys,omitempty"` // Msg is for key holders only
	Tag     string          `json:"tag,omitempty"`  // Msg is a reload to this tag
}

func roomSubject(id, kind string) string { return "syncloop.rooms." + id + "." + kind }

// publish sends m about rl to the other replicas.
func (rs *Service) publish(rl *roomLive, kind string, m wireMsg) {
	if rs.nc == nil {
		return
	}
	m.From = rs.replica
	if err := rs.nc.Publish(roomSubject(rl.id, kind), mustJSON(m)); err != nil {
		rs.log.Warn("rooms: telling the other replicas", "room", rl.id[:6]+"…", "err", err)
	}
}

// announce tells the other replicas who is here. rl.mu is held.
func (rs *Service) announce(rl *roomLive) {
	rs.store.cfg.Changed.Notify()
	m := wireMsg{Readers: make([]wireReader, 0, len(rl.readers))}
	for _, r := range rl.readers {
		m.Readers = append(m.Readers, wireReader{readerJSON{ID: r.id, Name: r.name, Color: r.color, Key: r.key, Following: r.following, Unlisted: r.unlisted(rl.rec)}, r.wheelHash != ""})
	}
	if rl.local(rl.rec.Driver) != nil {
		m.At = rl.at
	}
	rs.publish(rl, "presence", m)
}

// subscribe follows what the other replicas say of rl; the func returned stops.
func (rs *Service) subscribe(rl *roomLive) func() {
	if rs.nc == nil {
		return func() {}
	}
	sub, err := rs.nc.Subscribe(roomSubject(rl.id, "*"), func(msg *nats.Msg) {
		var m wireMsg
		if json.Unmarshal(msg.Data, &m) != nil || m.From == rs.replica {
			return
		}
		kind := strings.TrimPrefix(msg.Subject, roomSubject(rl.id, ""))
		if kind == "all" && m.Tag != "" {
			rs.setFeedTag(FeedPrefix+rl.id, m.Tag) // not under rl.mu: it may make the feed
		}
		rl.mu.Lock()
		defer rl.mu.Unlock()
		if !rl.ended {
			rs.heardOf(rl, kind, m)
		}
	})
	if err != nil {
		rs.log.Warn("rooms: following the other replicas", "room", rl.id[:6]+"…", "err", err)
		return func() {}
	}
	return func() { sub.Unsubscribe() }
}

// heardOf applies what another replica said of rl on its subject kind.
// rl.mu is held.
func (rs *Service) heardOf(rl *roomLive, kind string, m wireMsg) {
	switch kind {
	case "presence":
		if m.Bye {
			rl.remote.bye(m.From)
		} else {
			if rl.remote.hear(m.From, m.Readers, time.Now()) {
				rs.announce(rl) // a newcomer: tell it who is here
			}
			if m.At != nil {
				rl.at = m.At
			}
		}
		rs.sync(rl)
	case "at":
		if m.At != nil && m.At.valid() {
			rl.sendAt(*m.At)
		}
		return
	case "to":
		r := rl.local(m.To)
		if r == nil || m.Ticket == "" {
			return
		}
		r.wheelHash = TicketHash(m.Ticket)
		r.following = false
		r.push(wheelMsg(m.Ticket))
		rs.sync(rl)
	case "all":
		for _, r := range rl.readers {
			if r.key || !m.Keys {
				r.push(m.Msg)
			}
		}
		rs.sync(rl)
	default:
		return
	}
	rl.broadcast()
}

// changed is told by the store of a room's record changed or gone (here
// or on another replica): readers here see the new driver, tag, loan, or
// are told the room expired.
func (rs *Service) changed(id string) {
	rs.mu.Lock()
	rl := rs.active[id]
	rs.mu.Unlock()
	if rl == nil {
		return
	}
	if _, err := rs.store.Get(id); errors.Is(err, ErrExpired) {
		rs.endReaders(id) // expired here or on another replica
		return
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.ended {
		return
	}
	rs.sync(rl)
	rl.broadcast()
}
