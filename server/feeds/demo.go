package feeds

// The demo: a simulated kubelet's lines at a tag's real log sites, in
// the default feed, a tag's own demo feed, or an owned feed while no
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
// demo (tagDemo) also stops once no browser has watched it for s.demoIdle,
// or once the server's feed is no longer a demo, and is then let go.
func (s *Service) startDemo(f *feed) {
	if !s.enter() {
		return
	}
	ctx, stop := context.WithCancel(s.ctx)
	f.mu.Lock()
	f.startedDemo(stop)
	tag := f.tag
	f.mu.Unlock()
	ofTag := isTagDemo(f.name)
	ofOwned := f.name != defaultFeed && !ofTag
	go func() {
		defer s.wg.Done()
		defer stop()
		var r *extractor.Reading
		for r == nil {
			if r = s.reading(tag); r == nil && relay.Sleep(ctx, 500*time.Millisecond) != nil {
				return
			}
		}
		d := demo.New(r, time.Now().UnixNano())
		// One replica per cluster runs a demo: the default one's lease is
		// "demo", a tag's is its feed's name.
		lease, held := "demo", &s.demoHeld
		if ofTag || ofOwned {
			lease, held = f.name, new(atomic.Bool)
		}
		held = s.demoLease(ctx, lease, held)
		idleSince := time.Now()
		for {
			line, wait := d.Next(time.Now())
			if len(line) > 0 && held.Load() {
				if _, err := f.ingest([]relay.Line{{Raw: string(line)}}, true); err != nil {
					s.log.Error("feeds: demo feed", "feed", f.name, "err", err)
				}
			}
			if s.cfg.DemoPeriod > 0 {
				wait = s.cfg.DemoPeriod
			}
			if relay.Sleep(ctx, max(wait, 10*time.Millisecond)) != nil {
				return
			}
			if ofOwned {
				// Its owner switched its tag: the demo simulates the new one.
				f.mu.Lock()
				cur := f.tag
				f.mu.Unlock()
				if nr := s.reading(cur); cur != tag && nr != nil {
					tag, d = cur, demo.New(nr, time.Now().UnixNano())
				}
				if f.hub.Stats().Subscribers > 0 {
					idleSince = time.Now()
				}
				if time.Since(idleSince) >= s.demoIdle && s.stopQuietDemo(f, ctx) {
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
			if time.Since(idleSince) >= s.demoIdle && s.dropIdleDemo(f) {
				return
			}
			if !s.defaultIsDemo() {
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
func (s *Service) defaultIsDemo() bool {
	s.mu.Lock()
	f := s.feeds[defaultFeed]
	s.mu.Unlock()
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
func (s *Service) tagDemo(tag string) (*feed, error) {
	if s.reading(tag) == nil {
		return nil, nil
	}
	f, err := s.feed(demoFeedPrefix + tag)
	if errors.Is(err, errTooManyDemos) {
		s.log.Warn("feeds: every tag demo is watched; this page gets the server's demo", "tag", tag, "max", maxTagDemos)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	start := f.claimDemo()
	f.mu.Unlock()
	if start {
		s.startDemo(f)
	}
	return f, nil
}

// dropIdleDemo lets go of a tag's demo feed no browser asked for since
// s.demoIdle, and reports whether it did. Its stored lines stay (bounded
// as every feed's): another replica may still be running it.
func (s *Service) dropIdleDemo(f *feed) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.feeds[f.name] != f || time.Since(f.asked) < s.demoIdle || f.hub.Stats().Subscribers > 0 {
		return false
	}
	s.letGoLocked(f, "idle demo feed let go")
	return true
}

// demoLeaseTTL is how long the demo's lease outlives a replica that stops
// renewing it (killed); it is renewed at a third of that.
const demoLeaseTTL = 15 * time.Second

// demoLease keeps trying to hold the cluster's lease key (in a KV bucket
// whose entries expire after demoLeaseTTL) until ctx ends: one replica per
// cluster runs a demo feed, not one each. The flag says whether this
// replica holds it.
func (s *Service) demoLease(ctx context.Context, key string, held *atomic.Bool) *atomic.Bool {
	if !s.enter() {
		return held
	}
	go func() {
		defer s.wg.Done()
		var kv jetstream.KeyValue
		var rev uint64
		for {
			var err error
			switch {
			case kv == nil:
				kv, err = s.b.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
					Bucket: "syncloop_leases", TTL: demoLeaseTTL, Storage: broker.Storage(s.b.Memory), Replicas: s.b.Replicas,
				})
				if err != nil {
					kv = nil
				}
			case held.Load():
				if rev, err = kv.Update(ctx, key, []byte(s.cfg.NATSName), rev); err != nil {
					held.Store(false) // someone else's now, or JetStream is away
				}
			default:
				if rev, err = kv.Create(ctx, key, []byte(s.cfg.NATSName)); err == nil {
					held.Store(true)
				}
			}
			if err != nil && kv == nil && ctx.Err() == nil {
				s.log.Warn("feeds: demo lease", "err", err)
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

// DemoWhileQuiet runs the demo in the named feed (an owned one) while no journal
// feeds it: from now until a relay attaches or a real line arrives, or
// until no browser watched it for a while (a later call starts it again).
// Its lines are marked demo: they light cases but are never counted as
// fired (FeedFired). A feed that ever had a real line gets no demo.
func (s *Service) DemoWhileQuiet(name string) {
	if s.cfg.DemoPeriod < 0 { // the demo is off (tests)
		return
	}
	f, err := s.feed(name)
	if err != nil || !s.enter() {
		return
	}
	go func() {
		defer s.wg.Done()
		// Whether a journal ever fed it is known once its history is here.
		select {
		case <-f.ready:
		case <-s.ctx.Done():
			return
		}
		f.mu.Lock()
		start := f.src.relays == 0 && f.counts.real == 0 && !f.gone.Load() && f.claimDemo()
		f.mu.Unlock()
		if start {
			s.startDemo(f)
		}
	}()
}

// stopQuietDemo stops the demo of an owned feed that no browser watched for
// s.demoIdle, keeping the feed; it reports whether it stopped it (ctx is
// the demo's own: a demo a relay stopped in between is left to it).
func (s *Service) stopQuietDemo(f *feed, ctx context.Context) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ctx.Err() != nil || f.src.kind != sourceDemo {
		return true
	}
	f.stopDemo(f.src.waiting)
	return true
}
