package rooms

// The room websocket (GET /rooms/{id}/ws, same origin only): presence, the
// wheel, and the driver's position. Every message is one JSON object with a
// type "t".
//
// Browser → server:
//
//	{"t":"join","name":"Ann","color":3,"key":"<driver key, or absent>","wheel":"<wheel ticket, or absent>"}   first
//	{"t":"name","name":"Ann","color":3}
//	{"t":"at","page":"index","case":"pleg","lo":0,"hi":0,"first":2790,"last":2830,"where":"case-pleg","per":420}  steer (driver)
//	{"t":"follow","on":false}
//	{"t":"hand","to":"r3"}      give the wheel to reader r3 (driver)
//	{"t":"take"}                take the wheel (driver key holders)
//	{"t":"tag","tag":"v1.31.0"} switch the room's tag (driver)
//	{"t":"rotate"}              new ingest token (driver key holders)
//	{"t":"end"}                 end the room: its notes turn read-only, its feed takes no relay (the driver, or key holders)
//
// Server → browser:
//
//	{"t":"welcome","you":"r2","key":true,"wheel":false,"feed":"room-…","token":"…"}   token only with the key
//	{"t":"wheel","wheel":"…"}   the ticket of the wheel handed to this reader; "" when it was taken back or handed on
//	{"t":"state","tag","driver","at","kubelet_version","ended","readers":[{"id","name","color","key","driving","following"}]}
//	{"t":"at","at":{…}}   the driver moved (the state's "at", alone)
//	{"t":"token","token":"…"}   after a rotation, to key holders
//	{"t":"note","note":"…"}     what the server is doing for this reader (loading a tag)
//	{"t":"reload","tag":"v1.31.0"}   the room's tag changed: load the page again
//	{"t":"error","error":"…"}   the message was refused; nothing changed
//
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
// wheel first waits wheelGrace for its holder to come back (as it does for
// a room whose readers all reconnect after a restart of the server).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/clients"
)

// roomColors is how many reader colours room.css defines (.rc-0 …).
const roomColors = 8

// DefaultWheelGrace is how long a lent wheel waits for its holder's page to join
// again (a reload, a move to the room's other page) before a key holder
// present gets it.
const DefaultWheelGrace = 10 * time.Second

// position is where the driver is: the selected case and lines, and the
// lines in view (not pixels: screens differ).
type position struct {
	Page  string `json:"page,omitempty"` // "index" (the function) or "pod-workers"
	Case  string `json:"case,omitempty"`
	Lo    int    `json:"lo,omitempty"` // highlighted lines, when some are
	Hi    int    `json:"hi,omitempty"`
	First int    `json:"first,omitempty"` // the first and last source lines in view
	Last  int    `json:"last,omitempty"`
	Where string `json:"where,omitempty"` // the case block or section read (an element id)
	Per   int    `json:"per,omitempty"`   // how far into Where, per mille of its height
}

var (
	caseKeyRE = regexp.MustCompile(extractor.CaseKeyPattern)
	whereRE   = regexp.MustCompile(`^[A-Za-z0-9_-]{0,64}$`) // an element id: "two-sets", "type-podWorkers"
)

func (p position) valid() bool {
	ok := func(n int) bool { return n >= 0 && n < 1e7 }
	return (p.Page == "" || p.Page == PageIndex || p.Page == PagePodWorkers) &&
		(p.Case == "" || caseKeyRE.MatchString(p.Case)) && whereRE.MatchString(p.Where) &&
		ok(p.Lo) && ok(p.Hi) && ok(p.First) && ok(p.Last) && p.Per >= 0 && p.Per <= 1000
}

