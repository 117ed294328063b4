package feeds

// The publisher: this replica's writer of a feed's stream. It knows the
// stream's tail (its last message, the ids stored), leaves out what is
// stored already, cuts lines into messages of bounded size and publishes
// each expecting the tail it knows. It knows nothing of browsers: the
// pipeline (pipeline.go) shows and records what it publishes.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/relay"
)

// publisher is a feed's writer. Its mu serializes this replica's
// publishing to the feed: every method but storedLines expects it held.
type publisher struct {
	mu            sync.Mutex
	name, subject string
	tail          feedTail
	kept          []relay.Line // scratch: the lines not stored yet
	msgBuf        []byte       // scratch: a stored message's data (compressed)
	recBuf        []byte       // scratch: its records before compression
}

// feedTail is what ingest knows of a feed's last stored message.
type feedTail struct {
	loaded    bool
	streamSeq uint64            // the subject's last message; 0: none
	next      uint64            // the feed's sequence number of the next line
	lastID    string            // the last stored line's id
	high      map[string]uint64 // per id family, the highest number stored
}

// idOrder splits an id into its family and its number within it: a
// journald cursor's seqnum_id and seqnum (s=…;i=HEX;…), or a relay's
// "RUN-N" (any prefix and trailing decimal number). ok is false for an id
// of neither shape.
func idOrder(id string) (family string, n uint64, ok bool) {
	if strings.HasPrefix(id, "s=") {
		var s, i string
		for f := range strings.SplitSeq(id, ";") {
			if v, found := strings.CutPrefix(f, "s="); found {
				s = v
			} else if v, found := strings.CutPrefix(f, "i="); found {
				i = v
			}
		}
		if s != "" && i != "" {
			if n, err := strconv.ParseUint(i, 16, 64); err == nil {
				return "s=" + s, n, true
			}
		}
		return "", 0, false
	}
	i := len(id)
	for i > 0 && id[i-1] >= '0' && id[i-1] <= '9' {
		i--
	}
	if i == len(id) || len(id)-i > 18 {
		return "", 0, false
	}
	n, _ = strconv.ParseUint(id[i:], 10, 64)
	return id[:i], n, true
}

// loadTail reads the feed's last message from its stream.
func (p *publisher) loadTail(ctx context.Context, stream jetstream.Stream) error {
	t := feedTail{loaded: true, next: 1, high: make(map[string]uint64)}
	m, err := stream.GetLastMsgForSubject(ctx, p.subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
	case err != nil:
		return fmt.Errorf("feed %s: reading its last message: %w", p.name, err)
	default:
		sh, err := readHead(m.Header)
		if err != nil {
			return fmt.Errorf("feed %s: message %d: %w", p.name, m.Sequence, err)
		}
		lines, err := decodeStored(m.Header, m.Data, nil, new([]byte))
		if err != nil {
			return fmt.Errorf("feed %s: message %d: %w", p.name, m.Sequence, err)
		}
		t.streamSeq, t.next = m.Sequence, sh.first+uint64(len(lines))
		for _, in := range lines {
			t.note(in.ID)
		}
	}
	p.tail = t
	return nil
}

// note records id as stored.
func (t *feedTail) note(id string) {
	if id == "" {
		return
	}
	t.lastID = id
	if fam, n, ok := idOrder(id); ok {
		if t.high == nil {
			t.high = make(map[string]uint64)
		}
		if len(t.high) >= idFamilies {
			clear(t.high)
		}
		t.high[fam] = max(t.high[fam], n)
	}
}

// clone is a copy of t that notes ids on its own.
func (t *feedTail) clone() feedTail {
	c := *t
	c.high = maps.Clone(t.high)
	return c
}

// stored reports whether the line with id is known to be stored.
func (t *feedTail) stored(id string) bool {
	if id == "" {
		return false
	}
	if id == t.lastID {
		return true
	}
	fam, n, ok := idOrder(id)
	if !ok {
		return false
	}
	high, has := t.high[fam]
	return has && n <= high
}

// unstored is the lines of lines not known to be stored, each id once,
// in p's scratch space (give it back with release).
func (p *publisher) unstored(lines []relay.Line) []relay.Line {
	keep := p.kept[:0]
	seen := make(map[string]struct{})
	for _, in := range lines {
		if p.tail.stored(in.ID) {
			continue
		}
		if in.ID != "" {
			if _, dup := seen[in.ID]; dup {
				continue
			}
			seen[in.ID] = struct{}{}
		}
		keep = append(keep, in)
	}
	return keep
}

// release gives back the scratch space unstored returned.
func (p *publisher) release(keep []relay.Line) {
	clear(keep)
	p.kept = keep[:0]
	if cap(p.msgBuf) > 2*msgBytes || cap(p.recBuf) > 2*msgBytes {
		p.msgBuf, p.recBuf = nil, nil
	}
}

// cutChunk is the first message's worth of lines (at most maxLinesPerMsg
// lines and about msgBytes, at least one line), and the rest.
func cutChunk(lines []relay.Line) (chunk, rest []relay.Line) {
	n, size := 0, 0
	for n < len(lines) && n < maxLinesPerMsg {
		size += len(lines[n].Raw) + len(lines[n].ID) + 32
		if size > msgBytes && n > 0 {
			break
		}
		n++
	}
	return lines[:n], lines[n:]
}

// message is the stored message of chunk, whose first line is the feed's
// line first, marked with the Syncloop-Origin pub, and what publishing
// it expects: the tail p knows, and an id JetStream drops a resend by.
func (p *publisher) message(first uint64, chunk []relay.Line, demo bool, pub string) (*nats.Msg, []jetstream.PublishOpt) {
	var msg *nats.Msg
	msg, p.msgBuf, p.recBuf = storedMsg(p.subject, first, chunk, demo, p.msgBuf, p.recBuf)
	msg.Header.Set(hdrOrigin, pub)
	opts := []jetstream.PublishOpt{jetstream.WithExpectLastSequencePerSubject(p.tail.streamSeq)}
	if first, last := chunk[0].ID, chunk[len(chunk)-1].ID; first != "" && last != "" {
		opts = append(opts, jetstream.WithMsgID(p.name+"\x00"+first+"\x00"+last+"\x00"+strconv.Itoa(len(chunk))))
	}
	return msg, opts
}

// published records chunk stored as stream message seq.
func (p *publisher) published(chunk []relay.Line, seq uint64) {
	p.tail.streamSeq = seq
	p.tail.next += uint64(len(chunk))
	for _, in := range chunk {
		p.tail.note(in.ID)
	}
}

// storedLines is how many lines the feed's stream holds, as p knows;
// it takes p.mu.
func (p *publisher) storedLines() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.tail.next - 1
}
