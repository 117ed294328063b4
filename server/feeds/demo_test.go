package feeds

import (
	"fmt"
	"path"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// TestOwnedDemo: an owned feed whose owner asks for the demo runs it
// once a browser opens it, while no journal feeds it; its lines are
// marked demo and never counted as fired; a relay's lines stop it for
// good and are counted, per case.
func TestOwnedDemo(t *testing.T) {
	r := fixture.Reading(t)
	b, err := broker.Open(t.Context(), broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Config{DefaultTag: r.Tag, IngestToken: testToken, DemoPeriod: 10 * time.Millisecond}, b,
		func(tag string) *extractor.Reading {
			if tag == r.Tag {
				return r
			}
			return nil
		})
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	l.closeBroker = true
	t.Cleanup(l.Close)
	ts := serveLive(t, l)
	ctx := t.Context()

	const feed = "room-abc"
	l.Own("room-", func(string) (Owned, error) { return Owned{Tag: r.Tag, Token: testToken, Demo: true}, nil })
	br := dialBrowser(t, ctx, ts, "/feeds/"+feed+"/ws")
	for range 5 {
		m := br.nextLine(ctx)
		if !m.Demo {
			t.Fatalf("a line of a room no journal feeds, not marked demo: %+v", m.Line)
		}
	}
	if f := l.FeedFired(feed); len(f) != 0 {
		t.Errorf("the demo counted as fired: %v", f)
	}
	if l.FeedRelayed(feed) {
		t.Error("a relay said attached to a room the demo feeds")
	}

	// A relay: the demo stops, its lines count.
	c, ok := r.Function.CaseByKey("pleg")
	if !ok || len(c.Logs) == 0 {
		t.Fatal("the fixture has no pleg log site")
	}
	var lines []relay.Line
	for i := range 3 {
		lines = append(lines, relay.Line{ID: fmt.Sprint(i), Raw: fmt.Sprintf("I1130 01:02:0%d.000000    1234 %s:%d] %q", i, path.Base(c.Logs[0].File), c.Logs[0].Line, c.Logs[0].Message)})
	}
	in := dialIngest(t, ctx, ts, feed)
	if ack := wstest.Send(t, ctx, in, lines...); ack != "2" {
		t.Fatalf("ack %q", ack)
	}
	if !testwait.Until(5*time.Second, func() bool { return l.FeedFired(feed)["pleg"] == 3 }) {
		t.Fatalf("fired %v, want pleg 3", l.FeedFired(feed))
	}
	if f := l.FeedFired(feed); len(f) != 1 {
		t.Errorf("fired %v: demo lines counted", f)
	}
	if !l.FeedRelayed(feed) {
		t.Error("no relay said attached")
	}
	// The demo stopped, and a later watch does not start it again.
	l.DemoWhileQuiet(feed)
	time.Sleep(100 * time.Millisecond) // sleep: a window in which a demo started again would start
	f, _ := l.existingFeed(feed)
	f.mu.Lock()
	source, running := f.src.kind, f.src.demoStop != nil
	f.mu.Unlock()
	if source != sourceRelay || running {
		t.Errorf("after a relay: source %q, demo running %v", source, running)
	}
}
