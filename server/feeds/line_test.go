package feeds

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestLine: a feed's line is looked up by sequence, as stored (a journald
// entry whole), with the case its record has, its time, cursor, pods and
// node; a made-up sequence, a demo line and a line that fired no case are
// told apart, each with its error.
func TestLine(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, ts := newLiveServer(t, Config{RingSize: 16})
	in := dialIngest(t, ctx, ts, "lab")
	var batch []relay.Line
	for i := range 40 {
		batch = append(batch, relay.Line{ID: fmt.Sprint("n", i), Raw: `I1130 01:02:03.000000    1234 fs.go:100] "readlink /proc/1/fd/7: permission denied"`})
	}
	entry := journalEntry("s=abc;i=1f;b=x", `I1130 01:03:00.000000    1234 kubelet.go:2407] "SyncLoop ADD" source="file" pods=["kube-system/etcd"]`)
	batch = append(batch, relay.Line{ID: "s=abc;i=1f;b=x", Raw: entry})
	wstest.Send(t, ctx, in, batch...)
	f, err := l.feed("lab")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ingest([]relay.Line{{Raw: klogAdd(9, "default/demo")}}, true); err != nil {
		t.Fatal(err)
	}
	wstest.Send(t, ctx, in, relay.Line{ID: "after", Raw: klogAdd(10, "default/after")})

	got, err := l.Line(ctx, "lab", 41)
	if err != nil {
		t.Fatal(err)
	}
	if got.Raw != entry || got.Case != "config" || got.Cursor != "s=abc;i=1f;b=x" || got.Node != "lab" ||
		len(got.Pods) != 1 || got.Pods[0] != "kube-system/etcd" || got.Time.IsZero() || got.Seq != 41 || got.Feed != "lab" {
		t.Fatalf("line 41: %+v", got)
	}
	if got, err := l.Line(ctx, "lab", 43); err != nil || got.Raw != klogAdd(10, "default/after") {
		t.Fatalf("line 43, after the demo's: %+v %v", got, err)
	}
	for _, tt := range []struct {
		feed string
		seq  uint64
		want error
	}{
		{"lab", 7, ErrNoCase},
		{"lab", 42, ErrDemoLine},
		{"lab", 99999, ErrNoLine},
		{"lab", 0, ErrNoLine},
		{"nosuchfeed", 41, ErrNoLine},
	} {
		if _, err := l.Line(ctx, tt.feed, tt.seq); !errors.Is(err, tt.want) {
			t.Errorf("line %d of %s: %v, want %v", tt.seq, tt.feed, err, tt.want)
		}
	}
}

// TestLineEvicted: a recorded line the stream has since evicted (its
// limit reached) is ErrNoLine, though the record, pruned only now and
// then, still names it.
func TestLineEvicted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, ts := newLiveServer(t, Config{RingSize: 16, FeedBytes: 64 << 10})
	in := dialIngest(t, ctx, ts, "lab")
	wstest.Send(t, ctx, in, relay.Line{ID: "first", Raw: klogAdd(1, "default/first")})
	if got, err := l.Line(ctx, "lab", 1); err != nil || got.Case != "config" {
		t.Fatalf("line 1 before the flood: %+v %v", got, err)
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for k := range 40 { // 40 × 100 lines of 200 random hex digits: ~8 times the limit
		var batch []relay.Line
		for j := range 100 {
			b := make([]byte, 100)
			for i := range b {
				b[i] = byte(rnd.UintN(256))
			}
			batch = append(batch, relay.Line{ID: fmt.Sprintf("n%d-%d", k, j), Raw: fmt.Sprintf("%x", b)})
		}
		wstest.Send(t, ctx, in, batch...)
	}
	if _, err := l.Line(ctx, "lab", 1); !errors.Is(err, ErrNoLine) {
		t.Fatalf("line 1, evicted: %v, want ErrNoLine", err)
	}
	if c := l.FeedFired("lab")["config"]; c != 1 {
		t.Fatalf("the record counts %d config lines: the test does not test a line the record still names", c)
	}
}
