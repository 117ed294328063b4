package rooms

// A room with readers present on this replica (roomLive): its readers
// here, what the other replicas say of theirs, the record as last seen.
// Readers join and leave; every tick the room reads its record and feed,
// tells the others who is here and rescues the wheel.
//
// The room's lock (roomLive.mu) is never held across a write to the store
// (a JetStream round trip, which may be slow): a change is decided under
// the lock, written with the lock let go (a compare-and-set on the record,
// retried on conflict), and its result taken under the lock again
// (moveWheel, and the messages of message.go).

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/clients"
)

// roomColors is how many reader colours room.css defines (.rc-0 …).
const roomColors = 8

// roomLive is a room with readers present on this replica. Readers on other
// replicas are known from their presence (wire.go's messages on NATS);
// who drives is the room's record (rooms.Store), changed only by
// compare-and-set.
type roomLive struct {
	id      string
	replica string // this replica's reader ids end with it

	mu      sync.Mutex
	readers []*roomReader // here, in order of arrival
	remote  *presence     // the other replicas' readers
	rec     Room          // the record as last seen
	at      *position
	version string // the kubelet version its feed's journal reports
	next    int
	times   wheelTimes
	sent    []byte // the last state sent to the readers here
	stop    context.CancelFunc
	unsub   func()
	ended   bool
}

// roomReader is one browser connection in a room.
type roomReader struct {
	id    string
	name  string
	color int
	key   bool // presented the driver key
	// client is who the reader is in the per-client limits: a tag switch
	// it asks for counts against its own new tags an hour.
	client string
	// wheelHash is the hash of the lent wheel's ticket this reader holds
	// (TicketHash), "" when it holds none.
	wheelHash string
	following bool
	// cookie is the hash of the reader's cookie (ReaderCookie), "" when
	// it sent none; student and studentID are their class session's name
	// and id in a class's room ("" without one: ServiceConfig.Student);
	// watching: an instructor's read-only watch, never a reader.
	cookie, student, studentID string
	watching                   bool
	// welcomed: the reader was sent its welcome. Until then it is sent
	// no state and no position: its page, not knowing who it is, would
	// follow them.
	welcomed bool

	// out is the socket's one writer: messages in order, and the latest
	// room state and driver's position in slots (only the latest matters).
	// A reader with more than maxQueued messages waiting is dropped as too
	// slow (clients.ErrTooSlow).
	out *clients.Writer
	// expired is closed when the room expired (endReaders): the socket is
	// closed with CloseGone, so the page stops reconnecting.
	expired    chan struct{}
	expireOnce sync.Once
}

// unlisted reports whether r is not one of room's readers: an instructor
// watching, or in a class's room someone without the class's session.
func (r *roomReader) unlisted(room Room) bool {
	return r.watching || (room.Class != "" && r.student == "")
}

// maxQueued is how many messages other than the state a reader may have
// waiting before it is dropped as too slow.
const maxQueued = 64

// The writer's slots (clients.Writer.SendLatest), written after its queue
// in this order: a state holds the position as it was when it was made,
// so the position sent last is never older.
const (
	slotState = iota
	slotAt
	slots
)

// newWriter is a room socket's writer.
func newWriter(ctx context.Context, conn *websocket.Conn) *clients.Writer {
	return clients.NewWriter(ctx, conn, clients.WriterConfig{Queue: maxQueued, Slots: slots})
}

// push queues msg for the reader. (An error is the writer's: it stopped,
// and the socket is being closed.)
func (r *roomReader) push(msg []byte) { r.out.Send(msg) }

// pushState queues the room's state, replacing one not yet sent.
func (r *roomReader) pushState(msg []byte) { r.out.SendLatest(slotState, msg) }

// pushAt queues the driver's position, replacing one not yet sent.
func (r *roomReader) pushAt(msg []byte) { r.out.SendLatest(slotAt, msg) }

// expire ends the reader's socket: its room expired.
func (r *roomReader) expire() { r.expireOnce.Do(func() { close(r.expired) }) }

// present is everyone in the room, here first. rl.mu is held.
func (rl *roomLive) present() []who {
	out := make([]who, 0, len(rl.readers))
	for _, r := range rl.readers {
		out = append(out, who{r.id, r.key, r.wheelHash != "", r})
	}
	for _, r := range rl.remote.readers(time.Now()) {
		out = append(out, who{id: r.ID, key: r.Key, wheel: r.Wheel})
	}
	return out
}