// roomLive is a room with readers present on this replica. Readers on other
// replicas are known from their presence (wire.go's messages on NATS);
// who drives is the room's record (rooms.Store), changed only by
// compare-and-set.
type roomLive struct {
	id      string
	replica string // this replica's reader ids end with it

	mu      sync.Mutex
	readers []*roomReader // here, in order of arrival
	remote  map[string]*remoteReplica
	rec     Room // the record as last seen
	at      *position
	version string // the kubelet version its feed's journal reports
	next    int
	// awaitWheel: until then the wheel, lent and its holder gone, waits for
	// them to join again; zero when it does not wait.
	awaitWheel time.Time
	activated  time.Time // when this replica began to hold the room
	// missing is the driver the record names whom no replica says is
	// present, since missingSince (driverGone).
	missing      string
	missingSince time.Time
	sent         []byte // the last state sent to the readers here
	stop         context.CancelFunc
	unsub        func()
	ended        bool
}

// remoteReplica is what another replica said of its readers in the room.
type remoteReplica struct {
	readers []wireReader
	seen    time.Time
}

// roomReader is one browser connection in a room.
type roomReader struct {
	id    string
	name  string
	color int
	key   bool // presented the driver key
	// wheelHash is the hash of the lent wheel's ticket this reader holds
	// (TicketHash), "" when it holds none.
	wheelHash string
	following bool
	// welcomed: the reader was sent its welcome. Until then it is sent
	// no state and no position: its page, not knowing who it is, would
	// follow them.
	welcomed bool

	// What the writer sends next: the latest room state (a newer one
	// replaces an unsent one: only the latest matters) and other messages
	// in order. wake has room for one signal.
	outMu    sync.Mutex
	state    []byte
	at       []byte // the driver's latest position, newer than state's
	queue    [][]byte
	wake     chan struct{}
	gone     chan struct{}
	goneOnce sync.Once
	// expired: gone because the room expired (endReaders), which its
	// socket's close code says, so the page stops reconnecting.
	expired atomic.Bool
}

// maxQueued is how many messages other than the state a reader may have
// waiting before it is dropped as too slow.
const maxQueued = 64

func (r *roomReader) drop() { r.goneOnce.Do(func() { close(r.gone) }) }

// What a message is, for the writer's queue.
const (
	outQueued = iota // sent in order
	outState         // the room's state: the latest replaces one unsent
	outAt            // the driver's position: likewise
)

// push queues msg for the reader, dropping the reader when it is too slow.
func (r *roomReader) push(msg []byte) { r.enqueue(msg, outQueued) }

// pushState queues the room's state, replacing one not yet sent.
func (r *roomReader) pushState(msg []byte) { r.enqueue(msg, outState) }

// pushAt queues the driver's position, replacing one not yet sent.
func (r *roomReader) pushAt(msg []byte) { r.enqueue(msg, outAt) }

func (r *roomReader) enqueue(msg []byte, kind int) {
	r.outMu.Lock()
	if kind == outState {
		r.state = msg
	} else if kind == outAt {
		r.at = msg
	} else if len(r.queue) >= maxQueued {
		r.outMu.Unlock()
		r.drop()
		return
	} else {
		r.queue = append(r.queue, msg)
	}
	r.outMu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// take returns what is to be sent, in order: the queue, the state, the
// position (a state holds the position as it was when it was made, so the
// position pushed last is never older).
func (r *roomReader) take() [][]byte {
	r.outMu.Lock()
	defer r.outMu.Unlock()
	out := r.queue
	r.queue = nil
	for _, m := range []*[]byte{&r.state, &r.at} {
		if *m != nil {
			out = append(out, *m)
			*m = nil
		}
	}
	return out
}

type readerJSON struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Color     int    `json:"color"`
	Key       bool   `json:"key"`
	Driving   bool   `json:"driving"`
	Following bool   `json:"following"`
}

// who is a reader present here or on another replica, as the wheel needs it.
type who struct {
	id    string
	key   bool
	wheel bool // holds the lent wheel's ticket
	local *roomReader
}

