package feeds

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/relay"
)

// TestTentativeLines: lines shown before their store acknowledged them
// (as they arrive, or as they are published) are
// recorded once stored, by whichever comes first, the PubAck or this
// replica's own consumer, and only once; and taken back when another
// replica's message holds their place: a browser that had them is told
// where they began, and gets that message's lines in their place, which
// the record of what fired then counts instead.
func TestTentativeLines(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l, _ := newLiveServer(t, Config{})
	f, err := l.feed("tentative")
	if err != nil {
		t.Fatal(err)
	}
	sub := f.hub.Subscribe(0)
	defer sub.Close()
	read := func(want int) (rewind uint64, raws []string) {
		t.Helper()
		for len(raws) < want {
			b, err := sub.Next(ctx)
			if err != nil {
				t.Fatalf("after %d entries: %v", len(raws), err)
			}
			rewind = max(rewind, b.Rewind)
			for _, e := range b.Entries {
				raws = append(raws, string(e.Data))
			}
		}
		return rewind, raws
	}
	batch := func(who string, first int) []relay.Line {
		return []relay.Line{
			{ID: who + "-" + string(rune('0'+first)), Raw: klogAdd(first, "default/"+who)},
			{ID: who + "-" + string(rune('1'+first)), Raw: klogAdd(first+1, "default/"+who)},
		}
	}
	consume := func(streamSeq, first uint64, lines []relay.Line, origin string) {
		m, _, _ := storedMsg(f.pub.subject, first, lines, false, nil, nil)
		m.Header.Set(hdrOrigin, origin)
		f.deliver(&streamMsg{it: new(storedIter), seq: streamSeq, header: m.Header, data: m.Data})
	}
	show := func(pub string, first uint64, lines []relay.Line) {
		t.Helper()
		f.mu.Lock()
		defer f.mu.Unlock()
		if !f.showTentativeLocked(pub, first, lines, false) {
			t.Fatalf("lines from #%d not shown", first)
		}
	}
	confirm := func(pub string, first, streamSeq uint64) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return f.confirmLocked(pub, first, streamSeq, false)
	}
	fired := func() int { return l.FeedFired("tentative")["config"] }

	// Shown, then stored: this replica's consumer has the message before
	// the PubAck is read. Recorded once.
	ours := batch("ours", 1)
	show("ours-1", 1, ours)
	if _, raws := read(2); !strings.Contains(raws[0], "default/ours") {
		t.Fatalf("shown: %q", raws)
	}
	if fired() != 0 {
		t.Fatal("a tentative line recorded as fired")
	}
	consume(1, 1, ours, "ours-1")
	if confirm("ours-1", 1, 1) {
		t.Error("the PubAck recorded lines the consumer recorded already")
	}
	if got := fired(); got != 2 {
		t.Fatalf("config fired %d times once stored, want 2", got)
	}

	// Shown, then another replica's message takes their place.
	mine, theirs := batch("mine", 3), batch("theirs", 3)
	show("ours-2", 3, mine)
	read(2)
	consume(2, 3, theirs, "another replica")
	rewind, raws := read(2)
	if rewind != 3 {
		t.Errorf("the browser was told of a rewind to #%d, want #3", rewind)
	}
	if !strings.Contains(raws[0], "default/theirs") || !strings.Contains(raws[1], "default/theirs") {
		t.Errorf("after the rewind the browser got %q, want the other replica's lines", raws)
	}
	if confirm("ours-2", 3, 2) {
		t.Error("lines taken back were recorded when their (refused) publish answered")
	}
	if got, next := fired(), f.hub.Next(); got != 4 || next != 5 {
		t.Errorf("config fired %d times, hub next #%d; want 4 and #5", got, next)
	}

	// Shown, then stored, the PubAck first: the consumer's copy is skipped.
	again := batch("again", 5)
	show("ours-3", 5, again)
	read(2)
	if !confirm("ours-3", 5, 3) {
		t.Fatal("the PubAck did not record the lines shown")
	}
	consume(3, 5, again, "ours-3")
	if got, next := fired(), f.hub.Next(); got != 6 || next != 7 {
		t.Errorf("config fired %d times, hub next #%d; want 6 and #7", got, next)
	}

	// Lines shown as they arrived, where this replica stored others (a
	// message published before they were shown, without them): the
	// stored ones take their place.
	arrived, stored := batch("arrived", 7), batch("stored", 7)
	f.mu.Lock()
	f.showArrivingLocked(arrived)
	f.mu.Unlock()
	if _, raws := read(2); !strings.Contains(raws[0], "default/arrived") {
		t.Fatalf("lines arriving not shown: %q", raws)
	}
	consume(4, 7, stored, "ours-4")
	rewind, raws = read(2)
	if rewind != 7 || !strings.Contains(raws[0], "default/stored") || !strings.Contains(raws[1], "default/stored") {
		t.Errorf("after this replica's other message was stored: rewind to #%d, then %q", rewind, raws)
	}
	if got, next := fired(), f.hub.Next(); got != 8 || next != 9 {
		t.Errorf("config fired %d times, hub next #%d; want 8 and #9", got, next)
	}
}
