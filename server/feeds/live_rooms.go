package feeds

// What rooms ask of the live side (live.go), through these methods only
// (package rooms gets them as func values, rooms.Site): a room's feed reads
// the room's tag, the room shows the kubelet version its journal reports,
// and an expired room's feed goes away with it. They are the feed engine's
// own code: they take the feed's lock as live.go does.

import (
	"context"
	"time"

	"github.com/syncloop/syncloop/server/classify"
)

// SetFeedTag makes the named feed classify by tag from its next line on,
// creating the feed if needed.
func (l *Service) SetFeedTag(name, tag string) {
	f, err := l.feed(name)
	if err != nil {
		l.log.Warn("rooms: feed", "feed", name, "err", err)
		return
	}
	// Whether the feed has stored lines is known once it is followed (its
	// tail is read then); its hub gets them a little later.
	f.pubMu.Lock()
	stored := f.tail.next > 1
	f.pubMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.source == "none" && f.note == "" {
		if stored || f.hub.Next() > 1 {
			// The feed's history came back from its file after a restart.
			f.note = "No relay is attached now: these are the room's journal lines so far. Whoever holds the driver link finds the relay command under More ▾."
		} else {
			f.note = "No journal in this room yet: whoever holds the driver link finds the relay command under More ▾."
		}
		f.changed()
	}
	f.pinned = true
	if f.tag == tag {
		return
	}
	f.tag = tag
	f.cls, f.clsReading = classify.New(nil).Stream(), false
	f.refreshClassifier(l.reading)
	f.changed()
}

// FeedVersion is the kubelet version the named feed's journal reported,
// "" when it has not (or there is no such feed).
func (l *Service) FeedVersion(name string) string {
	l.mu.Lock()
	f := l.feeds[name]
	l.mu.Unlock()
	if f == nil {
		return ""
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.version
}

// DropFeed forgets the named feed and deletes its stream (its stored lines): its
// browsers are disconnected, a relay still attached feeds nothing that is kept.
func (l *Service) DropFeed(name string) {
	l.mu.Lock()
	f := l.feeds[name]
	delete(l.feeds, name)
	l.shareHistory()
	l.mu.Unlock()
	if f != nil {
		<-f.started // then its consumer, if any, is there to stop
		f.gone.Store(true)
		f.stop()
		f.hub.Close()
	}
	l.purgeFeed(name)
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
		start := f.source == "none" && f.relays == 0 && f.real == 0 && !f.gone.Load()
		if start {
			f.source = "demo" // claimed: two browsers at once start one demo
		}
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
	if ctx.Err() != nil || f.source != "demo" {
		return true
	}
	f.demoStop()
	f.source, f.demoStop = "none", nil
	f.note = "No journal in this room yet: whoever holds the driver link finds the relay command under More ▾."
	f.changed()
	return true
}

// FeedFired is how many lines of each case a journal (never the demo)
// fired in the named feed, from its record (fired.go), nil when none did.
func (l *Service) FeedFired(name string) map[string]int {
	l.mu.Lock()
	f := l.feeds[name]
	l.mu.Unlock()
	if f == nil || !f.isStarted() || f.startErr != nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fired.cases) == 0 {
		return nil
	}
	out := make(map[string]int, len(f.fired.cases))
	for key, c := range f.fired.cases {
		out[key] = len(c.at)
	}
	return out
}

// FeedRelayed reports whether a relay feeds the named feed: one is
// attached to this replica, or a journal's line arrived (through any
// replica) within the last two minutes.
func (l *Service) FeedRelayed(name string) bool {
	l.mu.Lock()
	f := l.feeds[name]
	l.mu.Unlock()
	if f == nil || !f.isStarted() || f.startErr != nil {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.relays > 0 || (!f.lastReal.IsZero() && time.Since(f.lastReal) < 2*time.Minute)
}
