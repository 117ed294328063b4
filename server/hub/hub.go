// Package hub is one live feed's memory and fan-out: a bounded ring of the
// last lines, each with a sequence number, and any number of subscribers
// that read the ring's history and then its live tail.
//
// A subscriber is a cursor into the ring, not a queue: publishing stores an
// entry once and wakes the subscribers, whatever their number, and each
// copies what it has not seen when it asks for it. A slow subscriber never
// slows the publisher or the others: when the ring has moved past its
// cursor, what it missed is reported to it as a single count of skipped
// entries, in the place where the gap is.
package hub

import (
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
)

// ErrClosed is returned by Next once the subscription or the hub is closed
// and everything published before has been delivered.
var ErrClosed = errors.New("hub: closed")

// Entry is one published item: its sequence number and its encoded message.
type Entry struct {
	Seq  uint64
	Data []byte
	// At is when what the entry carries reached the publisher (Unix
	// microseconds; 0 when not said): a subscriber tells from it how long
	// the entry waited before it was sent on.
	At int64
}

// Batch is what one call to Next returns: a gap, when there is one, then
// entries in order. Missed entries were gone from the ring already when the
// subscription began (a resume from too far back); Skipped ones left the
// ring while this subscriber was behind. Entries is the subscription's own
// buffer: it is valid until the next call to Next, which reuses it.
type Batch struct {
	Missed  int
	Skipped int
	// Rewind, when not 0, says that entries from this sequence number on
	// which the subscriber read before were taken back (Hub.Rewind): it
	// drops them; Entries, and what follows, replace them.
	Rewind  uint64
	Entries []Entry
}

// MaxBatch is the most entries one call to Next returns; the rest follow
// on the next call. It bounds the buffer each subscriber keeps.
const MaxBatch = 1024

// Hub is one feed: a ring of the last entries and the subscribers to it.
// Its methods are safe for concurrent use.
//
// Subscribers read the ring under the read lock, side by side: a publish
// wakes all of a feed's browsers at once, and with one lock they queued
// behind each other (and the next publish behind them) to copy a few
// entries each. What a read changes is its own subscription's (cursor,
// missed, poked, buf), which nothing else touches but under the write
// lock, and dropped, which is atomic.
type Hub struct {
	mu        sync.RWMutex
	ring      []Entry // circular, increasing Seq, fixed length: the most entries kept
	start     int     // index of the oldest entry
	count     int     // entries kept
	bytes     int     // their data's length, summed
	byteLimit int     // the most bytes kept (but always the last entry); 0: no limit
	next      uint64  // sequence number of the next entry
	subs      map[*Subscription]struct{}
	advanced  chan struct{} // closed when next moves (or the hub closes); nil while nobody waits
	closed    bool
	dropped   atomic.Uint64 // entries slow subscribers skipped, all time
}

// New returns a hub that keeps the last ringSize entries. A subscriber may
// fall behind by as many before it skips entries.
func New(ringSize int) *Hub {
	return &Hub{
		ring: make([]Entry, max(ringSize, 1)),
		next: 1,
		subs: make(map[*Subscription]struct{}),
	}
}

// SetByteLimit bounds the ring by the size of its entries' data as well:
// the oldest entries are let go until they add up to at most n bytes (the
// newest one is always kept). n <= 0 removes the bound.
func (h *Hub) SetByteLimit(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byteLimit = max(n, 0)
	h.trimLocked()
}

// at is the i-th oldest entry kept. h.mu is held.
func (h *Hub) at(i int) *Entry { return &h.ring[(h.start+i)%len(h.ring)] }

// evictLocked lets the oldest entry go. h.mu is held.
func (h *Hub) evictLocked() {
	e := h.at(0)
	h.bytes -= len(e.Data)
	*e = Entry{}
	h.start = (h.start + 1) % len(h.ring)
	h.count--
}

// trimLocked evicts entries over the byte limit. h.mu is held.
func (h *Hub) trimLocked() {
	for h.byteLimit > 0 && h.bytes > h.byteLimit && h.count > 1 {
		h.evictLocked()
	}
}

// SetNext makes the next published entry get sequence number seq, for a hub
// restored from storage; it has no effect unless seq is ahead. Subscribers
// that had everything stay caught up: the numbers between are no entries.
func (h *Hub) SetNext(seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq <= h.next {
		return
	}
	for s := range h.subs {
		if s.cursor == h.next {
			s.cursor = seq
		}
	}
	h.next = seq
	h.advancedLocked()
}