// present is everyone in the room, here first. rl.mu is held.
func (rl *roomLive) present() []who {
	out := make([]who, 0, len(rl.readers))
	for _, r := range rl.readers {
		out = append(out, who{r.id, r.key, r.wheelHash != "", r})
	}
	for _, rep := range rl.sortedRemote() {
		for _, r := range rep.readers {
			out = append(out, who{id: r.ID, key: r.Key, wheel: r.Wheel})
		}
	}
	return out
}

func (rl *roomLive) sortedRemote() []*remoteReplica {
	names := make([]string, 0, len(rl.remote))
	for n := range rl.remote {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*remoteReplica, 0, len(names))
	for _, n := range names {
		out = append(out, rl.remote[n])
	}
	return out
}

// find is the reader present with id. rl.mu is held.
func (rl *roomLive) find(id string) (who, bool) {
	for _, w := range rl.present() {
		if w.id == id {
			return w, true
		}
	}
	return who{}, false
}

// driver is who drives, "" when the wheel is with no one present. rl.mu is held.
func (rl *roomLive) driver() string {
	if _, ok := rl.find(rl.rec.Driver); ok && rl.rec.Driver != "" {
		return rl.rec.Driver
	}
	return ""
}

// driverGone reports whether the wheel is with no one present: no one
// holds it, or its holder has not been present for presenceSettle (a
// reader who just joined another replica may not have been heard of yet).
// rl.mu is held.
func (rl *roomLive) driverGone(now time.Time) bool {
	d := rl.rec.Driver
	if d == "" {
		return true
	}
	if _, ok := rl.find(d); ok {
		return false
	}
	if strings.HasSuffix(d, rl.replica) {
		return true // one of this replica's readers, who left
	}
	if rl.missing != d {
		rl.missing, rl.missingSince = d, now
	}
	return now.Sub(rl.missingSince) >= presenceSettle && now.Sub(rl.activated) >= presenceSettle
}

// local is the reader here with id, or nil. rl.mu is held.
func (rl *roomLive) local(id string) *roomReader {
	return rl.first(func(x *roomReader) bool { return x.id == id })
}

