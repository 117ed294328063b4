package feeds

// Feeds on JetStream. Each feed's lines live in a stream of their own
// (SYNCLOOP_FEED_<name>, one subject); a message is a group of a relay's
// lines (stored.go), with the feed's sequence number of its first line in
// a header. Sequence numbers are the feed's own, consecutive from 1, the
// same on every replica: a browser resumes with ?after=SEQ on any of them.
//
//	relay ──► ingest (any replica) ──► publish, expecting the stream's last
//	                                   message to be the one it knows; PubAck
//	                                   ──► this replica's hub; once on disk
//	                                   (broker.Synced) ──► the ack to the relay
//	stream ──► each replica's ordered consumer per feed ──► classify ──► hub ──► browsers
//
// A stream per feed, not one for all: each stream stores its messages on
// its own goroutine, so fifty feeds' writes go on
// side by side instead of queueing behind each other, and each feed has a
// byte limit of its own (a noisy feed cannot evict a quiet room's history).
//
// The replica that stored a message gives its lines to its own hub once
// JetStream acknowledged them, when the hub has every line before them:
// the common case, which spares a round trip through the consumer. The
// consumer then skips the message by its headers (Syncloop-Lines) without
// reading it; it delivers what other replicas stored, and the history.
//
// Resends are recognized two ways:
//   - a message's Nats-Msg-Id is its feed and the ids of its first and last
//     line: an exact resend (same boundaries) within dupWindow is dropped by
//     JetStream itself;
//   - ingest keeps, per feed, the highest number stored per id family (a
//     journald cursor's seqnum within its seqnum_id; a relay's "RUN-N"), so
//     a resend with other boundaries, or after any time, is filtered
//     before it is published. A replica that is not the last to have
//     published learns the feed's tail from the stream when its publish
//     is refused as out of date, and filters again.
//
// Publishing expects the stream's last sequence to be the one this
// replica knows: two replicas ingesting one feed at once take turns
// instead of giving two lines one sequence number.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
)

const (
	feedStreamPrefix  = "SYNCLOOP_FEED_"
	feedSubjectPrefix = "syncloop.feeds."
	// legacyStream held every feed, a subject each under
	// legacySubjectPrefix, before feeds had streams of their own; it is
	// moved into them once (migrate.go). (Two streams cannot share a
	// subject: the feeds' own have another prefix.)
	legacyStream        = "SYNCLOOP_FEEDS"
	legacySubjectPrefix = "syncloop.feed."
	// feedMsgsKept bounds each feed's messages (groups of at most
	// maxLinesPerMsg lines and msgBytes bytes each); bytes and age are the
	// bounds that matter.
	feedMsgsKept = 1 << 20
	// feedMaxAge is how long a line is kept at most.
	feedMaxAge = 7 * 24 * time.Hour
	// dupWindow is how long JetStream remembers a message id. A relay
	// resends what is unacknowledged as soon as it reconnects; resends
	// later than this are still recognized by the id check in ingest.
	dupWindow = 10 * time.Minute
	// DefaultFeedBytes is Config.FeedBytes's default: what JetStream keeps
	// of one feed (compressed: about 400,000 journald entries of a real
	// kubelet, or two million klog lines).
	DefaultFeedBytes = 64 << 20
	// demoFeedBytes and demoMaxAge bound a tag's demo feed, whose lines
	// are made up; demoStreamIdle after its last line, its stream goes.
	demoFeedBytes  = 4 << 20
	demoMaxAge     = time.Hour
	demoStreamIdle = time.Hour

	// maxLinesPerMsg and msgBytes bound a message, so a relay's batch of
	// any size fits a NATS message (1 MiB by default on a cluster).
	maxLinesPerMsg = 1000
	msgBytes       = 900 << 10
	publishTimeout = 10 * time.Second
	// followWithin is how long a feed's consumer may take to start while
	// JetStream elects a leader.
	followWithin = 30 * time.Second
	// idFamilies bounds the id families a feed remembers.
	idFamilies = 1024
)

// feedSubject is the feed's subject: '.' separates subject tokens, so it
// is written %2E (a feed name has no '%').
func feedSubject(name string) string {
	return feedSubjectPrefix + strings.ReplaceAll(name, ".", "%2E")
}

// feedStreamName is the feed's stream: a stream name has no '.' either.
func feedStreamName(name string) string {
	return feedStreamPrefix + strings.ReplaceAll(name, ".", "%2E")
}

// MaxStoredBytes is the most JetStream keeps of all feeds together: each
// feed's limit, times the feeds a server holds at once. (Feeds let go keep
// their lines, bounded by age.)
func MaxStoredBytes(feedBytes int64) int64 {
	if feedBytes <= 0 {
		feedBytes = DefaultFeedBytes
	}
	return MaxFeeds*feedBytes + maxTagDemos*min(feedBytes, demoFeedBytes)
}

