// Package kvmirror follows a JetStream KV bucket from its start: one
// watcher per bucket and process, whose every entry (what the bucket held,
// then each change) is handed to the owner of a copy of the bucket, which
// rooms' records and the rooms' notes keep in memory and serve reads from.
package kvmirror

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Entry is one entry of the bucket, as the watcher brought it.
type Entry struct {
	jetstream.KeyValueEntry
	// Initial: the entry was in the bucket when the mirror started (it is
	// not a change made since).
	Initial bool
}

// Put reports whether the entry holds a value (not a delete or purge marker).
func (e Entry) Put() bool { return e.Operation() == jetstream.KeyValuePut }

// Mirror is a running watch of a bucket.
type Mirror struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// ErrStopped: the watch ended before it brought the bucket's contents.
var ErrStopped = errors.New("kvmirror: the watch ended before the bucket's contents")

// Start watches every key of kv and calls apply with each entry, in order,
// on one goroutine: first what the bucket holds, then each change. It
// returns once apply has had everything the bucket held, or ctx ends
// first (then the watch is stopped). apply must not block for long: the
// next change waits for it.
func Start(ctx context.Context, kv jetstream.KeyValue, apply func(Entry)) (*Mirror, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	wctx, cancel := context.WithCancel(context.Background())
	w, err := kv.WatchAll(wctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch %s: %w", kv.Bucket(), err)
	}
	m := &Mirror{cancel: cancel, done: make(chan struct{})}
	ready := make(chan struct{})
	go m.run(w, ready, apply)
	select {
	case <-ready:
	case <-ctx.Done():
		m.Stop()
		return nil, ctx.Err()
	}
	select {
	case <-m.done:
		// Ended as soon as it began: it brought nothing to be trusted.
		if wctx.Err() == nil {
			return nil, fmt.Errorf("%s: %w", kv.Bucket(), ErrStopped)
		}
	default:
	}
	return m, nil
}

func (m *Mirror) run(w jetstream.KeyWatcher, ready chan struct{}, apply func(Entry)) {
	defer close(m.done)
	defer w.Stop()
	initial := true
	defer func() {
		if initial {
			close(ready)
		}
	}()
	for e := range w.Updates() {
		if e == nil { // the end of what the bucket held
			if initial {
				initial = false
				close(ready)
			}
			continue
		}
		apply(Entry{e, initial})
	}
}

// Stop ends the watch and waits until apply is no longer called.
func (m *Mirror) Stop() {
	m.cancel()
	<-m.done
}
