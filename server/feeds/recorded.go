package feeds

// What the rest of the server reads of a feed's record of what fired
// (fired.go) line by line: the exercise's checks (server/labcheck) are
// derived from the recorded lines of a journal, never the demo's.

import (
	"cmp"
	"context"
	"slices"

	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/relay"
)

// RecordedLines gives fn, in order, the lines the named feed's record
// holds for case key after its line after (0: from the first) and before
// its line before (0: to the last), at most limit of them, read back from the stream and classified as the feed is
// (Case is the recorded one). It returns the sequence number of the last
// of them (after when none; a line the stream no longer holds is passed
// over) and whether more follow. A feed this replica does not hold has
// none.
func (s *Service) RecordedLines(ctx context.Context, name, key string, after, before uint64, limit int, fn func(seq uint64, line *classify.Line)) (last uint64, more bool, err error) {
	s.mu.Lock()
	f := s.feeds[name]
	s.mu.Unlock()
	if f == nil || !f.isStarted() || f.startErr != nil {
		return after, false, nil
	}
	f.fired.mu.Lock()
	var at []firedAt
	if c := f.fired.cases[key]; c != nil {
		bySeq := func(a firedAt, want uint64) int { return cmp.Compare(a.seq, want) }
		i, _ := slices.BinarySearchFunc(c.at, after+1, bySeq)
		end := len(c.at)
		if before > 0 {
			end, _ = slices.BinarySearchFunc(c.at, before, bySeq)
		}
		end = max(i, end)
		at = slices.Clone(c.at[i:min(end, i+limit)])
		more = i+limit < end
	}
	f.fired.mu.Unlock()
	f.mu.Lock()
	reading, version := s.reading(f.tag), f.kubelet.version
	f.mu.Unlock()
	if len(at) == 0 {
		return after, false, nil
	}
	cls := classify.New(reading).Stream()
	cls.SetVersion(version)
	err = f.readLines(ctx, at, func(seq uint64, in relay.Line) error {
		line := cls.ClassifyString(in.Raw)
		line.Case = key // as recorded (the record's classifier saw the lines in order)
		fn(seq, &line)
		return nil
	})
	if err != nil {
		return after, false, err
	}
	return at[len(at)-1].seq, more, nil
}
