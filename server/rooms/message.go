package rooms

// What a reader's messages do (protocol.go lists them). Each is decided
// with the room's lock held; a write to the store is made with the lock
// let go (Service.write, Service.moveWheel), and its result taken with the
// lock held again.

import (
	"errors"
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// after is what a message leaves to do once applied.
type after int

const (
	quiet after = iota // nothing more
	tell               // the room changed: its state to the readers here, who is here to the other replicas
)

// handler applies one type of message from reader me in room rl, whose
// record was room when the message came. An error is the reply: the
// message was refused, and changed nothing. rl.mu is held.
type handler func(rs *Service, rl *roomLive, me *roomReader, room Room, m roomIn) (after, error)

var handlers = map[string]handler{
	inJoin:   (*Service).onJoin,
	inName:   (*Service).onName,
	inFollow: (*Service).onFollow,
	inAt:     (*Service).onAt,
	inHand:   (*Service).onHand,
	inTake:   (*Service).onTake,
	inTag:    (*Service).onTag,
	inEnd:    (*Service).onEnd,
	inRotate: (*Service).onRotate,
}

// message applies one message from reader me. A refused message changes
// nothing and earns an error reply.
func (rs *Service) message(rl *roomLive, me *roomReader, m roomIn) {
	room, err := rs.store.Get(rl.id)
	if err != nil {
		me.push(errMsg("this room is gone: %v", err))
		return
	}
	h := handlers[m.T]
	if h == nil {
		me.push(errMsg("unknown message type %q", m.T))
		return
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rs.sync(rl)
	next, err := h(rs, rl, me, room, m)
	if err != nil {
		me.push(errMsg("%s", err))
	}
	if next == tell && !rl.ended {
		rl.broadcast()
		rs.announce(rl)
	}
	if m.T == inJoin {
		// The state after the welcome, though the room looked the same
		// before it (broadcast sends only a change).
		me.pushState(rl.stateMsg())
	}
}

// write makes a change to the store with rl.mu let go, then takes the
// record as it is now. rl.mu is held (and let go while it writes).
func (rs *Service) write(rl *roomLive, change func() error) error {
	rl.mu.Unlock()
	err := change()
	rl.mu.Lock()
	rs.sync(rl)
	return err
}

// settle waits, a little, to know of the driver the record names when
// this replica has not heard of them yet (they are on a replica that has
// not said so). rl.mu is held, and let go while it waits.
func (rs *Service) settle(rl *roomLive) {
	for range 2 {
		v := rl.view(rs.wheelGrace)
		if v.holder() != "" || v.gone(time.Now()) {
			return
		}
		rl.mu.Unlock()
		time.Sleep(presenceSettle)
		rl.mu.Lock()
		rs.sync(rl)
	}
}

func (rs *Service) onJoin(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	me.watching = m.Watch
	if name, ok := cleanName(m.Name); ok {
		rs.named(rl, me, name)
	} else if me.student != "" {
		rs.named(rl, me, me.student)
	}
	if m.Color >= 0 && m.Color < roomColors {
		me.color = m.Color
	}
	rs.settle(rl)
	w := welcomeOut{You: me.id, Feed: room.Feed()}
	switch {
	case m.Key != "" && !rl.rec.keyIs(m.Key):
		me.push(errMsg("this driver key is not this room's: you joined as a viewer"))
	case m.Key != "":
		me.key = true
		w.Key, w.Token = true, rl.rec.IngestToken
		rs.moveWheel(rl, 3, func(v *wheelView) (move, error) { return v.keyJoin(me.id, time.Now()), nil })
	case m.Wheel != "" && !rl.rec.ticketIs(m.Wheel):
		me.push(errMsg("the wheel you were handed was taken back or handed on: you joined as a viewer"))
	case m.Wheel != "":
		me.wheelHash = TicketHash(m.Wheel)
		w.Wheel = true
		mv, _, err := rs.moveWheel(rl, 1, func(v *wheelView) (move, error) { return v.ticketJoin(me.id), nil })
		if mv.kind != stay && err == nil {
			rl.times.await = time.Time{}
		}
	}
	me.push(welcomeMsg(w))
	me.welcomed = true
	return tell, nil
}

func (rs *Service) onName(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	name, ok := cleanName(m.Name)
	if !ok {
		return quiet, refusal("a name is 1 to 32 printable characters")
	}
	rs.named(rl, me, name)
	if m.Color >= 0 && m.Color < roomColors {
		me.color = m.Color
	}
	return tell, nil
}

// named is reader me giving name in the room. Who they are is the
// server's word: in a class's room the name of their class session
// (without one they stay unnamed, and are no reader of its hand-in); in
// another room the name they gave, numbered when it looks like another
// reader's, kept under their reader cookie. An instructor watching is
// never a reader. rl.mu is held (and let go while it writes).
func (rs *Service) named(rl *roomLive, me *roomReader, name string) {
	key := me.cookie
	switch {
	case me.watching:
		me.name = name
		return
	case rl.rec.Class != "" && me.student == "":
		return
	case rl.rec.Class != "":
		name, key = me.student, "s:"+me.studentID
	}
	me.name = name
	if kept, changed := rl.rec.nameFor(key, name); !changed {
		me.name = kept
		return
	}
	var kept string
	err := rs.write(rl, func() error {
		var err error
		kept, err = rs.store.AddReader(rl.id, key, name)
		return err
	})
	me.name = kept
	if err != nil {
		rs.log.Warn("rooms: keeping a reader's name", "room", rl.id[:6]+"…", "err", err)
	}
}

func (rs *Service) onFollow(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	me.following = m.On
	return tell, nil
}

func (rs *Service) onAt(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	if rl.rec.Driver != me.id {
		return quiet, refusal("only the driver can steer: you are following")
	}
	if !m.position.valid() {
		return quiet, refusal("bad position")
	}
	p := m.position
	rl.sendAt(p) // only the position changed: it alone, not the whole room
	rs.publish(rl, "at", wireMsg{At: &p})
	return quiet, nil
}

func (rs *Service) onHand(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	var to who
	_, ticket, err := rs.moveWheel(rl, 1, func(v *wheelView) (move, error) {
		mv, w, err := v.hand(me.id, m.To)
		to = w
		return mv, err
	})
	if r := refusal(""); errors.As(err, &r) {
		return quiet, err
	}
	if err != nil {
		rl.broadcast()
		return quiet, refusal("could not hand the wheel: " + err.Error())
	}
	if ticket != "" {
		if to.local != nil {
			to.local.wheelHash = TicketHash(ticket)
			to.local.push(wheelMsg(ticket))
		} else {
			rs.publish(rl, "to", wireMsg{To: to.id, Ticket: ticket})
		}
	}
	rl.times.await = time.Time{}
	if to.local != nil {
		to.local.following = false
	}
	me.following = true
	return tell, nil
}

func (rs *Service) onTake(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	if !me.key {
		return quiet, refusal("only a driver link can take the wheel")
	}
	err := rs.write(rl, func() error { _, err := rs.store.TakeWheel(rl.id, me.id); return err })
	if err != nil {
		return quiet, refusal("could not take the wheel: " + err.Error())
	}
	rl.times.await = time.Time{}
	return tell, nil
}

func (rs *Service) onTag(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	if rl.rec.Ended {
		return quiet, refusal("this room was ended: it stays at " + rl.rec.Tag)
	}
	if rl.rec.Driver != me.id {
		return quiet, refusal("only the driver can switch the room's tag")
	}
	if err := extractor.CheckTag(m.Tag); err != nil {
		return quiet, err
	}
	// Switch only once the tag's reading loads: a room must not be stuck
	// on a page that cannot be shown.
	me.push(noteMsg("Loading " + m.Tag + " for the room…"))
	rs.wg.Add(1) // this handler's own count is held: rs is not closed yet
	go func() {
		defer rs.wg.Done()
		rs.switchTag(rl, me, room, m.Tag)
	}()
	return quiet, nil
}

// switchTag moves the room to tag once its reading is ready, and tells
// every reader to load the page again.
func (rs *Service) switchTag(rl *roomLive, me *roomReader, room Room, tag string) {
	if err := rs.site.TagReady(rs.ctx, me.client, tag); err != nil {
		me.push(errMsg("the room stays at %s: %v", room.Tag, err))
		return
	}
	if _, err := rs.store.SetTag(room.ID, tag); err != nil {
		me.push(errMsg("could not switch the tag: %v", err))
		return
	}
	rs.setFeedTag(room.Feed(), tag)
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rs.sync(rl)
	reload := reloadMsg(tag)
	for _, r := range rl.readers {
		r.push(reload)
	}
	rs.publish(rl, "all", wireMsg{Msg: reload, Tag: tag})
}

func (rs *Service) onEnd(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	if rl.rec.Driver != me.id && !me.key {
		return quiet, refusal("only the driver can end the room")
	}
	if err := rs.write(rl, func() error { _, err := rs.store.End(rl.id); return err }); err != nil {
		return quiet, refusal("could not end the room: " + err.Error())
	}
	return tell, nil
}

func (rs *Service) onRotate(rl *roomLive, me *roomReader, room Room, m roomIn) (after, error) {
	if rl.rec.Ended {
		return quiet, refusal("this room was ended: it takes no relay")
	}
	if !me.key {
		return quiet, refusal("only a driver link can rotate the ingest token")
	}
	var nr Room
	err := rs.write(rl, func() (err error) { nr, err = rs.store.RotateToken(rl.id); return err })
	if err != nil {
		return quiet, refusal("could not rotate the token: " + err.Error())
	}
	// The old token stops working at the feed's next request or batch,
	// here now, on the other replicas with their copy (feedOwned).
	tok := tokenMsg(nr.IngestToken)
	for _, r := range rl.readers {
		if r.key {
			r.push(tok)
		}
	}
	rs.publish(rl, "all", wireMsg{Msg: tok, Keys: true})
	return quiet, nil
}
