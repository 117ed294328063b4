package feeds

// One stored line, looked up by its feed sequence number: what a pin
// names (server/annotations, pins.go). The line comes from the stream,
// never from a browser; its case from the record of what fired, so a
// pinned case is always among the feed's fired cases.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/relay"
)

// Why Line finds no line that counts.
var (
	// ErrNoLine: the feed's stream does not hold the line: never stored
	// (a made-up sequence, or one not stored yet), or evicted since.
	ErrNoLine = errors.New("not a line of the feed's journal (never stored, or evicted since)")
	// ErrDemoLine: the line is the demo's, a simulated kubelet.
	ErrDemoLine = errors.New("a demo line (a simulated kubelet): demo lines never count as fired")
	// ErrNoCase: the line is the journal's but fired no case of the loop.
	ErrNoCase = errors.New("a line that matches no case of the loop: it proves no handler ran")
)

// StoredLine is one line of a feed's journal as its stream holds it.
type StoredLine struct {
	Feed string
	Seq  uint64 // the feed's sequence number: "line N of the journal"
	// Raw is the line as the relay sent it and the stream stores it
	// (a journald entry whole), byte for byte.
	Raw string
	// Case is the case the line fired, as the feed's record has it.
	Case   string
	Time   time.Time // zero when the line has none
	Cursor string    // journald's __CURSOR, "" when the line has none
	Pods   []string
	Node   string // journald's _HOSTNAME, "" when the line has none
	// Text is the kubelet's own line (without a journald wrapper).
	Text string
	// Kubelet is the kubelet version the feed's journal reported, and
	// KubeletFrom how it was learned ("start-up line", "log sites").
	Kubelet, KubeletFrom string
}

// Line looks up the named feed's line seq in its stream. It returns
// ErrNoLine, ErrDemoLine or ErrNoCase (wrapped) for a line that does not
// count, another error when the stream cannot be read now.
func (s *Service) Line(ctx context.Context, name string, seq uint64) (StoredLine, error) {
	f, err := s.existingFeed(name)
	switch {
	case err != nil:
		return StoredLine{}, err
	case f == nil || seq == 0:
		return StoredLine{}, fmt.Errorf("line %d of feed %s: %w", seq, name, ErrNoLine)
	}
	select { // the record is whole once the stored lines are delivered
	case <-f.ready:
	case <-ctx.Done():
		return StoredLine{}, ctx.Err()
	case <-time.After(followWithin):
		return StoredLine{}, fmt.Errorf("feed %s: its stored lines are still being read; retry later", name)
	}
	f.fired.mu.Lock()
	key, at, found := "", firedAt{}, false
	for k, c := range f.fired.cases {
		if i, ok := slices.BinarySearchFunc(c.at, seq, func(a firedAt, want uint64) int { return cmp.Compare(a.seq, want) }); ok {
			key, at, found = k, c.at[i], true
			break
		}
	}
	f.fired.mu.Unlock()
	f.mu.Lock()
	reading, version, from := s.reading(f.tag), f.kubelet.version, f.kubelet.from
	f.mu.Unlock()
	if !found {
		return StoredLine{}, f.whyNotFired(ctx, seq)
	}
	var raw string
	got := false
	if err := f.readLines(ctx, []firedAt{at}, func(_ uint64, in relay.Line) error {
		raw, got = in.Raw, true
		return nil
	}); err != nil {
		return StoredLine{}, err
	}
	if !got {
		return StoredLine{}, fmt.Errorf("line %d of feed %s: %w", seq, name, ErrNoLine)
	}
	cls := classify.New(reading).Stream()
	cls.SetVersion(version)
	line := cls.ClassifyString(raw)
	return StoredLine{Feed: f.name, Seq: seq, Raw: raw, Case: key, Time: line.Time, Cursor: line.Cursor,
		Pods: line.Pods, Node: line.Host, Text: line.Display(), Kubelet: version, KubeletFrom: from}, nil
}

// whyNotFired says why the feed's line seq is not in its record of what
// fired: not stored, the demo's, or it matched no case. It finds the
// stream message holding the line by bisection: stream sequence and feed
// sequence grow together.
func (f *feed) whyNotFired(ctx context.Context, seq uint64) error {
	var info *jetstream.StreamInfo
	err := broker.Retry(ctx, followWithin, func(ctx context.Context) error {
		var err error
		info, err = f.stream.Info(ctx)
		return err
	})
	if err != nil {
		return err
	}
	lo, hi := info.State.FirstSeq, info.State.LastSeq
	for lo <= hi && info.State.Msgs > 0 {
		mid := lo + (hi-lo)/2
		m, err := f.stream.GetMsg(ctx, mid)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			lo = mid + 1 // evicted meanwhile
			continue
		}
		if err != nil {
			return err
		}
		sh, err := readHead(m.Header)
		if err != nil {
			return err
		}
		n := sh.lines
		if n < 0 {
			var unz []byte
			lines, err := decodeStored(m.Header, m.Data, nil, &unz)
			if err != nil {
				return err
			}
			n = len(lines)
		}
		switch {
		case seq < sh.first:
			hi = mid - 1
		case seq >= sh.first+uint64(n):
			lo = mid + 1
		case sh.demo:
			return fmt.Errorf("line %d of feed %s: %w", seq, f.name, ErrDemoLine)
		default:
			return fmt.Errorf("line %d of feed %s: %w", seq, f.name, ErrNoCase)
		}
	}
	return fmt.Errorf("line %d of feed %s: %w", seq, f.name, ErrNoLine)
}
