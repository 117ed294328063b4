package feeds

// Moving an older version's feeds into their own streams. Before feeds had
// a stream each, every feed was a subject of one stream (legacyStream). A
// server that finds that stream copies each subject's messages, headers
// and all, into the feed's own stream, in order, then deletes it: the
// feeds keep their lines and their sequence numbers, so a browser's
// ?after= and a relay's resend mean what they meant.
//
// The copy can be interrupted (a crash) or run by two replicas at once: a
// message is copied only when its first line is past the feed stream's
// last, and each copy expects the stream's last sequence it knows, so a
// second copier skips what the first has done instead of doubling it.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
)

// migrateLegacy moves the feeds of legacyStream, if there is one, into
// streams of their own, and deletes it.
func (s *Service) migrateLegacy(ctx context.Context) error {
	var old jetstream.Stream
	err := broker.Retry(ctx, time.Minute, func(ctx context.Context) error {
		st, err := s.b.JS.Stream(ctx, legacyStream)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil
		}
		old = st
		return err
	})
	if err != nil {
		return fmt.Errorf("feeds: looking for an older version's stream %s: %w", legacyStream, err)
	}
	if old == nil {
		return nil
	}
	info, err := old.Info(ctx, jetstream.WithSubjectFilter(legacySubjectPrefix+">"))
	if err != nil {
		return fmt.Errorf("feeds: the older version's stream %s: %w", legacyStream, err)
	}
	moved := 0
	for subject, n := range info.State.Subjects {
		name := strings.ReplaceAll(strings.TrimPrefix(subject, legacySubjectPrefix), "%2E", ".")
		if !feedNameRE.MatchString(name) {
			s.log.Warn("feeds: an older version's subject that names no feed is left behind", "subject", subject)
			continue
		}
		if err := s.migrateFeed(ctx, old, name); err != nil {
			if errors.Is(err, jetstream.ErrStreamNotFound) {
				return nil // another replica finished the move and deleted it
			}
			return fmt.Errorf("feeds: moving feed %s out of the older version's stream %s (kept; start again to resume): %w", name, legacyStream, err)
		}
		moved++
		s.log.Info("feeds: feed moved into its own stream", "feed", name, "messages", n)
	}
	if err := s.b.JS.DeleteStream(ctx, legacyStream); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("feeds: deleting the older version's stream %s: %w", legacyStream, err)
	}
	s.log.Info("feeds: an older version's feeds have streams of their own now", "feeds", moved, "from", legacyStream)
	return nil
}

// migrateFeed copies one feed's messages from old into the feed's stream.
func (s *Service) migrateFeed(ctx context.Context, old jetstream.Stream, name string) error {
	p := &publisher{name: name, subject: feedSubject(name)}
	stream, err := s.b.JS.CreateOrUpdateStream(ctx, s.streamConfig(name))
	if err != nil {
		return err
	}
	from := legacySubjectPrefix + strings.TrimPrefix(p.subject, feedSubjectPrefix)
	last, err := old.GetLastMsgForSubject(ctx, from)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil // expired since the stream's info was read
	} else if err != nil {
		return err
	}
	if err := p.loadTail(ctx, stream); err != nil {
		return err
	}
	it := streamRead{js: s.b.JS, stream: legacyStream, filter: from}.reader(ctx, 0)
	defer it.close()
	for it.next() {
		m := it.msg()
		if sh, err := m.head(); err == nil && sh.first >= p.tail.next {
			lines := sh.lines
			if lines < 0 {
				decoded, err := m.lines()
				if err != nil {
					return fmt.Errorf("message %d: %w", m.seq, err)
				}
				lines = len(decoded)
			}
			msg := &nats.Msg{Subject: p.subject, Header: m.header, Data: m.data}
			ack, err := s.b.JS.PublishMsg(ctx, msg, jetstream.WithExpectLastSequencePerSubject(p.tail.streamSeq))
			switch {
			case broker.LostRace(err): // another replica is copying it too: go on after what it copied
				if err := p.loadTail(ctx, stream); err != nil {
					return err
				}
			case err != nil:
				return err
			default:
				p.tail.streamSeq, p.tail.next = ack.Sequence, sh.first+uint64(lines)
			}
		}
		if m.seq >= last.Sequence {
			return nil
		}
	}
	if err := it.Err(); err != nil {
		return err
	}
	return ctx.Err()
}