// view is the room as the wheel's rules see it; they change rl.times
// through it. rl.mu is held.
func (rl *roomLive) view(grace time.Duration) wheelView {
	return wheelView{driver: rl.rec.Driver, lent: rl.rec.WheelHash != "", present: rl.present(),
		replica: rl.replica, grace: grace, wheelTimes: &rl.times}
}

// driver is who drives, "" when the wheel is with no one present. rl.mu is held.
func (rl *roomLive) driver() string {
	v := rl.view(0)
	return v.holder()
}

// local is the reader here with id, or nil. rl.mu is held.
func (rl *roomLive) local(id string) *roomReader {
	return rl.first(func(x *roomReader) bool { return x.id == id })
}

// first is the first reader here for whom ok is true, or nil. rl.mu is held.
func (rl *roomLive) first(ok func(*roomReader) bool) *roomReader {
	if i := slices.IndexFunc(rl.readers, ok); i >= 0 {
		return rl.readers[i]
	}
	return nil
}

// stateMsg is the room as everyone sees it. rl.mu is held.
func (rl *roomLive) stateMsg() []byte {
	driver := rl.driver()
	rs := make([]readerJSON, 0, len(rl.readers))
	for _, r := range rl.readers {
		rs = append(rs, readerJSON{r.id, r.name, r.color, r.key, r.id == driver, r.following && r.id != driver, r.unlisted(rl.rec)})
	}
	for _, r := range rl.remote.readers(time.Now()) {
		j := r.readerJSON
		j.Driving, j.Following = r.ID == driver, r.Following && r.ID != driver
		rs = append(rs, j)
	}
	return stateMsg(stateOut{Tag: rl.rec.Tag, Driver: driver, At: rl.at, KubeletVersion: rl.version, Ended: rl.rec.Ended, Readers: rs})
}

// broadcast sends the room's state to every reader here, when it changed.
// rl.mu is held.
func (rl *roomLive) broadcast() {
	msg := rl.stateMsg()
	if bytes.Equal(msg, rl.sent) {
		return
	}
	rl.sent = msg
	for _, r := range rl.readers {
		if r.welcomed {
			r.pushState(msg)
		}
	}
}

// sendAt tells every reader here that the driver moved to p (the position
// alone, not the whole room). rl.mu is held.
func (rl *roomLive) sendAt(p position) {
	rl.at = &p
	at := atMsg(p)
	for _, r := range rl.readers {
		if r.welcomed {
			r.pushAt(at)
		}
	}
}

// sync takes the room's record as this replica's copy has it now (no
// round trip): who drives, the tag, the loan. rl.mu is held.
func (rs *Service) sync(rl *roomLive) {
	rec, err := rs.store.peek(rl.id)
	if err != nil {
		return
	}
	old := rl.rec
	rl.rec = rec
	if rec.Driver != old.Driver {
		if d := rl.local(rec.Driver); d != nil {
			d.following = false
		}
		v := rl.view(0)
		if _, ok := v.find(rec.Driver); ok {
			rl.times.await = time.Time{}
		}
	}
	if rec.WheelHash != old.WheelHash {
		// The ticket lent before no longer works (a stale copy of the
		// record changes nothing: only a change of the loan ends one).
		for _, r := range rl.readers {
			if r.wheelHash != "" && r.wheelHash != rec.WheelHash {
				r.wheelHash = ""
				r.push(wheelMsg(""))
			}
		}
	}
}

// moveWheel decides a move of the wheel (decide, from the room as it is),
// makes it in the store with rl.mu let go, and takes the record that
// results with rl.mu held again. A move refused because the wheel moved in
// the meantime (ErrWheelMoved: another reader or replica came first) is
// decided again from the new record, up to tries times. It returns the
// move decided last, the ticket of a wheel it lent, and the error of
// decide or of the store. rl.mu is held (and let go while it writes).
func (rs *Service) moveWheel(rl *roomLive, tries int, decide func(v *wheelView) (move, error)) (move, string, error) {
	for try := 1; ; try++ {
		v := rl.view(rs.wheelGrace)
		m, err := decide(&v)
		if err != nil || m.kind == stay {
			return m, "", err
		}
		rl.mu.Unlock()
		ticket, err := rs.makeMove(rl.id, m)
		rl.mu.Lock()
		rs.sync(rl)
		if errors.Is(err, ErrWheelMoved) && try < tries {
			continue
		}
		if err != nil && !errors.Is(err, ErrWheelMoved) {
			rs.log.Error("rooms: moving the wheel", "room", rl.id[:6]+"…", "err", err)
		}
		return m, ticket, err
	}
}