// Rewind takes back the entries from sequence number to on, the newest
// ones: they leave the ring, and the next entry published gets number to.
// A feed shows lines before its store has acknowledged them, and takes
// them back when the store refused them (another replica stored other
// lines in their place). Every subscriber that read any of them is told
// so in its next batch (Batch.Rewind). It has no effect unless to is
// below Next.
func (h *Hub) Rewind(to uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if to >= h.next {
		return
	}
	for h.count > 0 && h.at(h.count-1).Seq >= to {
		e := h.at(h.count - 1)
		h.bytes -= len(e.Data)
		*e = Entry{}
		h.count--
	}
	h.next = to
	for s := range h.subs {
		if s.cursor > to {
			s.cursor = to
			if s.rewind == 0 || to < s.rewind {
				s.rewind = to
			}
			s.wake()
		}
	}
}

// advancedLocked wakes WaitNext's waiters. h.mu is held.
func (h *Hub) advancedLocked() {
	if h.advanced != nil {
		close(h.advanced)
		h.advanced = nil
	}
}

// WaitNext waits until the hub is past entry n (n was published, or
// SetNext moved beyond it: Next() > n), and reports whether it is; false
// when ctx ends or the hub closes first.
func (h *Hub) WaitNext(ctx context.Context, n uint64) bool {
	for {
		h.mu.Lock()
		if h.next > n {
			h.mu.Unlock()
			return true
		}
		if h.closed {
			h.mu.Unlock()
			return false
		}
		if h.advanced == nil {
			h.advanced = make(chan struct{})
		}
		ch := h.advanced
		h.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// Publish assigns the next sequence number, builds the entry's data with it
// (under the hub's lock, so keep build cheap), stores it in the ring and
// wakes the subscribers. It returns the sequence number, or 0 when the hub
// is closed.
func (h *Hub) Publish(build func(seq uint64) []byte) uint64 {
	return h.PublishN(1, func(_ int, seq uint64) []byte { return build(seq) })
}

// PublishN publishes n entries at once, the i-th built by build(i, seq):
// subscribers are woken once for all of them. It returns the first
// sequence number, or 0 when the hub is closed.
func (h *Hub) PublishN(n int, build func(i int, seq uint64) []byte) uint64 {
	return h.PublishNAt(n, func(i int, seq uint64) ([]byte, int64) { return build(i, seq), 0 })
}

// PublishNAt is PublishN for entries that say when they arrived: build
// returns the i-th's data and its Entry.At.
func (h *Hub) PublishNAt(n int, build func(i int, seq uint64) ([]byte, int64)) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || n <= 0 {
		return 0
	}
	first := h.next
	for i := range n {
		data, at := build(i, h.next)
		e := Entry{Seq: h.next, Data: data, At: at}
		h.next++
		if h.count == len(h.ring) {
			h.evictLocked()
		}
		*h.at(h.count) = e
		h.count++
		h.bytes += len(e.Data)
	}
	h.trimLocked()
	for s := range h.subs {
		s.wake()
	}
	h.advancedLocked()
	return first
}

// Poke wakes every subscriber without an entry, so it can notice a change
// of state kept outside the hub; Next then returns an empty batch.
func (h *Hub) Poke() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.poked = true
		s.wake()
	}
}

// Subscribe returns a subscription whose first batches are the ring's
// entries with a sequence number above after, then every entry published
// later: there is neither a gap nor a duplicate between history and tail.
// after == 0 means the whole ring.
func (h *Hub) Subscribe(after uint64) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Subscription{h: h, notify: make(chan struct{}, 1), cursor: min(after+1, h.next)}
	if oldest := h.oldestLocked(); after > 0 && s.cursor < oldest {
		s.missed = int(oldest - s.cursor)
	}
	if s.cursor < h.oldestLocked() {
		s.cursor = h.oldestLocked()
	}
	if h.closed {
		s.done = true
		close(s.notify)
		return s
	}
	h.subs[s] = struct{}{}
	if s.cursor < h.next || s.missed > 0 {
		s.wake()
	}
	return s
}

// oldestLocked is the sequence number of the oldest entry kept (next when
// none is). h.mu is held.
func (h *Hub) oldestLocked() uint64 {
	if h.count == 0 {
		return h.next
	}
	return h.at(0).Seq
}

