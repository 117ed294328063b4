package broker

// Durability of what the embedded server stores, by group commit.
//
// A relay's lines are acknowledged only once they would survive a host
// crash. nats-server can fsync each write before its PubAck (SyncAlways),
// but then each stream fsyncs each message on its own goroutine while the
// next messages wait: measured at 50 feeds of 1,000 lines/s, that tripled
// the latency from relay to browser (p50 13 ms → 36 ms, p99 54 → 126 ms).
// Instead the server writes each message to its file before the PubAck
// (so a process crash loses nothing: the kernel has it), browsers get the
// lines then, and the ack to the relay waits for Synced: one syncfs(2) of
// the store's filesystem covers every write acknowledged before it began,
// from every stream, however many wait. A relay keeps its lines until
// they are acknowledged, so a host crash loses none either way.

import (
	"context"
	"sync"
	"time"
)

// syncRetry is how soon a failed sync is tried again: an ack waits for a
// sync that succeeded, never for one that failed.
const syncRetry = 100 * time.Millisecond

// groupSync runs one sync at a time for everyone waiting, and at most one
// every gap: a sync flushes what every stream wrote since the last, so
// fewer of them cost the disk and the writers less, while an ack waits a
// little longer (which a relay, sending ahead of its acks, does not feel).
type groupSync struct {
	sync func() error // syncfs of the store's filesystem
	log  func(err error)
	gap  time.Duration

	mu   sync.Mutex
	next chan struct{} // closed by the next sync to begin; nil while nobody waits
	kick chan struct{} // a waiter arrived
}

func newGroupSync(sync func() error, log func(error), gap time.Duration) *groupSync {
	return &groupSync{sync: sync, log: log, gap: gap, kick: make(chan struct{}, 1)}
}

// synced returns a channel closed once a sync that began after the call
// has completed.
func (g *groupSync) synced() <-chan struct{} {
	g.mu.Lock()
	if g.next == nil {
		g.next = make(chan struct{})
	}
	ch := g.next
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
	return ch
}

// run syncs for the waiters until ctx ends. Whoever got a channel before
// it was taken here is covered: the sync begins after.
func (g *groupSync) run(ctx context.Context) {
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.kick:
		}
		if wait := g.gap - time.Since(last); wait > 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
		last = time.Now()
		g.mu.Lock()
		ch := g.next
		g.next = nil
		g.mu.Unlock()
		if ch == nil {
			continue
		}
		for {
			err := g.sync()
			if err == nil {
				break
			}
			g.log(err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(syncRetry):
			}
		}
		close(ch)
	}
}

// closedChan is what Synced returns when nothing is to be waited for.
var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()