// stateMsg is the room as everyone sees it. rl.mu is held.
func (rl *roomLive) stateMsg() []byte {
	driver := rl.driver()
	rs := make([]readerJSON, 0, len(rl.readers))
	for _, r := range rl.readers {
		rs = append(rs, readerJSON{r.id, r.name, r.color, r.key, r.id == driver, r.following && r.id != driver})
	}
	for _, rep := range rl.sortedRemote() {
		for _, r := range rep.readers {
			j := r.readerJSON
			j.Driving, j.Following = r.ID == driver, r.Following && r.ID != driver
			rs = append(rs, j)
		}
	}
	return mustJSON(map[string]any{"t": "state", "tag": rl.rec.Tag, "driver": driver, "at": rl.at, "kubelet_version": rl.version, "ended": rl.rec.Ended, "readers": rs})
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

// awaiting reports whether the wheel waits for its holder at now. rl.mu is held.
func (rl *roomLive) awaiting(now time.Time) bool {
	return !rl.awaitWheel.IsZero() && now.Before(rl.awaitWheel)
}

func wheelMsg(ticket string) []byte {
	return mustJSON(map[string]string{"t": "wheel", "wheel": ticket})
}

func errMsg(format string, args ...any) []byte {
	return mustJSON(map[string]string{"t": "error", "error": fmt.Sprintf(format, args...)})
}

// sync takes the room's record as it is now: who drives, the tag, the
// loan. rl.mu is held.
func (rs *Service) sync(rl *roomLive) {
	rec, err := rs.store.Get(rl.id)
	if err != nil {
		return
	}
	old := rl.rec
	rl.rec = rec
	if rec.Driver != old.Driver {
		if d := rl.local(rec.Driver); d != nil {
			d.following = false
		}
		if _, ok := rl.find(rec.Driver); ok {
			rl.awaitWheel = time.Time{}
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

// setDriver hands the wheel from the reader the room's record names
// (compare-and-set: ErrWheelMoved when another replica moved it first) and
// takes the new record. rl.mu is held.
func (rs *Service) setDriver(rl *roomLive, to string, lend bool) (string, error) {
	_, ticket, err := rs.store.SetDriver(rl.id, rl.rec.Driver, to, lend)
	if err != nil && !errors.Is(err, ErrWheelMoved) {
		rs.log.Error("rooms: moving the wheel", "room", rl.id[:6]+"…", "err", err)
	}
	rs.sync(rl)
	return ticket, err
}

// join adds a reader to room id, making the room active; nil when full.
func (rs *Service) join(id string) (*roomLive, *roomReader) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rl := rs.active[id]
	if rl == nil {
		rl = &roomLive{id: id, replica: rs.replica, remote: map[string]*remoteReplica{}, activated: time.Now()}
		if room, err := rs.store.Get(id); err == nil {
			rl.rec = room
			if room.WheelHash != "" {
				// Its readers may all be reconnecting (the server restarted):
				// the wheel waits for the one it was lent to.
				rl.awaitWheel = time.Now().Add(rs.wheelGrace)
			}
		}
		rs.active[id] = rl
		ctx, stop := context.WithCancel(rs.ctx)
		rl.stop = stop
		rl.unsub = rs.subscribe(rl)
		rs.wg.Add(1)
		go rs.watch(ctx, rl)
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if len(rl.readers) >= rs.maxReaders {
		return rl, nil
	}
	rl.next++
	n := strconv.Itoa(rl.next)
	r := &roomReader{id: "r" + n + rs.replica, name: "reader " + n, color: (rl.next - 1) % roomColors,
		following: true, wake: make(chan struct{}, 1), gone: make(chan struct{})}
	rl.readers = append(rl.readers, r)
	rs.announce(rl)
	return rl, r
}

// leave removes a reader. The wheel passes to a key holder, if one is
// present; a lent wheel goes to another page of its holder, or waits for
// them to come back.
func (rs *Service) leave(rl *roomLive, r *roomReader) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.readers = slices.DeleteFunc(rl.readers, func(x *roomReader) bool { return x == r })
	if rl.rec.Driver == r.id {
		if r.wheelHash != "" {
			if x := rl.first(func(x *roomReader) bool { return x.wheelHash != "" }); x != nil {
				rs.setDriver(rl, x.id, false)
			} else {
				rl.awaitWheel = time.Now().Add(rs.wheelGrace)
			}
		} else {
			next := ""
			if i := slices.IndexFunc(rl.present(), func(w who) bool { return w.key }); i >= 0 {
				next = rl.present()[i].id
			}
			rs.setDriver(rl, next, false)
		}
	}
	if len(rl.readers) == 0 {
		rl.ended = true
		rs.publish(rl, "presence", wireMsg{Bye: true})
		rl.unsub()
		rl.stop()
		delete(rs.active, rl.id)
		return
	}
	rl.broadcast()
	rs.announce(rl)
}

// first is the first reader here for whom ok is true, or nil. rl.mu is held.
func (rl *roomLive) first(ok func(*roomReader) bool) *roomReader {
	if i := slices.IndexFunc(rl.readers, ok); i >= 0 {
		return rl.readers[i]
	}
	return nil
}

// watch follows the room's feed for the kubelet version its journal
// reports, tells the other replicas who is here, forgets the readers of
// replicas that went quiet, and gives a key holder the wheel whose holder
// is gone (a lent wheel after wheelGrace), while the room has readers here.
func (rs *Service) watch(ctx context.Context, rl *roomLive) {
	defer rs.wg.Done()
	t := time.NewTicker(time.Second)
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
		v := rs.site.FeedVersion(room.Feed())
		rl.mu.Lock()
		if rl.ended {
			rl.mu.Unlock()
			return
		}
		rl.version = v
		now := time.Now()
		for name, rep := range rl.remote {
			if now.Sub(rep.seen) > presenceTTL {
				delete(rl.remote, name)
			}
		}
		rs.sync(rl)
		rs.rescueWheel(rl, now)
		rl.broadcast()
		rs.announce(rl)
		rl.mu.Unlock()
	}
}

// rescueWheel gives a key holder here the wheel when its holder is not
// present: at once when no one holds it, after wheelGrace when it was lent.
// With no key holder here the wheel waits: its holder may come back, a key
// holder may join. rl.mu is held.
func (rs *Service) rescueWheel(rl *roomLive, now time.Time) {
	if !rl.driverGone(now) {
		return
	}
	if rl.rec.Driver != "" && rl.rec.WheelHash != "" {
		if rl.awaitWheel.IsZero() {
			rl.awaitWheel = now.Add(rs.wheelGrace)
		}
		if rl.awaiting(now) {
			return
		}
	}
	if k := rl.first(func(x *roomReader) bool { return x.key }); k != nil {
		rs.setDriver(rl, k.id, false)
		rl.awaitWheel = time.Time{}
	}
}

// roomIn is any message from a browser.
type roomIn struct {
	T     string `json:"t"`
	Name  string `json:"name"`
	Color int    `json:"color"`
	Key   string `json:"key"`
	Wheel string `json:"wheel"`
	On    bool   `json:"on"`
	To    string `json:"to"`
	Tag   string `json:"tag"`
	position
}

// cleanName is a reader's name as shown: printable, at most 32 characters.
func cleanName(s string) (string, bool) {
	if !utf8.ValidString(s) {
		return "", false
	}
	out := make([]rune, 0, len(s))
	for _, c := range s {
		// Controls, and bidirectional overrides and isolates, which would
		// make a name read otherwise on the others' pages ("Bob(uoy)").
		if c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) {
			continue
		}
		out = append(out, c)
	}
	name := string(out)
	if name == "" || len(out) > 32 {
		return "", false
	}
	return name, true
}

// Socket is GET /rooms/{id}/ws.
func (rs *Service) Socket() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "id")
		room, err := Room{}, ErrNotFound
		if ValidID(id) {
			room, err = rs.store.Get(id)
		}
		// An expired room's socket is upgraded only to be closed with
		// CloseRoomGone: a page cannot read the status of a refused
		// upgrade, and would retry for ever. A plain GET gets the page.
		if errors.Is(err, ErrExpired) && isWebsocket(r) {
			refuseSocket(w, r, CloseGone, "this room expired")
			return
		}
		if err != nil {
			rs.roomOr404(w, r, id) // the page that says why
			return
		}
		client := clients.AddrPrefix(r, rs.trusted, rs.v6bits)
		if !rs.sockets.Acquire(w, client) {
			return
		}
		defer rs.sockets.Release(client)
		if !rs.enter() {
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
		defer rs.wg.Done()
		// The default options refuse an Origin other than this host.
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			rs.log.Info("rooms: websocket refused", "err", err)
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(msgLimit)
		stop := context.AfterFunc(rs.ctx, func() { conn.Close(websocket.StatusGoingAway, "server shutting down") })
		defer stop()

		rl, me := rs.join(room.ID)
		if me == nil {
			writeFrame(r.Context(), conn, errMsg("this room is full: %d readers at most (serve --max-readers)", rs.maxReaders))
			conn.Close(CloseFull, "room full")
			return
		}
		if err := rs.store.MarkJoined(room.ID); err != nil {
			rs.log.Warn("rooms: marking joined", "room", room.ID[:6]+"…", "err", err)
		}
		defer rs.leave(rl, me)

		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		defer rs.sockets.KeepAlive(conn)()
		go func() { // the writer: one per connection, ends with it
			for {
				select {
				case <-ctx.Done():
					return
				case <-me.gone:
					if me.expired.Load() {
						conn.Close(CloseGone, "this room expired")
					} else {
						conn.Close(websocket.StatusPolicyViolation, "too slow: messages piled up")
					}
					return
				case <-me.wake:
					for _, msg := range me.take() {
						if writeFrame(ctx, conn, msg) != nil {
							me.drop()
							cancel()
							return
						}
					}
				}
			}
		}()

		bucket := NewBucket(rs.msgRate, msgBurst, time.Now())
		joined := false
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				var ce websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.StatusMessageTooBig {
					rs.log.Info("rooms: message too big", "room", room.ID[:6]+"…")
				}
				return
			}
			if !bucket.Allow(time.Now()) {
				me.push(errMsg("too many messages: at most %v a second; this one was dropped", rs.msgRate))
				continue
			}
			var m roomIn
			if err := json.Unmarshal(data, &m); err != nil {
				me.push(errMsg("not a room message: %v", err))
				continue
			}
			if !joined && m.T != "join" {
				me.push(errMsg(`send {"t":"join"} first`))
				continue
			}
			joined = true
			rs.message(rl, me, room.ID, m)
		}
	})
}