// streamConfig is the named feed's stream.
func (s *Service) streamConfig(name string) jetstream.StreamConfig {
	limit := s.cfg.FeedBytes
	if limit <= 0 {
		limit = DefaultFeedBytes
	}
	age := feedMaxAge
	if isTagDemo(name) {
		limit, age = min(limit, demoFeedBytes), demoMaxAge
	}
	return jetstream.StreamConfig{
		Name:        feedStreamName(name),
		Description: "syncloop feed " + name + ": a message per group of a relay's lines",
		Subjects:    []string{feedSubject(name)},
		Storage:     broker.Storage(s.b.Memory),
		Replicas:    s.b.Replicas,
		MaxMsgs:     feedMsgsKept,
		MaxBytes:    limit,
		MaxAge:      age,
		Duplicates:  dupWindow,
		Discard:     jetstream.DiscardOld,
		MaxMsgSize:  int32(min(4<<20, limit)), // no larger than the stream may hold
	}
}

// follow creates the feed's stream (or updates its limits) and starts the
// replica's reading of it (stream.go): it replays the stored lines into
// the feed's hub, then the live tail. f.ready is closed once the lines
// stored before it started are in the hub.
func (s *Service) follow(f *feed) error {
	// A cluster that just started (or lost a node) may still be electing
	// the stream's leader: its first requests time out, later ones answer.
	var end uint64
	ctx, stop := context.WithCancel(s.ctx)
	sr := s.feedStream(f.name)
	sr.resumes = -1 // until the feed is let go
	sr.onResume = func(after uint64, err error) {
		s.log.Debug("feeds: feed consumer", "feed", f.name, "after", after, "err", err)
	}
	it := sr.reader(ctx, 0)
	err := broker.Retry(s.ctx, followWithin, func(actx context.Context) error {
		if f.stream == nil {
			stream, err := s.b.Lane(f.name).CreateOrUpdateStream(actx, s.streamConfig(f.name))
			if err != nil {
				return fmt.Errorf("feed %s: stream: %w", f.name, err)
			}
			f.stream = stream
		}
		f.pub.mu.Lock()
		err := f.pub.loadTail(actx, f.stream)
		end = f.pub.tail.streamSeq
		f.pub.mu.Unlock()
		if err != nil {
			return err
		}
		if err := it.open(actx); err != nil {
			return fmt.Errorf("feed %s: consumer: %w", f.name, err)
		}
		return nil
	})
	if err == nil && !s.enter() {
		err = errStorage
	}
	if err != nil {
		it.close()
		stop()
		return err
	}
	if end == 0 {
		f.markReady()
	}
	go func() { // owned: ends when the feed is let go (stop) or the service closes
		defer s.wg.Done()
		defer it.close()
		for it.next() {
			m := it.msg()
			f.deliver(m)
			if m.seq >= end {
				f.markReady()
			}
		}
		if err := it.Err(); err != nil {
			s.log.Warn("feeds: feed no longer followed", "feed", f.name, "err", err)
		}
	}()
	f.pub.mu.Lock()
	f.stopFollow = stop
	f.pub.mu.Unlock()
	return nil
}

// hasStored reports whether the named feed has lines stored.
func (s *Service) hasStored(name string) (bool, error) {
	ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
	defer cancel()
	st, err := s.b.Lane(name).Stream(ctx, feedStreamName(name))
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return st.CachedInfo().State.Msgs > 0, nil
}

// sweepDemoStreams deletes the streams of the tags' demos that no replica
// has written to for demoStreamIdle: a page at a tag makes one, and there
// are hundreds of tags. (A replica runs a tag's demo only while a browser
// watches it, writing a line every few hundred milliseconds, and lets the
// feed go demoIdle after the last browser: a stream idle this long is no
// replica's.) A relay's feed keeps its stream, a room's goes with the room.
func (s *Service) sweepDemoStreams(ctx context.Context) {
	streams := s.b.JS.ListStreams(ctx, jetstream.WithStreamListSubject(feedSubjectPrefix+"*"))
	var idle []string
	for info := range streams.Info() {
		name := strings.ReplaceAll(strings.TrimPrefix(info.Config.Name, feedStreamPrefix), "%2E", ".")
		last := info.State.LastTime
		if info.Created.After(last) {
			last = info.Created
		}
		if isTagDemo(name) && time.Since(last) > s.demoStreamIdle {
			idle = append(idle, name)
		}
	}
	if err := streams.Err(); err != nil && ctx.Err() == nil {
		s.log.Warn("feeds: listing the feeds' streams", "err", err)
	}
	for _, name := range idle {
		s.mu.Lock()
		_, held := s.feeds[name]
		s.mu.Unlock()
		if !held {
			s.purgeFeed(name)
			s.log.Info("feeds: an idle tag demo's stream deleted", "feed", name)
		}
	}
}

// sweepEvery is how often sweepDemoStreams runs.
const sweepEvery = 10 * time.Minute

// sweep runs sweepDemoStreams until the service closes.
func (s *Service) sweep() {
	if !s.enter() {
		return
	}
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(sweepEvery)
		defer t.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
			s.sweepDemoStreams(ctx)
			cancel()
		}
	}()
}

// purgeFeed deletes the feed's stream and its stored lines.
func (s *Service) purgeFeed(name string) {
	ctx, cancel := context.WithTimeout(s.ctx, publishTimeout)
	defer cancel()
	err := s.b.Lane(name).DeleteStream(ctx, feedStreamName(name))
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) && s.ctx.Err() == nil {
		s.log.Warn("feeds: feed not deleted", "feed", name, "err", err)
	}
}