// makeMove writes m to room id's record; the ticket is that of a wheel it lent.
func (rs *Service) makeMove(id string, m move) (string, error) {
	switch m.kind {
	case handOver:
		_, ticket, err := rs.store.SetDriver(id, m.from, m.to, m.lend)
		return ticket, err
	case takeLent:
		_, err := rs.store.SetWheelHolder(id, m.from, m.to)
		return "", err
	}
	return "", nil
}

// join adds a reader, whose socket's writer is out, to room, making the
// room active here; nil when full.
func (rs *Service) join(room Room, out *clients.Writer, who identity) (*roomLive, *roomReader) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rl := rs.active[room.ID]
	if rl == nil {
		rl = rs.activate(room)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(rl.readers) >= rs.maxReaders {
		return rl, nil
	}
	rl.next++
	n := strconv.Itoa(rl.next)
	r := &roomReader{id: "r" + n + rs.replica, name: "reader " + n, color: (rl.next - 1) % roomColors,
		following: true, out: out, expired: make(chan struct{}), cookie: who.cookie, student: who.student, studentID: who.studentID}
	rl.readers = append(rl.readers, r)
	rs.announce(rl)
	return rl, r
}

// activate makes room active here: it follows the other replicas and
// ticks. rs.mu is held.
func (rs *Service) activate(room Room) *roomLive {
	now := time.Now()
	rl := &roomLive{id: room.ID, replica: rs.replica, remote: newPresence(rs.presenceTTL), rec: room,
		times: wheelTimes{activated: now}}
	if rec, err := rs.store.peek(room.ID); err == nil {
		rl.rec = rec
	}
	if rl.rec.WheelHash != "" {
		// Its readers may all be reconnecting (the server restarted):
		// the wheel waits for the one it was lent to.
		rl.times.await = now.Add(rs.wheelGrace)
	}
	rs.active[room.ID] = rl
	ctx, stop := context.WithCancel(rs.ctx)
	rl.stop = stop
	rl.unsub = rs.subscribe(rl)
	rs.wg.Add(1)
	go rs.tick(ctx, rl)
	return rl
}

// leave removes a reader. The wheel passes to a key holder, if one is
// present; a lent wheel goes to another page of its holder, or waits for
// them to come back (wheelView.afterLeave). Neither lock is held while
// the wheel's move is written: one slow write stalls no other room.
func (rs *Service) leave(rl *roomLive, r *roomReader) {
	rs.mu.Lock()
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.readers = slices.DeleteFunc(rl.readers, func(x *roomReader) bool { return x == r })
	last := len(rl.readers) == 0
	if last {
		rl.ended = true
		delete(rs.active, rl.id)
	}
	rs.mu.Unlock()
	if last {
		rs.publish(rl, "presence", wireMsg{Bye: true})
		rl.unsub()
		rl.stop()
	}
	left := who{id: r.id, key: r.key, wheel: r.wheelHash != ""}
	now := time.Now()
	rs.moveWheel(rl, 3, func(v *wheelView) (move, error) { return v.afterLeave(left, now), nil })
	if !rl.ended {
		rl.broadcast()
		rs.announce(rl)
	}
}

// tick follows the room's feed for the kubelet version its journal
// reports, tells the other replicas who is here, forgets the readers of
// replicas that went quiet, and gives a key holder the wheel whose holder
// is gone (a lent wheel after the grace), while the room has readers here.
func (rs *Service) tick(ctx context.Context, rl *roomLive) {
	defer rs.wg.Done()
	t := time.NewTicker(rs.tickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		room, err := rs.store.Get(rl.id)
		if err != nil {
			continue
		}
		v := rs.feedVersion(room.Feed())
		rl.mu.Lock()
		if rl.ended {
			rl.mu.Unlock()
			return
		}
		rl.version = v
		now := time.Now()
		rl.remote.forget(now)
		rs.sync(rl)
		rs.moveWheel(rl, 3, func(v *wheelView) (move, error) { return v.rescue(now), nil })
		if !rl.ended {
			rl.broadcast()
			rs.announce(rl)
		}
		rl.mu.Unlock()
	}
}
