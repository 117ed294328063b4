package feeds

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/natstest"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestLiveAckWaitsForDisk: a relay's batch is acknowledged only once what
// stores it is on disk (broker.Synced), while browsers see its lines as
// soon as JetStream has them; the next batch is stored meanwhile.
func TestLiveAckWaitsForDisk(t *testing.T) {
	l, ts := newStoredLiveServer(t, t.TempDir(), Config{})
	var mu sync.Mutex
	var pending []chan struct{}
	l.synced = func() <-chan struct{} {
		mu.Lock()
		defer mu.Unlock()
		ch := make(chan struct{})
		pending = append(pending, ch)
		return ch
	}
	release := func() {
		mu.Lock()
		defer mu.Unlock()
		for _, ch := range pending {
			close(ch)
		}
		pending = nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "disk")
	b := dialBrowser(t, ctx, ts, "/feeds/disk/ws")
	send := func(ls []relay.Line) {
		msg := relay.AppendBatch(nil, ls)
		if err := in.Write(ctx, 1, msg); err != nil {
			t.Fatal(err)
		}
	}
	send(lines("d", 1, 3))
	if got := strings.Join(b.lines(ctx, 3), "|"); got != raws(lines("d", 1, 3)) {
		t.Fatalf("browser got %q", got)
	}
	send(lines("d", 4, 5)) // stored while the first ack waits
	if got := strings.Join(b.lines(ctx, 2), "|"); got != raws(lines("d", 4, 5)) {
		t.Fatalf("browser got %q while the first ack waited", got)
	}
	actx, acancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, early, err := in.Read(actx)
	acancel()
	if err == nil {
		t.Fatalf("ack %s before the disk had the lines", early)
	}
	// (A read cut short by its context closes the socket: read acks anew.)
	in = dialIngest(t, ctx, ts, "disk")
	go func() { time.Sleep(100 * time.Millisecond); release() }() // sleep: the disk stays slow while the lines are sent
	if ack := wstest.Send(t, ctx, in, lines("d", 5, 6)...); ack != "d6" {
		t.Fatalf("ack %q once synced, want d6", ack)
	}
	release()
}

// TestLiveRetentionPerFeed: each feed's stream keeps at most its own
// bytes: a noisy feed drops its own oldest lines, never a quiet feed's.
func TestLiveRetentionPerFeed(t *testing.T) {
	const limit = 64 << 10
	_, ts := newStoredLiveServer(t, t.TempDir(), Config{FeedBytes: limit})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quiet := dialIngest(t, ctx, ts, "quiet")
	if ack := wstest.Send(t, ctx, quiet, lines("q", 1, 3)...); ack != "q3" {
		t.Fatalf("ack %q", ack)
	}
	noisy := dialIngest(t, ctx, ts, "noisy")
	noise := make([]byte, 2048) // random: compression cannot make it small
	for i := range 100 {
		var batch []relay.Line
		for j := range 10 {
			rand.Read(noise)
			batch = append(batch, relay.Line{ID: fmt.Sprintf("n-%d", i*10+j+1), Raw: hex.EncodeToString(noise)})
		}
		wstest.Send(t, ctx, noisy, batch...)
	}
	if got := exportLines(t, ctx, ts, "quiet", 0); strings.Join(got, "|") != raws(lines("q", 1, 3)) {
		t.Fatalf("the quiet feed after the noisy one: %q", got)
	}
	got := exportLines(t, ctx, ts, "noisy", 0)
	size := 0
	for _, l := range got {
		size += len(l)
	}
	if len(got) == 0 || len(got) >= 1000 || size > 2*limit {
		t.Fatalf("the noisy feed keeps %d of 1000 lines, %d bytes; want its newest within its %d bytes", len(got), size, limit)
	}
	if last := got[len(got)-1]; len(last) != 4096 {
		t.Fatalf("its last line is %d bytes", len(last))
	}
}

