// Package hub is one live feed's memory and fan-out: a bounded ring of the
// last lines, each with a sequence number, and any number of subscribers that
// receive the ring's history and then the live tail.
//
// A slow subscriber never slows the publisher or the others: each has a
// bounded queue, and what overflows it is dropped and later reported as a
// single count of skipped entries, in the place where the gap is.
package hub

import (
	"context"
	"errors"
	"sync"
)

// ErrClosed is returned by Next once the subscription or the hub is closed
// and everything queued before has been delivered.
var ErrClosed = errors.New("hub: closed")

// Entry is one published item: its sequence number and its encoded message.
type Entry struct {
	Seq  uint64
	Data []byte
}

// Batch is what one call to Next returns: entries in order, then, when
// Skipped > 0, that many entries that followed them were dropped for this
// subscriber because its queue was full. Entries is the subscription's own
// queue, handed over: it is valid until the next call to Next, which
// reuses it.
type Batch struct {
	Missed  int // entries before Entries that are gone from the ring (a resume from too far back)
	Entries []Entry
	Skipped int
}

// Hub is one feed: a ring of the last entries and the subscribers to it.
// Its methods are safe for concurrent use.
type Hub struct {
	queueLimit int

	mu      sync.Mutex
	ring    []Entry // circular, len(ring) == capacity once full
	start   int     // index of the oldest entry when full
	next    uint64  // sequence number of the next entry
	subs    map[*Subscription]struct{}
	closed  bool
	dropped uint64 // entries dropped for slow subscribers, all time
}

// New returns a hub that keeps the last ringSize entries and lets each
// subscriber fall at most queueLimit entries behind before dropping.
func New(ringSize, queueLimit int) *Hub {
	if ringSize < 1 {
		ringSize = 1
	}
	if queueLimit < 1 {
		queueLimit = 1
	}
	return &Hub{
		queueLimit: queueLimit,
		ring:       make([]Entry, 0, ringSize),
		next:       1,
		subs:       make(map[*Subscription]struct{}),
	}
}

// SetNext makes the next published entry get sequence number seq, for a hub
// restored from storage; it has no effect unless seq is ahead.
func (h *Hub) SetNext(seq uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if seq > h.next {
		h.next = seq
	}
}

// Publish assigns the next sequence number, builds the entry's data with it
// (under the hub's lock, so keep build cheap), stores it in the ring and
// queues it for every subscriber. It returns the sequence number, or 0 when
// the hub is closed.
func (h *Hub) Publish(build func(seq uint64) []byte) uint64 {
	return h.PublishN(1, func(_ int, seq uint64) []byte { return build(seq) })
}

// PublishN publishes n entries at once, the i-th built by build(i, seq):
// subscribers are woken once for all of them. It returns the first
// sequence number, or 0 when the hub is closed.
func (h *Hub) PublishN(n int, build func(i int, seq uint64) []byte) uint64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || n <= 0 {
		return 0
	}
	first := h.next
	for i := range n {
		e := Entry{Seq: h.next, Data: build(i, h.next)}
		h.next++
		if len(h.ring) < cap(h.ring) {
			h.ring = append(h.ring, e)
		} else {
			h.ring[h.start] = e
			h.start = (h.start + 1) % len(h.ring)
		}
		for s := range h.subs {
			if !s.offer(e) {
				h.dropped++
			}
		}
	}
	for s := range h.subs {
		s.wake()
	}
	return first
}

// Poke wakes every subscriber without an entry, so it can notice a change
// of state kept outside the hub; Next then returns an empty batch.
func (h *Hub) Poke() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.wake()
	}
}

