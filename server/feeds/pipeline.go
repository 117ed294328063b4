package feeds

// The pipeline: a group of lines from ingest through the stages, in
// order. The publisher (publish.go) writes them to the feed's stream;
// the shown side (deliver.go) has them in the hub while JetStream stores
// them, records them from the PubAck, or takes them back if the store
// refuses them. Neither stage calls the other: this is where they meet.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/relay"
)

// store publishes the lines of lines not stored yet, and returns once
// JetStream has acknowledged them.
func (f *feed) store(lines []relay.Line, demo bool) error {
	_, err := f.storeCounted(lines, demo)
	return err
}

// storeCounted is store, and how many of lines it published (the others
// were stored already).
func (f *feed) storeCounted(lines []relay.Line, demo bool) (int, error) {
	ctx, cancel := context.WithTimeout(f.svc.ctx, publishTimeout)
	defer cancel()
	f.pub.mu.Lock()
	defer f.pub.mu.Unlock()
	stored := 0
	for attempt := 0; ; attempt++ {
		n, err := f.publishShown(ctx, lines, demo)
		stored += n
		if err == nil {
			return stored, nil
		}
		f.pub.tail.loaded = false // learn it anew from the stream
		if !broker.LostRace(err) || attempt >= 8 {
			return stored, err
		}
	}
}

// publishShown publishes the lines not stored yet, in messages of bounded
// size, each shown to browsers while JetStream stores it, and returns how
// many lines it published. f.pub.mu is held.
func (f *feed) publishShown(ctx context.Context, lines []relay.Line, demo bool) (stored int, err error) {
	p := &f.pub
	if !p.tail.loaded {
		if err := p.loadTail(ctx, f.stream); err != nil {
			return 0, err
		}
	}
	keep := p.unstored(lines)
	defer p.release(keep)
	for rest := keep; len(rest) > 0; {
		var chunk []relay.Line
		chunk, rest = cutChunk(rest)
		first := p.tail.next
		pub := f.svc.origin + "-" + strconv.FormatUint(f.svc.pubs.Add(1), 10)
		msg, opts := p.message(first, chunk, demo, pub)
		shown := f.publishing(pub, first, chunk, demo)
		ack, err := f.svc.b.Lane(f.name).PublishMsg(ctx, msg, opts...)
		if shown && (err != nil || ack.Duplicate) {
			f.refused(pub)
		}
		if err != nil {
			return stored, fmt.Errorf("feed %s: publish: %w", f.name, err)
		}
		if ack.Duplicate { // stored before, under the same id: the tail is elsewhere
			if err := p.loadTail(ctx, f.stream); err != nil {
				return stored, err
			}
			continue
		}
		p.published(chunk, ack.Sequence)
		stored += len(chunk)
		f.published(pub, first, ack.Sequence, chunk, demo)
	}
	return stored, nil
}