// appendFromLocked appends to dst at most limit entries of the ring, from
// the first whose sequence number is at least from. h.mu is held.
func (h *Hub) appendFromLocked(dst []Entry, from uint64, limit int) []Entry {
	n := h.count
	i := sort.Search(n, func(k int) bool { return h.at(k).Seq >= from })
	for k := i; k < n && k < i+limit; k++ {
		dst = append(dst, *h.at(k))
	}
	return dst
}

// Stats is a hub's counters.
type Stats struct {
	Subscribers int
	Lagging     int    // subscribers the ring has moved past: they will skip entries
	Dropped     uint64 // entries skipped by slow subscribers, all time (counted when they read again or leave)
	Next        uint64 // the sequence number the next entry will get
	Stored      int    // entries in the ring
	Bytes       int    // their data's size
}

// Next is the sequence number the next entry will get (Stats().Next,
// without counting subscribers).
func (h *Hub) Next() uint64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.next
}

// Stats returns the hub's counters.
func (h *Hub) Stats() Stats {
	h.mu.Lock() // not RLock: it reads every subscription's cursor
	defer h.mu.Unlock()
	st := Stats{Subscribers: len(h.subs), Dropped: h.dropped.Load(), Next: h.next, Stored: h.count, Bytes: h.bytes}
	oldest := h.oldestLocked()
	for s := range h.subs {
		if s.cursor < oldest {
			st.Lagging++
		}
	}
	return st
}

// Close ends every subscription (each still gets what was published before)
// and makes Publish a no-op.
func (h *Hub) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	h.closed = true
	for s := range h.subs {
		s.closeLocked()
	}
	h.advancedLocked()
}

// Subscription is one subscriber's cursor. Next must be called from one
// goroutine at a time; Close from any.
type Subscription struct {
	h      *Hub
	notify chan struct{} // written under h.mu (its own take: the read lock), closed under the write lock
	buf    []Entry       // what Next returned last; only Next touches it

	// Guarded by h.mu: written under the write lock, or by its own take
	// under the read lock.
	cursor uint64 // the sequence number this subscriber reads next
	rewind uint64 // entries it read from here on were taken back; 0: none
	missed int
	poked  bool
	done   bool
}

// wake signals the reader without blocking. h.mu is held.
func (s *Subscription) wake() {
	if s.done {
		return
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// closeLocked removes s from its hub; what the ring dropped before s read
// it counts as dropped. h.mu is held.
func (s *Subscription) closeLocked() {
	if s.done {
		return
	}
	if oldest := s.h.oldestLocked(); s.cursor < oldest {
		s.h.dropped.Add(oldest - s.cursor)
	}
	s.done = true
	delete(s.h.subs, s)
	close(s.notify)
}

// Next waits until there is something to read and returns it (at most
// MaxBatch entries). It returns an empty batch after a Poke, and ErrClosed
// once the subscription is closed and drained, or ctx's error when ctx ends
// first.
func (s *Subscription) Next(ctx context.Context) (Batch, error) {
	for {
		b, ok, done := s.take()
		if ok {
			return b, nil
		}
		if done {
			return Batch{}, ErrClosed
		}
		select {
		case <-s.notify:
		case <-ctx.Done():
			return Batch{}, ctx.Err()
		}
	}
}

// take copies what s has not read from the ring, if anything; done reports
// that nothing will come any more. It holds the read lock only (see Hub).
func (s *Subscription) take() (b Batch, ok, done bool) {
	h := s.h
	h.mu.RLock()
	defer h.mu.RUnlock()
	if s.cursor >= h.next && s.missed == 0 && s.rewind == 0 {
		if s.poked {
			s.poked = false
			return Batch{}, true, false
		}
		return Batch{}, false, s.done
	}
	s.poked = false
	b.Missed, s.missed = s.missed, 0
	b.Rewind, s.rewind = s.rewind, 0
	if oldest := h.oldestLocked(); s.cursor < oldest {
		b.Skipped = int(oldest - s.cursor)
		h.dropped.Add(uint64(b.Skipped))
		s.cursor = oldest
	}
	clear(s.buf) // let go of the last batch's data
	s.buf = h.appendFromLocked(s.buf[:0], s.cursor, MaxBatch)
	if len(s.buf) > 0 {
		s.cursor = s.buf[len(s.buf)-1].Seq + 1
	} else {
		s.cursor = h.next
	}
	if s.cursor < h.next {
		s.wake() // more than one batch's worth: come back at once
	}
	b.Entries = s.buf
	return b, true, false
}

// Close unsubscribes; a later Next returns what was published before, then ErrClosed.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.closeLocked()
}