// TestLiveMigratesLegacyStream: an older version's feeds, subjects of one
// stream, move into streams of their own at start: their lines, numbers
// and demo marks are kept, new lines follow them, and the old stream goes.
func TestLiveMigratesLegacyStream(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b, err := broker.Open(ctx, broker.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: legacyStream, Subjects: []string{legacySubjectPrefix + ">"}, Storage: jetstream.FileStorage, MaxMsgsPerSubject: 4096,
	}); err != nil {
		t.Fatal(err)
	}
	put := func(feed string, first int, demo bool, ls []relay.Line) {
		m := nats.NewMsg(legacySubjectPrefix + strings.ReplaceAll(feed, ".", "%2E"))
		m.Data = relay.AppendBatch(nil, ls) // as the older version stored them
		m.Header.Set(hdrSeq, fmt.Sprint(first))
		if demo {
			m.Header.Set(hdrDemo, "1")
		}
		if _, err := b.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	put("room-ab.12", 1, false, lines("r", 1, 3))
	put("default", 1, true, []relay.Line{{Raw: "a demo line"}})
	put("room-ab.12", 4, false, lines("r", 4, 5))
	put("default", 2, false, lines("k", 1, 2))
	b.Close()

	for range 2 { // the second start finds nothing to move
		l, ts := newStoredLiveServer(t, dir, Config{})
		if got := exportLines(t, ctx, ts, "room-ab.12", 0); strings.Join(got, "|") != raws(lines("r", 1, 5)) {
			t.Fatalf("room feed after the move: %q", got)
		}
		if got := exportLines(t, ctx, ts, "default", 0); strings.Join(got, "|") != raws(lines("k", 1, 2)) {
			t.Fatalf("default feed after the move (demo lines are not exported): %q", got)
		}
		br := dialBrowser(t, ctx, ts, "/feeds/room-ab.12/ws?after=3")
		if got := strings.Join(br.lines(ctx, 2), "|"); got != raws(lines("r", 4, 5)) {
			t.Fatalf("history after 3: %q", got)
		}
		if _, err := l.b.JS.Stream(ctx, legacyStream); err == nil {
			t.Fatal("the older version's stream is still there")
		}
		ts.Close()
		l.Close()
	}
	_, ts := newStoredLiveServer(t, dir, Config{})
	in := dialIngest(t, ctx, ts, "room-ab.12")
	if ack := wstest.Send(t, ctx, in, lines("r", 4, 7)...); ack != "r7" {
		t.Fatalf("ack %q", ack)
	}
	br := dialBrowser(t, ctx, ts, "/feeds/room-ab.12/ws?after=5")
	if got := strings.Join(br.lines(ctx, 2), "|"); got != raws(lines("r", 6, 7)) {
		t.Fatalf("new lines after the moved ones: %q", got)
	}
}

