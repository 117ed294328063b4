package feeds

// The demo: a simulated kubelet's lines at a tag's real log sites, in
// the default feed, a tag's own demo feed, or a room's feed while no
// journal feeds it; one replica per cluster runs each (demoLease).

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/demo"
	"github.com/syncloop/syncloop/server/relay"
)

// startDemo runs the demo feed into f until a relay attaches. A tag's own
// demo (tagDemo) also stops once no browser has watched it for l.demoIdle,
// or once the server's feed is no longer a demo, and is then let go.
func (l *Service) startDemo(f *feed) {
	if !l.enter() {
		return
	}
	ctx, stop := context.WithCancel(l.ctx)
	f.mu.Lock()
	f.startedDemo(stop)
	tag := f.tag
	f.mu.Unlock()
	ofTag := isTagDemo(f.name)
	ofRoom := f.name != defaultFeed && !ofTag
	go func() {
		defer l.wg.Done()
		defer stop()
		var r *extractor.Reading
		for r == nil {
			if r = l.reading(tag); r == nil && relay.Sleep(ctx, 500*time.Millisecond) != nil {
				return
			}
		}
		d := demo.New(r, time.Now().UnixNano())
		// One replica per cluster runs a demo: the default one's lease is
		// "demo", a tag's is its feed's name.
		lease, held := "demo", &l.demoHeld
		if ofTag || ofRoom {
			lease, held = f.name, new(atomic.Bool)
		}
		held = l.demoLease(ctx, lease, held)
		idleSince := time.Now()
		for {
			line, wait := d.Next(time.Now())
			if len(line) > 0 && held.Load() {
				if _, err := f.ingest([]relay.Line{{Raw: string(line)}}, true); err != nil {
					l.log.Error("live: demo feed", "feed", f.name, "err", err)
				}
			}
			if l.cfg.DemoPeriod > 0 {
				wait = l.cfg.DemoPeriod
			}
			if relay.Sleep(ctx, max(wait, 10*time.Millisecond)) != nil {
				return
			}
			if ofRoom {
				// The room switched its tag: the demo simulates the new one.
				f.mu.Lock()
				cur := f.tag
				f.mu.Unlock()
				if nr := l.reading(cur); cur != tag && nr != nil {
					tag, d = cur, demo.New(nr, time.Now().UnixNano())
				}
				if f.hub.Stats().Subscribers > 0 {
					idleSince = time.Now()
				}
				if time.Since(idleSince) >= l.demoIdle && l.stopRoomDemo(f, ctx) {
					return
				}
				continue
			}
			if !ofTag {
				continue
			}
			if f.hub.Stats().Subscribers > 0 {
				idleSince = time.Now()
			}
			if time.Since(idleSince) >= l.demoIdle && l.dropIdleDemo(f) {
				return
			}
			if !l.defaultIsDemo() {
				f.mu.Lock()
				f.stopDemo(noteJournalNow)
				f.mu.Unlock()
				return
			}
		}
	}()
}

// demoIdle is how long a tag's demo feed runs with no browser watching.
const demoIdle = 2 * time.Minute

// demoFeedPrefix starts the name of a tag's demo feed: "demo-v1.20.0".
const demoFeedPrefix = "demo-"

// defaultIsDemo reports whether the server's own feed is the demo.
func (l *Service) defaultIsDemo() bool {
	l.mu.Lock()
	f := l.feeds[defaultFeed]
	l.mu.Unlock()
	if f == nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.src.kind == sourceDemo
}

