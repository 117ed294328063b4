package rooms

// The wheel: one reader drives at a time. The first reader who presents the
// driver key takes it when no one drives. The driver may hand it to any
// reader. Handed to a key holder, it is simply theirs. Handed to anyone
// else, it is lent: that reader is given a wheel ticket (not the key, the
// token or the right to rotate), which their page keeps for its tab and
// presents when it joins again, so the wheel outlasts a reload, a move to
// the room's other page or a reconnection. There is one ticket at a time:
// handing the wheel on lends it anew, and a key holder taking it back ends
// the loan; either way the old ticket stops working. When the driver
// leaves, the wheel goes to a key holder still present, if any; a lent
// wheel first waits the grace (ServiceConfig.WheelGrace) for its holder to
// come back (as it does for a room whose readers all reconnect after a
// restart of the server).
//
// This file holds the rules, as pure functions of a wheelView: who is
// present, what the record says, the room's timers and the time given.
// They decide a move; the room (room.go) makes it in the store, where it
// is a compare-and-set on who held the wheel, without holding its lock.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// DefaultWheelGrace is how long a lent wheel waits for its holder's page to join
// again (a reload, a move to the room's other page) before a key holder
// present gets it.
const DefaultWheelGrace = 10 * time.Second

// who is a reader present here or on another replica, as the wheel needs it.
type who struct {
	id    string
	key   bool        // presented the driver key
	wheel bool        // holds the lent wheel's ticket
	local *roomReader // the reader, when here; nil on another replica
}

// wheelTimes are a room's timers of the wheel (roomLive.times).
type wheelTimes struct {
	activated time.Time // when this replica began to hold the room
	// await: until then the wheel, lent and its holder gone, waits for
	// them to join again; zero when it does not wait.
	await time.Time
	// missing is the driver the record names whom no replica says is
	// present, since missingSince (gone).
	missing      string
	missingSince time.Time
}

// wheelView is what the rules decide from. The rules change only its
// timers.
type wheelView struct {
	driver  string // the record's Driver
	lent    bool   // the record has a loan (a wheel ticket's hash)
	present []who  // everyone present: here first, in order of arrival, then the other replicas'
	replica string // the ids of this replica's readers end with it
	grace   time.Duration
	*wheelTimes
}

// moveKind is how a move changes the record.
type moveKind int

const (
	stay     moveKind = iota // no change
	handOver                 // Store.SetDriver: from → to, lent when lend; refused if from no longer drives
	takeLent                 // Store.SetWheelHolder: the lent wheel's ticket holder to takes it from from
)

// move is a change of who drives, decided by a rule.
type move struct {
	kind     moveKind
	from, to string
	lend     bool
}

// find is the reader present with id.
func (v *wheelView) find(id string) (who, bool) {
	i := slices.IndexFunc(v.present, func(w who) bool { return w.id == id })
	if i < 0 {
		return who{}, false
	}
	return v.present[i], true
}

// firstHere is the first reader on this replica for whom ok is true.
func (v *wheelView) firstHere(ok func(who) bool) (who, bool) {
	i := slices.IndexFunc(v.present, func(w who) bool { return w.local != nil && ok(w) })
	if i < 0 {
		return who{}, false
	}
	return v.present[i], true
}

// holder is who drives, "" when the wheel is with no one present.
func (v *wheelView) holder() string {
	if _, ok := v.find(v.driver); ok && v.driver != "" {
		return v.driver
	}
	return ""
}

// gone reports whether the wheel is with no one present at now: no one
// holds it, or its holder has not been present for presenceSettle (a
// reader who just joined another replica may not have been heard of yet).
func (v *wheelView) gone(now time.Time) bool {
	d := v.driver
	if d == "" {
		return true
	}
	if _, ok := v.find(d); ok {
		return false
	}
	if strings.HasSuffix(d, v.replica) {
		return true // one of this replica's readers, who left
	}
	if v.missing != d {
		v.missing, v.missingSince = d, now
	}
	return now.Sub(v.missingSince) >= presenceSettle && now.Sub(v.activated) >= presenceSettle
}

// awaiting reports whether the wheel waits for its holder at now.
func (v *wheelView) awaiting(now time.Time) bool {
	return !v.await.IsZero() && now.Before(v.await)
}

// afterLeave is the move when left (no longer present) leaves at now. The
// wheel it held goes to a key holder present; a lent wheel goes to another
// page of its holder here, or waits for them to come back.
func (v *wheelView) afterLeave(left who, now time.Time) move {
	if v.driver != left.id || left.id == "" {
		return move{}
	}
	if left.wheel {
		if x, ok := v.firstHere(func(w who) bool { return w.wheel }); ok {
			return move{kind: handOver, from: v.driver, to: x.id}
		}
		v.await = now.Add(v.grace)
		return move{}
	}
	next := ""
	if i := slices.IndexFunc(v.present, func(w who) bool { return w.key }); i >= 0 {
		next = v.present[i].id
	}
	return move{kind: handOver, from: v.driver, to: next}
}

// rescue gives a key holder here the wheel when its holder is not present
// at now: at once when no one holds it, after the grace when it was lent.
// With no key holder here the wheel waits: its holder may come back, a key
// holder may join.
func (v *wheelView) rescue(now time.Time) move {
	if !v.gone(now) {
		return move{}
	}
	if v.driver != "" && v.lent {
		if v.await.IsZero() {
			v.await = now.Add(v.grace)
		}
		if v.awaiting(now) {
			return move{}
		}
	}
	k, ok := v.firstHere(func(w who) bool { return w.key })
	if !ok {
		return move{}
	}
	v.await = time.Time{}
	return move{kind: handOver, from: v.driver, to: k.id}
}

// keyJoin is the move when me joins with the driver key at now: the wheel
// no one present holds (and that waits for no one) is theirs, a loan ends.
func (v *wheelView) keyJoin(me string, now time.Time) move {
	if v.gone(now) && !v.awaiting(now) {
		return move{kind: handOver, from: v.driver, to: me}
	}
	return move{}
}

// ticketJoin is the move when me joins with the lent wheel's ticket: the
// loan stands, so whoever drives holds the same ticket (an older page of
// this reader's) or is not present; the newest page drives.
func (v *wheelView) ticketJoin(me string) move {
	if d, ok := v.find(v.driver); !ok || d.wheel {
		return move{kind: takeLent, from: v.driver, to: me}
	}
	return move{}
}

// refusal is a message refused by the rules: its text is the reply.
type refusal string

func (r refusal) Error() string { return string(r) }

// hand is the move when me hands the wheel to reader to: lent unless to
// holds the driver key. It returns whom it goes to.
func (v *wheelView) hand(me, to string) (move, who, error) {
	if v.driver != me {
		return move{}, who{}, refusal("only the driver can hand the wheel")
	}
	w, ok := v.find(to)
	if !ok {
		return move{}, who{}, refusal(fmt.Sprintf("no reader %q in this room", to))
	}
	return move{kind: handOver, from: me, to: w.id, lend: !w.key}, w, nil
}