// TestLiveTwoReplicasOneFeed: two replicas ingesting one feed at once
// (a relay that failed over while the first connection lingered) give
// each line one number, the same on both; each replica's hub, which shows
// its own lines while they are stored and the other's through its
// consumer, holds the same history as the stream. A browser watching
// either replica while they race, which drops what it is told was taken
// back ({"rewind":N}: lines shown, then refused by the store), ends with
// the stream's lines, each once, in order.
func TestLiveTwoReplicasOneFeed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l1, l2 := twoReplicas(t)
	ts1, ts2 := serveLive(t, l1), serveLive(t, l2)
	// Followed before the race, on both, so both browsers watch it live.
	for _, l := range []*Service{l1, l2} {
		if _, err := l.feed("shared"); err != nil {
			t.Fatal(err)
		}
	}
	watchers := []*liveView{watchLive(t, ctx, ts1, "shared"), watchLive(t, ctx, ts2, "shared")}

	// Each relay sends its batches without waiting for acks, so the two
	// replicas' publishes interleave as tightly as they can.
	const batches, per = 300, 2
	var wg sync.WaitGroup
	for i, ts := range []*httptest.Server{ts1, ts2} {
		in := dialIngest(t, ctx, ts, "shared")
		prefix := fmt.Sprintf("r%d-", i+1)
		wg.Go(func() {
			for k := range batches {
				if err := in.Write(ctx, 1, relay.AppendBatch(nil, lines(prefix, k*per+1, (k+1)*per))); err != nil {
					t.Errorf("replica %d: %v", i+1, err)
					return
				}
			}
			last := fmt.Sprintf(`{"ack":"%s%d"}`, prefix, batches*per)
			for {
				_, ack, err := in.Read(ctx)
				if err != nil {
					t.Errorf("replica %d: no ack of its last line: %v", i+1, err)
					return
				}
				if string(ack) == last {
					return
				}
			}
		})
	}
	wg.Wait()
	const total = 2 * batches * per
	export := exportLines(t, ctx, ts1, "shared", 0)
	if len(export) != total {
		t.Fatalf("export holds %d lines, want %d", len(export), total)
	}
	seen := make(map[string]bool)
	for _, l := range export {
		if seen[l] {
			t.Fatalf("%q stored twice", l)
		}
		seen[l] = true
	}
	rewinds := 0
	for i, w := range watchers {
		got, n := w.wait(t, total)
		rewinds += n
		for k := range export {
			if got[k] != export[k] {
				t.Fatalf("replica %d's live browser: line #%d is %q; the stream's is %q (%d rewinds)", i+1, k+1, got[k], export[k], n)
			}
		}
	}
	t.Logf("the live browsers were told of %d rewinds", rewinds)
	for i, ts := range []*httptest.Server{ts1, ts2} {
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		defer rcancel()
		br := dialBrowser(t, rctx, ts, "/feeds/shared/ws")
		var got []string
		var seqs []uint64
		for len(got) < total {
			m, err := br.next(rctx)
			if err != nil {
				t.Fatalf("replica %d: after %d lines: %v", i+1, len(got), err)
			}
			if m.Line != nil {
				got, seqs = append(got, m.Line.Raw), append(seqs, m.Seq)
			}
		}
		for k := range got {
			if got[k] != export[k] || seqs[k] != uint64(k+1) {
				t.Fatalf("replica %d: line %d is #%d %q; the stream's is #%d %q", i+1, k, seqs[k], got[k], k+1, export[k])
			}
		}
	}
}

