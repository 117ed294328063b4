package feeds

// What rooms ask of the live side (live.go), through these methods only
// (package rooms gets them as func values, rooms.Site): a room's feed reads
// the room's tag, the room shows the kubelet version its journal reports,
// and an expired room's feed goes away with it. They are the feed engine's
// own code: they take the feed's lock as live.go does.

import (
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
