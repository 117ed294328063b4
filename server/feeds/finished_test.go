package feeds

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/wstest"
)

// noteUntil reads b's hello and status messages until one's note is want,
// and fails with the last note seen if none is before ctx ends.
func (b *feedClient) noteUntil(ctx context.Context, want string) {
	b.t.Helper()
	last := ""
	for {
		m, err := b.next(ctx)
		if err != nil {
			b.t.Fatalf("no note %q before %v; last note %q", want, err, last)
		}
		s := m.Status
		if s == nil {
			s = m.Hello
		}
		if s != nil {
			if last = s.Note; last == want {
				return
			}
		}
	}
}

// A relay whose journal ended (syncloop relay --file closes with a normal
// closure once all is acknowledged) is shown as finished, with the lines
// the feed holds; one that drops is shown as disconnected.
func TestLiveRelayFinishedOrDisconnected(t *testing.T) {
	_, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "lab")
	if ack := wstest.Send(t, ctx, in, lines("a", 1, 3)...); ack != "a3" {
		t.Fatalf("ack %q, want a3", ack)
	}
	b := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	in.Close(websocket.StatusNormalClosure, "journal ended")
	b.noteUntil(ctx, "relay finished: 3 lines")

	again := dialIngest(t, ctx, ts, "lab")
	wstest.Send(t, ctx, again, lines("a", 4, 5)...)
	again.CloseNow() // the relay's link dropped
	b.noteUntil(ctx, noteRelayGone)
}

func TestThousands(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 999: "999", 1000: "1,000", 20363: "20,363", 1234567: "1,234,567"} {
		if got := thousands(n); got != want {
			t.Errorf("thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