// TestLiveFeedStartsOutsideLock: while one feed's stream is being made and
// followed (JetStream electing a leader can take many seconds), other
// feeds are looked up as usual; a second caller for the same feed waits
// for the first's, and both get the one feed.
func TestLiveFeedStartsOutsideLock(t *testing.T) {
	l, _ := newLiveServer(t, Config{})
	release := make(chan struct{})
	following := make(chan struct{}, 2)
	follow := l.followFeed
	l.followFeed = func(f *feed) error {
		if f.name == "slow" {
			following <- struct{}{}
			<-release
		}
		return follow(f)
	}
	got := make(chan *feed, 2)
	for range 2 {
		go func() {
			f, err := l.feed("slow")
			if err != nil {
				t.Error(err)
			}
			got <- f
		}()
	}
	<-following // "slow" is being made and followed
	done := make(chan error, 1)
	go func() {
		_, err := l.feed("other")
		if err == nil {
			_, err = l.existingFeed(defaultFeed)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("other feeds waited for a feed being started")
	}
	select {
	case <-got:
		t.Fatal("a feed returned before it was followed")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if a, b := <-got, <-got; a == nil || a != b {
		t.Fatalf("two callers got %p and %p", a, b)
	}
}

// TestLiveSweepsIdleDemoStreams: a tag's demo leaves a stream; once no
// replica has written to it for a while (and this one does not hold the
// feed) it is deleted. A relay's feed and a demo still held keep theirs.
func TestLiveSweepsIdleDemoStreams(t *testing.T) {
	l, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, name := range []string{"demo-v1.30.0", "demo-v1.29.3"} {
		if _, err := l.b.JS.CreateStream(ctx, l.streamConfig(name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.feed("demo-v1.31.0"); err != nil {
		t.Fatal(err)
	}
	wstest.Send(t, ctx, dialIngest(t, ctx, ts, "relayed"), lines("x", 1, 1)...)

	l.sweepDemoStreams(ctx) // none idle yet
	l.demoStreamIdle = 0
	has := func(name string) bool {
		_, err := l.b.JS.Stream(ctx, feedStreamName(name))
		return err == nil
	}
	if !has("demo-v1.30.0") {
		t.Fatal("a demo's stream deleted before it was idle")
	}
	l.sweepDemoStreams(ctx)
	for name, want := range map[string]bool{"demo-v1.30.0": false, "demo-v1.29.3": false, "demo-v1.31.0": true, "relayed": true, defaultFeed: true} {
		if got := has(name); got != want {
			t.Errorf("after the sweep, %s's stream is there: %v, want %v", name, got, want)
		}
	}
}

// twoReplicas is two feeds services, each on its own replica of one
// JetStream cluster (natstest.Pair), closed before their brokers.
func twoReplicas(t *testing.T) (*Service, *Service) {
	t.Helper()
	b1, b2 := natstest.Pair(t, t.TempDir())
	cfg := Config{IngestToken: testToken, DemoPeriod: -1, DefaultTag: "v1.31.0"}
	l1, err := New(cfg, b1, nil)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := New(cfg, b2, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close(); l1.Close() }) // before the brokers close
	return l1, l2
}

// liveView is what a browser watching a feed holds, as live.js keeps it:
// lines by sequence number, those taken back dropped.
type liveView struct {
	mu      sync.Mutex
	lines   map[uint64]string
	rewinds int
	err     error
	changed chan struct{}
}

// watchLive opens a browser socket on feed and keeps its view until ctx ends.
func watchLive(t *testing.T, ctx context.Context, ts *httptest.Server, feed string) *liveView {
	br := dialBrowser(t, ctx, ts, "/feeds/"+feed+"/ws")
	v := &liveView{lines: make(map[uint64]string), changed: make(chan struct{}, 1)}
	go func() {
		for {
			m, err := br.next(ctx)
			v.mu.Lock()
			switch {
			case err != nil:
				v.err = err
			case m.Rewind != 0:
				v.rewinds++
				for seq := range v.lines {
					if seq >= m.Rewind {
						delete(v.lines, seq)
					}
				}
			case m.Skipped != 0:
				v.err = fmt.Errorf("told it skipped %d lines, after #%d", m.Skipped, len(v.lines))
			case m.Line != nil:
				if old, ok := v.lines[m.Seq]; ok {
					v.err = fmt.Errorf("line #%d twice: %q, then %q", m.Seq, old, m.Line.Raw)
				}
				v.lines[m.Seq] = m.Line.Raw
			}
			v.mu.Unlock()
			select {
			case v.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	return v
}

// wait waits until the view holds lines #1 to #n, and returns them with
// the rewinds it was told of.
func (v *liveView) wait(t *testing.T, n int) ([]string, int) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for {
		v.mu.Lock()
		if v.err == nil && len(v.lines) >= n {
			out := make([]string, n)
			for seq := range n {
				out[seq] = v.lines[uint64(seq+1)]
			}
			rewinds := v.rewinds
			v.mu.Unlock()
			return out, rewinds
		}
		err, have := v.err, len(v.lines)
		var missing []uint64
		for seq := range uint64(n) {
			if _, ok := v.lines[seq+1]; !ok && len(missing) < 10 {
				missing = append(missing, seq+1)
			}
		}
		rewinds := v.rewinds
		v.mu.Unlock()
		if err != nil {
			t.Fatalf("live browser: %v", err)
		}
		select {
		case <-v.changed:
		case <-timeout:
			t.Fatalf("live browser holds %d lines of %d, after %d rewinds; without #%v…", have, n, rewinds, missing)
		}
	}
}