// Subscribe returns a subscription whose first batches are the ring's
// entries with a sequence number above after, then every entry published
// later: the snapshot and the registration happen under one lock, so there
// is neither a gap nor a duplicate between history and tail.
func (h *Hub) Subscribe(after uint64) *Subscription {
	h.mu.Lock()
	defer h.mu.Unlock()
	s := &Subscription{h: h, notify: make(chan struct{}, 1)}
	s.pending = h.snapshotLocked(after)
	if after > 0 && after+1 < h.next {
		oldest := h.next // nothing stored: everything after "after" is gone
		if len(s.pending) > 0 {
			oldest = s.pending[0].Seq
		}
		s.missed = int(oldest - after - 1)
	}
	s.limit = h.queueLimit + len(s.pending)
	if h.closed {
		s.done = true
		close(s.notify)
		return s
	}
	h.subs[s] = struct{}{}
	if len(s.pending) > 0 || s.missed > 0 {
		s.wake()
	}
	return s
}

// Snapshot returns a copy of the ring's entries with a sequence number above after.
func (h *Hub) Snapshot(after uint64) []Entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.snapshotLocked(after)
}

func (h *Hub) snapshotLocked(after uint64) []Entry {
	n := len(h.ring)
	out := make([]Entry, 0, n)
	for i := 0; i < n; i++ {
		e := h.ring[(h.start+i)%n]
		if e.Seq > after {
			out = append(out, e)
		}
	}
	return out
}

// Stats is a hub's counters.
type Stats struct {
	Subscribers int
	Dropped     uint64 // entries dropped for slow subscribers, all time
	Next        uint64 // the sequence number the next entry will get
	Stored      int    // entries in the ring
}

// Stats returns the hub's counters.
func (h *Hub) Stats() Stats {
	h.mu.Lock()
	defer h.mu.Unlock()
	return Stats{Subscribers: len(h.subs), Dropped: h.dropped, Next: h.next, Stored: len(h.ring)}
}

// Close ends every subscription (each still gets what was queued for it) and
// makes Publish a no-op.
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
}

// Subscription is one subscriber's queue. Next must be called from one
// goroutine at a time; Close from any.
type Subscription struct {
	h      *Hub
	notify chan struct{} // written and closed only under h.mu

	spare []Entry // the queue Next handed out last, taken back by the next take

	// Guarded by h.mu.
	pending []Entry
	missed  int
	skipped int
	limit   int
	done    bool
}

// offer queues e, or counts it as skipped when the queue is full; the
// caller wakes the reader. h.mu is held.
func (s *Subscription) offer(e Entry) bool {
	ok := len(s.pending) < s.limit
	if ok {
		s.pending = append(s.pending, e)
	} else {
		s.skipped++
	}
	return ok
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

// closeLocked removes s from its hub. h.mu is held.
func (s *Subscription) closeLocked() {
	if s.done {
		return
	}
	s.done = true
	delete(s.h.subs, s)
	close(s.notify)
}

// Next waits until something is queued and returns all of it. It returns an
// empty batch after a Poke, and ErrClosed once the subscription is closed
// and drained, or ctx's error when ctx ends first.
func (s *Subscription) Next(ctx context.Context) (Batch, error) {
	for {
		if b, ok := s.take(); ok {
			return b, nil
		}
		select {
		case <-s.notify:
			if b, ok := s.take(); ok {
				return b, nil
			}
			if s.isDone() {
				return Batch{}, ErrClosed
			}
			return Batch{}, nil // a Poke
		case <-ctx.Done():
			return Batch{}, ctx.Err()
		}
	}
}

func (s *Subscription) isDone() bool {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	return s.done
}

// take swaps out everything queued, if anything is.
func (s *Subscription) take() (Batch, bool) {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	if len(s.pending) == 0 && s.skipped == 0 && s.missed == 0 {
		return Batch{}, false
	}
	b := Batch{Missed: s.missed, Entries: s.pending, Skipped: s.skipped}
	s.missed = 0
	// The two queues take turns: a new one per batch was most of the
	// garbage a busy feed made.
	clear(s.spare) // let go of the entries' data
	s.pending, s.spare = s.spare[:0], s.pending
	if cap(s.pending) > 4*s.h.queueLimit {
		s.pending = nil // grown by a long history: let it go
	}
	s.skipped = 0
	s.limit = s.h.queueLimit
	return b, true
}

// Close unsubscribes; a later Next returns what is still queued, then ErrClosed.
func (s *Subscription) Close() {
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	s.closeLocked()
}
