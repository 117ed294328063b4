package hub

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func data(seq uint64) []byte { return []byte(strconv.FormatUint(seq, 10)) }

// collect reads from s until it has n entries' worth (entries plus skipped)
// or the deadline passes.
func collect(t *testing.T, s *Subscription, n int) (seqs []uint64, skipped []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	got := 0
	for got < n {
		b, err := s.Next(ctx)
		if err != nil {
			t.Fatalf("Next after %d of %d: %v", got, n, err)
		}
		for _, e := range b.Entries {
			if string(e.Data) != strconv.FormatUint(e.Seq, 10) {
				t.Fatalf("entry %d carries %q", e.Seq, e.Data)
			}
			seqs = append(seqs, e.Seq)
		}
		got += len(b.Entries) + b.Skipped
		if b.Skipped > 0 {
			skipped = append(skipped, b.Skipped)
		}
	}
	return seqs, skipped
}

func TestRingBounded(t *testing.T) {
	tests := []struct {
		ring, publish int
		after         uint64
		want          []uint64
	}{
		{ring: 3, publish: 0, want: []uint64{}},
		{ring: 3, publish: 2, want: []uint64{1, 2}},
		{ring: 3, publish: 3, want: []uint64{1, 2, 3}},
		{ring: 3, publish: 10, want: []uint64{8, 9, 10}},
		{ring: 3, publish: 10, after: 8, want: []uint64{9, 10}},
		{ring: 3, publish: 10, after: 10, want: []uint64{}},
		{ring: 3, publish: 10, after: 99, want: []uint64{}},
		{ring: 1, publish: 5, want: []uint64{5}},
	}
	for _, tt := range tests {
		h := New(tt.ring)
		for i := 0; i < tt.publish; i++ {
			h.Publish(data)
		}
		var got []uint64
		sub := h.Subscribe(tt.after)
		b, _, _ := sub.take() // what a subscriber resuming after tt.after gets first
		for _, e := range b.Entries {
			got = append(got, e.Seq)
		}
		sub.Close()
		if len(got) != len(tt.want) {
			t.Errorf("ring %d, %d published, after %d: got %v, want %v", tt.ring, tt.publish, tt.after, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("ring %d, %d published, after %d: got %v, want %v", tt.ring, tt.publish, tt.after, got, tt.want)
				break
			}
		}
		if st := h.Stats(); st.Stored > tt.ring || st.Next != uint64(tt.publish)+1 {
			t.Errorf("stats %+v for ring %d, %d published", st, tt.ring, tt.publish)
		}
	}
}