// roomMessage applies one message from reader me. A refused message
// changes nothing and earns an error reply.
func (rs *Service) message(rl *roomLive, me *roomReader, id string, m roomIn) {
	room, err := rs.store.Get(id)
	if err != nil {
		me.push(errMsg("this room is gone: %v", err))
		return
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rs.sync(rl)
	refuse := func(format string, args ...any) { me.push(errMsg(format, args...)) }
	switch m.T {
	case "join":
		if name, ok := cleanName(m.Name); ok {
			me.name = name
		}
		if m.Color >= 0 && m.Color < roomColors {
			me.color = m.Color
		}
		// The record may name a driver this replica has not heard of
		// yet (on a replica that has not told us): wait to know.
		for range 2 {
			if rl.driver() != "" || rl.driverGone(time.Now()) {
				break
			}
			rl.mu.Unlock()
			time.Sleep(presenceSettle)
			rl.mu.Lock()
			rs.sync(rl)
		}
		welcome := map[string]any{"t": "welcome", "you": me.id, "feed": room.Feed(), "key": false, "wheel": false}
		switch {
		case m.Key != "" && !rs.store.IsDriver(id, m.Key):
			refuse("this driver key is not this room's: you joined as a viewer")
		case m.Key != "":
			me.key = true
			welcome["key"], welcome["token"] = true, room.IngestToken
			if now := time.Now(); rl.driverGone(now) && !rl.awaiting(now) {
				rs.setDriver(rl, me.id, false) // ends a loan
			}
		case m.Wheel != "" && !rs.store.HoldsWheel(id, m.Wheel):
			refuse("the wheel you were handed was taken back or handed on: you joined as a viewer")
		case m.Wheel != "":
			me.wheelHash = TicketHash(m.Wheel)
			welcome["wheel"] = true
			// The loan stands, so whoever drives holds the same ticket (an
			// older page of this reader's): the newest page drives.
			if d, ok := rl.find(rl.rec.Driver); !ok || d.wheel {
				if _, err := rs.store.SetWheelHolder(id, rl.rec.Driver, me.id); err == nil {
					rl.awaitWheel = time.Time{}
				}
				rs.sync(rl)
			}
		}
		me.push(mustJSON(welcome))
		me.welcomed = true
		// The state after the welcome, though the room looked the same
		// before it (broadcast sends only a change).
		defer func() { me.pushState(rl.stateMsg()) }()
	case "name":
		name, ok := cleanName(m.Name)
		if !ok {
			refuse("a name is 1 to 32 printable characters")
			return
		}
		me.name = name
		if m.Color >= 0 && m.Color < roomColors {
			me.color = m.Color
		}
	case "follow":
		me.following = m.On
	case "at":
		if rl.rec.Driver != me.id {
			refuse("only the driver can steer: you are following")
			return
		}
		if !m.position.valid() {
			refuse("bad position")
			return
		}
		p := m.position
		rl.at = &p
		// Only the position changed: send it alone, not the whole room.
		at := mustJSON(map[string]any{"t": "at", "at": p})
		for _, r := range rl.readers {
			if r.welcomed {
				r.pushAt(at)
			}
		}
		rs.publish(rl, "at", wireMsg{At: &p})
		return
	case "hand":
		if rl.rec.Driver != me.id {
			refuse("only the driver can hand the wheel")
			return
		}
		to, ok := rl.find(m.To)
		if !ok {
			refuse("no reader %q in this room", m.To)
			return
		}
		ticket, err := rs.setDriver(rl, to.id, !to.key)
		if err != nil {
			refuse("could not hand the wheel: %v", err)
			rl.broadcast()
			return
		}
		if ticket != "" {
			if to.local != nil {
				to.local.wheelHash = TicketHash(ticket)
				to.local.push(wheelMsg(ticket))
			} else {
				rs.publish(rl, "to", wireMsg{To: to.id, Ticket: ticket})
			}
		}
		rl.awaitWheel = time.Time{}
		if to.local != nil {
			to.local.following = false
		}
		me.following = true
	case "take":
		if !me.key {
			refuse("only a driver link can take the wheel")
			return
		}
		if _, err := rs.store.TakeWheel(id, me.id); err != nil {
			refuse("could not take the wheel: %v", err)
			return
		}
		rs.sync(rl)
		rl.awaitWheel = time.Time{}
	case "tag":
		if rl.rec.Ended {
			refuse("this room was ended: it stays at %s", rl.rec.Tag)
			return
		}
		if rl.rec.Driver != me.id {
			refuse("only the driver can switch the room's tag")
			return
		}
		if err := extractor.CheckTag(m.Tag); err != nil {
			refuse("%v", err)
			return
		}
		// Switch only once the tag's reading loads: a room must not be
		// stuck on a page that cannot be shown.
		me.push(mustJSON(map[string]string{"t": "note", "note": "Loading " + m.Tag + " for the room…"}))
		rs.wg.Add(1) // this handler's own count is held: rs is not closed yet
		go func(tag string) {
			defer rs.wg.Done()
			if err := rs.site.TagReady(rs.ctx, tag); err != nil {
				me.push(errMsg("the room stays at %s: %v", room.Tag, err))
				return
			}
			rl.mu.Lock()
			defer rl.mu.Unlock()
			if _, err := rs.store.SetTag(id, tag); err != nil {
				me.push(errMsg("could not switch the tag: %v", err))
				return
			}
			rs.sync(rl)
			rs.site.SetFeedTag(room.Feed(), tag)
			reload := mustJSON(map[string]string{"t": "reload", "tag": tag})
			for _, r := range rl.readers {
				r.push(reload)
			}
			rs.publish(rl, "all", wireMsg{Msg: reload, Tag: tag})
		}(m.Tag)
		return
	case "end":
		if rl.rec.Driver != me.id && !me.key {
			refuse("only the driver can end the room")
			return
		}
		if _, err := rs.store.End(id); err != nil {
			refuse("could not end the room: %v", err)
			return
		}
		rs.sync(rl)
	case "rotate":
		if rl.rec.Ended {
			refuse("this room was ended: it takes no relay")
			return
		}
		if !me.key {
			refuse("only a driver link can rotate the ingest token")
			return
		}
		nr, err := rs.store.RotateToken(id)
		if err != nil {
			refuse("could not rotate the token: %v", err)
			return
		}
		tok := mustJSON(map[string]string{"t": "token", "token": nr.IngestToken})
		for _, r := range rl.readers {
			if r.key {
				r.push(tok)
			}
		}
		rs.publish(rl, "all", wireMsg{Msg: tok, Keys: true})
		return
	default:
		refuse("unknown message type %q", m.T)
		return
	}
	rl.broadcast()
	rs.announce(rl)
}
