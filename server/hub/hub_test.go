package hub

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
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
		h := New(tt.ring, 10)
		for i := 0; i < tt.publish; i++ {
			h.Publish(data)
		}
		var got []uint64
		for _, e := range h.Snapshot(tt.after) {
			got = append(got, e.Seq)
		}
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
// join at random moments; each must see a contiguous run of sequence
// numbers from the ring's oldest (at its join) to the last.
func TestLateJoinerNoGapNoDup(t *testing.T) {
	const total = 20000
	h := New(500, total) // queues never overflow here
	var wg sync.WaitGroup
	subs := make(chan *Subscription, 50)
	wg.Go(func() {
		defer close(subs)
		for i := 1; i <= total; i++ {
			h.Publish(data)
			if i%400 == 0 {
				subs <- h.Subscribe(0)
			}
		}
	})
	var all []*Subscription
	for s := range subs {
		all = append(all, s)
	}
	wg.Wait()
	for i, s := range all {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var seqs []uint64
		for len(seqs) == 0 || seqs[len(seqs)-1] < total {
			b, err := s.Next(ctx)
			if err != nil {
				t.Fatalf("subscriber %d: %v after %d entries", i, err, len(seqs))
			}
			if b.Skipped != 0 {
				t.Fatalf("subscriber %d skipped %d", i, b.Skipped)
			}
			for _, e := range b.Entries {
				seqs = append(seqs, e.Seq)
			}
		}
		cancel()
		for j := 1; j < len(seqs); j++ {
			if seqs[j] != seqs[j-1]+1 {
				t.Fatalf("subscriber %d: %d follows %d", i, seqs[j], seqs[j-1])
			}
		}
		if len(seqs) < 500 && seqs[0] != 1 {
			t.Fatalf("subscriber %d: history starts at %d with %d entries", i, seqs[0], len(seqs))
		}
		s.Close()
	}
}

func TestSlowSubscriberSkipsAndDoesNotBlock(t *testing.T) {
	h := New(100, 10)
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
	// slow has 10 queued, 40 skipped; then entries published later follow.
	b, err := slow.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Entries) != 10 || b.Entries[0].Seq != 1 || b.Entries[9].Seq != 10 || b.Skipped != 40 {
		t.Fatalf("slow subscriber: %d entries (%v…), skipped %d; want 1..10 then 40 skipped", len(b.Entries), b.Entries[:1], b.Skipped)
	}
	h.Publish(data)
	b, err = slow.Next(ctx)
	if err != nil || len(b.Entries) != 1 || b.Entries[0].Seq != 51 || b.Skipped != 0 {
		t.Fatalf("after the gap: %+v, %v; want entry 51 alone", b, err)
	}
	if st := h.Stats(); st.Dropped != 40 || st.Subscribers != 2 {
		t.Fatalf("stats %+v; want 40 dropped, 2 subscribers", st)
	}
}

func TestHistoryLargerThanQueue(t *testing.T) {
	h := New(1000, 10)
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
	h := New(10, 10)
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
	h2 := New(1, 1)
	if _, err := h2.Subscribe(0).Next(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("idle Next: %v, want deadline", err)
	}
}

func TestPublishN(t *testing.T) {
	h := New(5, 3)
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
	if len(seqs) != 3 || seqs[2] != 3 || len(skipped) != 1 || skipped[0] != 1 {
		t.Fatalf("queue of 3 after 4 at once: %v, skipped %v", seqs, skipped)
	}
	if h.PublishN(0, nil) != 0 {
		t.Fatal("PublishN(0) published")
	}
}

func TestResumeTooFarBack(t *testing.T) {
	h := New(3, 10)
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
	h := New(10, 10)
	h.SetNext(100)
	h.SetNext(50) // never backwards
	if seq := h.Publish(data); seq != 100 {
		t.Fatalf("first seq after SetNext(100) = %d", seq)
	}
}

func BenchmarkPublish200(b *testing.B) {
	h := New(5000, 4096)
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
	h := New(100, 100)
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