// tagDemo is the demo feed of tag, started if it is not running: what a
// page at a tag other than the default's shows while the server's own feed
// is the demo (which simulates the default tag's kubelet). It is nil when
// tag's Reading is not loaded.
func (l *Service) tagDemo(tag string) (*feed, error) {
	if l.reading(tag) == nil {
		return nil, nil
	}
	f, err := l.feed(demoFeedPrefix + tag)
	if errors.Is(err, errTooManyDemos) {
		l.log.Warn("live: every tag demo is watched; this page gets the server's demo", "tag", tag, "max", maxTagDemos)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	start := f.claimDemo()
	f.mu.Unlock()
	if start {
		l.startDemo(f)
	}
	return f, nil
}

// dropIdleDemo lets go of a tag's demo feed no browser asked for since
// l.demoIdle, and reports whether it did. Its stored lines stay (bounded
// as every feed's): another replica may still be running it.
func (l *Service) dropIdleDemo(f *feed) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.feeds[f.name] != f || time.Since(f.asked) < l.demoIdle || f.hub.Stats().Subscribers > 0 {
		return false
	}
	l.letGoLocked(f, "idle demo feed let go")
	return true
}

// demoLeaseTTL is how long the demo's lease outlives a replica that stops
// renewing it (killed); it is renewed at a third of that.
const demoLeaseTTL = 15 * time.Second

// demoLease keeps trying to hold the cluster's lease key (in a KV bucket
// whose entries expire after demoLeaseTTL) until ctx ends: one replica per
// cluster runs a demo feed, not one each. The flag says whether this
// replica holds it.
func (l *Service) demoLease(ctx context.Context, key string, held *atomic.Bool) *atomic.Bool {
	if !l.enter() {
		return held
	}
	go func() {
		defer l.wg.Done()
		var kv jetstream.KeyValue
		var rev uint64
		for {
			var err error
			switch {
			case kv == nil:
				kv, err = l.b.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
					Bucket: "syncloop_leases", TTL: demoLeaseTTL, Storage: broker.Storage(l.b.Memory), Replicas: l.b.Replicas,
				})
				if err != nil {
					kv = nil
				}
			case held.Load():
				if rev, err = kv.Update(ctx, key, []byte(l.cfg.NATSName), rev); err != nil {
					held.Store(false) // someone else's now, or JetStream is away
				}
			default:
				if rev, err = kv.Create(ctx, key, []byte(l.cfg.NATSName)); err == nil {
					held.Store(true)
				}
			}
			if err != nil && kv == nil && ctx.Err() == nil {
				l.log.Warn("live: demo lease", "err", err)
			}
			if !held.Load() && kv != nil && err == nil {
				continue // the bucket was just made: try for the lease at once
			}
			if relay.Sleep(ctx, demoLeaseTTL/3) != nil {
				if held.Swap(false) { // let another replica take over at once
					dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
					kv.Delete(dctx, key, jetstream.LastRevision(rev))
					cancel()
				}
				return
			}
		}
	}()
	// The first answer comes quickly; the demo waits for it.
	for range 50 {
		if held.Load() || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	return held
}

// RoomDemo runs the demo in the named feed (a room's) while no journal
// feeds it: from now until a relay attaches or a real line arrives, or
// until no browser watched it for a while (a later call starts it again).
// Its lines are marked demo: they light cases but are never counted as
// fired (FeedFired). A feed that ever had a real line gets no demo.
func (l *Service) RoomDemo(name string) {
	if l.cfg.DemoPeriod < 0 { // the demo is off (tests)
		return
	}
	f, err := l.feed(name)
	if err != nil || !l.enter() {
		return
	}
	go func() {
		defer l.wg.Done()
		// Whether a journal ever fed it is known once its history is here.
		select {
		case <-f.ready:
		case <-l.ctx.Done():
			return
		}
		f.mu.Lock()
		start := f.src.relays == 0 && f.counts.real == 0 && !f.gone.Load() && f.claimDemo()
		f.mu.Unlock()
		if start {
			l.startDemo(f)
		}
	}()
}

// stopRoomDemo stops the demo of a room's feed that no browser watched for
// l.demoIdle, keeping the feed; it reports whether it stopped it (ctx is
// the demo's own: a demo a relay stopped in between is left to it).
func (l *Service) stopRoomDemo(f *feed, ctx context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil || f.src.kind != sourceDemo {
		return true
	}
	f.stopDemo(noteRoomNoJournal)
	return true
}