// TestLateJoinerNoGapNoDup publishes from one goroutine while subscribers
// join at random moments and read as they can; each must see a run of
// sequence numbers from the ring's oldest (at its join) to the last, in
// which every gap is one it was told of as skipped.
func TestLateJoinerNoGapNoDup(t *testing.T) {
	const total, ring = 20000, 500
	h := New(ring)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 1; i <= total; i++ {
		h.Publish(data)
		if i%400 != 0 {
			continue
		}
		s := h.Subscribe(0)
		joined := uint64(i)
		wg.Go(func() {
			defer s.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var want, got, skipped uint64
			for want == 0 || want <= total {
				b, err := s.Next(ctx)
				if err != nil {
					errs <- fmt.Errorf("joined at %d: %v after %d entries", joined, err, got)
					return
				}
				if b.Missed != 0 {
					errs <- fmt.Errorf("joined at %d: missed %d", joined, b.Missed)
					return
				}
				if want == 0 && len(b.Entries) > 0 {
					// The history starts at the ring's oldest at the join,
					// unless the ring moved on before the first read: then
					// there is a gap first.
					want = b.Entries[0].Seq - uint64(b.Skipped)
					if first := max(joined, ring) - ring + 1; want != first {
						errs <- fmt.Errorf("joined at %d: history starts at %d, want %d", joined, want, first)
						return
					}
				}
				want += uint64(b.Skipped)
				skipped += uint64(b.Skipped)
				for _, e := range b.Entries {
					if e.Seq != want || string(e.Data) != strconv.FormatUint(e.Seq, 10) {
						errs <- fmt.Errorf("joined at %d: entry %d where %d was due", joined, e.Seq, want)
						return
					}
					want++
					got++
				}
			}
			if got+skipped != total-(max(joined, ring)-ring) {
				errs <- fmt.Errorf("joined at %d: %d entries + %d skipped", joined, got, skipped)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSlowSubscriberSkipsAndDoesNotBlock(t *testing.T) {
	h := New(10)
	slow := h.Subscribe(0)
	fast := h.Subscribe(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var fastSeqs []uint64
	for i := 1; i <= 50; i++ {
		h.Publish(data) // must never block, whatever slow does
		b, err := fast.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Skipped != 0 {
			t.Fatalf("fast subscriber skipped %d", b.Skipped)
		}
		for _, e := range b.Entries {
			fastSeqs = append(fastSeqs, e.Seq)
		}
	}
	if len(fastSeqs) != 50 || fastSeqs[49] != 50 {
		t.Fatalf("fast subscriber got %v", fastSeqs)
	}
	// slow finds the ring moved past its first 40: it is told, then gets
	// the 10 the ring holds, then entries published later.
	b, err := slow.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Entries) != 10 || b.Entries[0].Seq != 41 || b.Entries[9].Seq != 50 || b.Skipped != 40 {
		t.Fatalf("slow subscriber: %d entries (%v…), skipped %d; want 40 skipped then 41..50", len(b.Entries), b.Entries[:1], b.Skipped)
	}
	h.Publish(data)
	b, err = slow.Next(ctx)
	if err != nil || len(b.Entries) != 1 || b.Entries[0].Seq != 51 || b.Skipped != 0 {
		t.Fatalf("after the gap: %+v, %v; want entry 51 alone", b, err)
	}
	if st := h.Stats(); st.Dropped != 40 || st.Subscribers != 2 || st.Lagging != 0 {
		t.Fatalf("stats %+v; want 40 dropped, 2 subscribers", st)
	}
}

func TestHistoryLargerThanBatch(t *testing.T) {
	h := New(3 * MaxBatch)
	for range 1000 {
		h.Publish(data)
	}
	s := h.Subscribe(0)
	h.Publish(data) // live entry right after a big history must not be dropped
	seqs, skipped := collect(t, s, 1001)
	if len(skipped) != 0 || len(seqs) != 1001 || seqs[0] != 1 || seqs[1000] != 1001 {
		t.Fatalf("got %d entries from %d, skipped %v", len(seqs), seqs[0], skipped)
	}
}

func TestCloseAndPoke(t *testing.T) {
	h := New(10)
	s := h.Subscribe(0)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.Poke()
	if b, err := s.Next(ctx); err != nil || len(b.Entries) != 0 || b.Skipped != 0 {
		t.Fatalf("after Poke: %+v, %v; want an empty batch", b, err)
	}
	h.Publish(data)
	h.Close()
	if b, err := s.Next(ctx); err != nil || len(b.Entries) != 1 {
		t.Fatalf("queued before Close: %+v, %v; want one entry", b, err)
	}
	if _, err := s.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
	if seq := h.Publish(data); seq != 0 {
		t.Fatalf("Publish after Close = %d, want 0", seq)
	}
	s.Close() // idempotent
	late := h.Subscribe(0)
	if b, err := late.Next(ctx); err != nil || len(b.Entries) != 1 {
		t.Fatalf("subscribe after Close: %+v, %v; want the history", b, err)
	}
	if _, err := late.Next(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("subscribe after Close: %v, want ErrClosed", err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel2()
	h2 := New(1)
	if _, err := h2.Subscribe(0).Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("idle Next: %v, want deadline", err)
	}
}

func TestPublishN(t *testing.T) {
	h := New(3)
	s := h.Subscribe(0)
	if first := h.PublishN(4, func(i int, seq uint64) []byte {
		if seq != uint64(i)+1 {
			t.Errorf("entry %d got seq %d", i, seq)
		}
		return data(seq)
	}); first != 1 {
		t.Fatalf("first = %d", first)
	}
	seqs, skipped := collect(t, s, 4)
	if len(seqs) != 3 || seqs[0] != 2 || seqs[2] != 4 || len(skipped) != 1 || skipped[0] != 1 {
		t.Fatalf("ring of 3 after 4 at once: %v, skipped %v", seqs, skipped)
	}
	if h.PublishN(0, nil) != 0 {
		t.Fatal("PublishN(0) published")
	}
}

func TestResumeTooFarBack(t *testing.T) {
	h := New(3)
	for range 10 {
		h.Publish(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tt := range []struct {
		after        uint64
		missed, from int
	}{{after: 2, missed: 5, from: 8}, {after: 7, missed: 0, from: 8}, {after: 9, missed: 0, from: 10}} {
		b, err := h.Subscribe(tt.after).Next(ctx)
		if err != nil || b.Missed != tt.missed || len(b.Entries) == 0 || b.Entries[0].Seq != uint64(tt.from) {
			t.Errorf("resume after %d: missed %d from %v (%v); want missed %d from %d", tt.after, b.Missed, b.Entries, err, tt.missed, tt.from)
		}
	}
}

func TestSetNext(t *testing.T) {
	h := New(10)
	h.Publish(data)
	caughtUp, behind := h.Subscribe(0), h.Subscribe(0)
	collect(t, caughtUp, 1)
	h.SetNext(100)
	h.SetNext(50) // never backwards
	if seq := h.Publish(data); seq != 100 {
		t.Fatalf("first seq after SetNext(100) = %d", seq)
	}
	// The numbers skipped by SetNext are no entries: nobody is told of a gap.
	for name, s := range map[string]*Subscription{"caught up": caughtUp, "behind": behind} {
		n := 1
		if s == behind {
			n = 2 // entries 1 and 100
		}
		seqs, skipped := collect(t, s, n)
		if len(skipped) != 0 || seqs[len(seqs)-1] != 100 {
			t.Errorf("%s subscriber: %v, skipped %v", name, seqs, skipped)
		}
	}
}

// A slow reader costs the hub nothing per entry: memory is the ring's,
// whatever the number of subscribers or how far behind they are.
func TestSubscribersHoldNoCopies(t *testing.T) {
	h := New(100)
	for range 50 {
		h.Subscribe(0)
	}
	for range 10000 {
		h.Publish(data)
	}
	if st := h.Stats(); st.Stored != 100 || st.Subscribers != 50 || st.Lagging != 50 || st.Dropped != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Leaving, a lagging subscriber counts what it missed as dropped.
	for s := range h.subs {
		s.Close()
		break
	}
	if st := h.Stats(); st.Dropped != 10000-100 || st.Subscribers != 49 {
		t.Fatalf("after one left: %+v", st)
	}
}

func BenchmarkPublish200(b *testing.B) {
	h := New(5000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 200 {
		s := h.Subscribe(0)
		wg.Go(func() {
			for {
				if _, err := s.Next(ctx); err != nil {
					return
				}
			}
		})
	}
	payload := []byte(`{"seq":1,"line":{}}`)
	b.ResetTimer()
	for range b.N {
		h.Publish(func(uint64) []byte { return payload })
	}
	b.StopTimer()
	cancel()
	wg.Wait()
}

// The queue a batch hands out is reused by the next call to Next but one:
// until then, what the batch holds stays as it was, while the publisher
// goes on filling the other queue (run with -race).
func TestBatchStableUntilNextCall(t *testing.T) {
	h := New(100)
	sub := h.Subscribe(0)
	defer sub.Close()
	ctx := context.Background()
	var seq uint64
	for round := range 50 {
		n := 1 + round%7
		for range n {
			h.Publish(func(s uint64) []byte { return []byte{byte(s)} })
		}
		b, err := sub.Next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { // a publisher while the batch is read
			defer close(done)
			for range 3 {
				h.Publish(func(s uint64) []byte { return []byte{byte(s)} })
			}
		}()
		for _, e := range b.Entries {
			seq++
			if e.Seq != seq || e.Data[0] != byte(seq) {
				t.Fatalf("round %d: entry %d = %d %v", round, seq, e.Seq, e.Data)
			}
		}
		<-done
		b, err = sub.Next(ctx)
		if err != nil || len(b.Entries) != 3 || b.Entries[0].Seq != seq+1 {
			t.Fatalf("round %d: the publisher's 3 entries: %+v %v", round, b, err)
		}
		seq += 3
	}
}

func TestByteLimit(t *testing.T) {
	h := New(100)
	sub := h.Subscribe(0)
	defer sub.Close()
	big := func(n int) func(uint64) []byte { return func(uint64) []byte { return make([]byte, n) } }
	for range 10 {
		h.Publish(big(100))
	}
	if st := h.Stats(); st.Stored != 10 || st.Bytes != 1000 {
		t.Fatalf("no limit: %+v", st)
	}
	h.SetByteLimit(450) // keeps the newest 4
	if st := h.Stats(); st.Stored != 4 || st.Bytes != 400 {
		t.Fatalf("limit 450: %+v", st)
	}
	h.Publish(big(1000)) // alone over the limit: kept, alone
	if st := h.Stats(); st.Stored != 1 || st.Bytes != 1000 {
		t.Fatalf("an entry over the limit: %+v", st)
	}
	h.Publish(big(10))
	if st := h.Stats(); st.Stored != 1 || st.Bytes != 10 {
		t.Fatalf("after it: %+v", st)
	}
	// The subscriber, which read nothing, is told of the 11 it missed.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if b, err := sub.Next(ctx); err != nil || b.Skipped != 11 || len(b.Entries) != 1 || b.Entries[0].Seq != 12 {
		t.Fatalf("subscriber: %+v, %v", b, err)
	}
	h.SetByteLimit(0)
	for range 150 {
		h.Publish(big(100))
	}
	if st := h.Stats(); st.Stored != 100 || st.Bytes != 100*100 {
		t.Fatalf("limit removed: %+v", st)
	}
}

// TestWaitNext: WaitNext(n) returns once entry n is published or SetNext
// moves past it, and false when its context ends or the hub
// closes first; a waiter is woken, not left to poll.
func TestWaitNext(t *testing.T) {
	// In a bubble: the 50 ms during which a waiter must not return pass on
	// synctest's clock once everything else waits, and synctest.Wait says
	// when a waiter waits.
	synctest.Test(t, func(t *testing.T) {
		h := New(8)
		h.Publish(data) // 1
		if !h.WaitNext(t.Context(), 0) {
			t.Fatal("WaitNext(0) with entry 1 published: false")
		}

		woke := make(chan bool, 1)
		go func() { woke <- h.WaitNext(context.Background(), 3) }()
		select {
		case <-woke:
			t.Fatal("WaitNext(3) returned with only entry 1 published")
		case <-time.After(50 * time.Millisecond):
		}
		h.Publish(data) // 2: not yet
		select {
		case <-woke:
			t.Fatal("WaitNext(3) returned at entry 2")
		case <-time.After(50 * time.Millisecond):
		}
		start := time.Now()
		h.Publish(data) // 3
		select {
		case ok := <-woke:
			if !ok {
				t.Fatal("WaitNext(3) false after entry 3")
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("woken %v after the entry", d)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("WaitNext(3) not woken by entry 3")
		}

		go func() { woke <- h.WaitNext(context.Background(), 10) }()
		synctest.Wait() // WaitNext(10) waits
		h.SetNext(20)
		if ok := <-woke; !ok {
			t.Fatal("WaitNext(10) false after SetNext(20)")
		}

		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
		defer cancel()
		if h.WaitNext(ctx, 100) {
			t.Fatal("WaitNext(100) true when its context ended")
		}
		go func() { woke <- h.WaitNext(context.Background(), 100) }()
		synctest.Wait() // WaitNext(100) waits
		h.Close()
		if ok := <-woke; ok {
			t.Fatal("WaitNext(100) true after Close")
		}

	})
}

// TestConcurrentSubscribers: subscribers read side by side (the read lock)
// while entries are published, the hub is poked and its stats are asked:
// each one gets every entry once, in order, or is told exactly how many
// it skipped, and the skips add up to the hub's Dropped. Run with -race.
func TestConcurrentSubscribers(t *testing.T) {
	const subs, total = 16, 20000
	h := New(256)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		got, skipped int
		err          error
	}
	results := make([]result, subs)
	var wg sync.WaitGroup
	for i := range subs {
		s := h.Subscribe(0)
		wg.Go(func() {
			defer s.Close()
			r := &results[i]
			next := uint64(1)
			for next <= total {
				b, err := s.Next(ctx)
				if err != nil {
					r.err = fmt.Errorf("after %d: %w", next-1, err)
					return
				}
				next += uint64(b.Skipped)
				r.skipped += b.Skipped
				for _, e := range b.Entries {
					if e.Seq != next || string(e.Data) != strconv.FormatUint(e.Seq, 10) {
						r.err = fmt.Errorf("entry %d (%q), want %d", e.Seq, e.Data, next)
						return
					}
					next++
					r.got++
				}
				if i%4 == 0 && r.got%1000 < 10 {
					time.Sleep(time.Millisecond) // sleep: a slow reader now and then, so that it skips
				}
			}
		})
	}
	for i := 0; i < total; {
		n := min(1+i%7, total-i)
		h.PublishN(n, func(_ int, seq uint64) []byte { return data(seq) })
		i += n
		if i%500 == 0 {
			h.Poke()
			h.Stats()
		}
	}
	wg.Wait()
	var skipped int
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("subscriber %d: %v", i, r.err)
		}
		if r.got+r.skipped != total {
			t.Errorf("subscriber %d: %d entries and %d skipped, want %d in all", i, r.got, r.skipped, total)
		}
		skipped += r.skipped
	}
	if st := h.Stats(); st.Dropped != uint64(skipped) || st.Subscribers != 0 {
		t.Errorf("stats %+v: want %d dropped (the subscribers' skips), none subscribed", st, skipped)
	}
}

// TestRewind: entries taken back leave the ring; a subscriber that read
// them is told where they began, once, then reads what replaced them; one
// that had not read them yet, or that joins after, never hears of them.
func TestRewind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h := New(8)
	pub := func(tag string, n int) {
		h.PublishN(n, func(_ int, seq uint64) []byte { return []byte(tag + strconv.FormatUint(seq, 10)) })
	}
	pub("a", 3) // 1..3
	read := h.Subscribe(0)
	if b, err := read.Next(ctx); err != nil || len(b.Entries) != 3 || b.Rewind != 0 {
		t.Fatalf("first batch: %+v %v", b, err)
	}
	behind := h.Subscribe(0) // reads nothing before the rewind
	pub("tentative", 2)      // 4, 5
	if b, err := read.Next(ctx); err != nil || len(b.Entries) != 2 {
		t.Fatalf("tentative batch: %+v %v", b, err)
	}

	h.Rewind(9) // ahead of Next: nothing to take back
	if got := h.Next(); got != 6 {
		t.Fatalf("Next after a rewind ahead: %d, want 6", got)
	}
	h.Rewind(4)
	if st := h.Stats(); st.Next != 4 || st.Stored != 3 || st.Bytes != 6 {
		t.Fatalf("after Rewind(4): %+v, want next 4, 3 entries of 6 bytes", st)
	}
	pub("b", 2) // 4, 5 again, other entries

	b, err := read.Next(ctx)
	if err != nil || b.Rewind != 4 {
		t.Fatalf("the reader's batch after the rewind: %+v %v, want Rewind 4", b, err)
	}
	var got []string
	for _, e := range b.Entries {
		got = append(got, string(e.Data))
	}
	if fmt.Sprint(got) != "[b4 b5]" {
		t.Errorf("after the rewind the reader got %v, want [b4 b5]", got)
	}

	var all []string
	for len(all) < 5 {
		b, err := behind.Next(ctx)
		if err != nil || b.Rewind != 0 {
			t.Fatalf("a subscriber that had not read the entries: %+v %v", b, err)
		}
		for _, e := range b.Entries {
			all = append(all, string(e.Data))
		}
	}
	if fmt.Sprint(all) != "[a1 a2 a3 b4 b5]" {
		t.Errorf("a subscriber behind read %v, want [a1 a2 a3 b4 b5]", all)
	}
	late := h.Subscribe(0)
	if b, err := late.Next(ctx); err != nil || b.Rewind != 0 || len(b.Entries) != 5 || string(b.Entries[3].Data) != "b4" {
		t.Errorf("a subscriber after the rewind: %+v %v", b, err)
	}
}
