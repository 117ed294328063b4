package broker

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestEmbeddedKeepsAcrossRestart: the embedded server keeps a stream in
// the data dir, listens on no port, and a second one on the same dir
// refuses while the first runs.
func TestEmbeddedKeepsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	b, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if u := b.ClientURL(); u != "" {
		t.Errorf("embedded server listens at %s; want no port without Listen", u)
	}
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.Publish(ctx, "t", []byte("kept")); err != nil {
		t.Fatal(err)
	}

	_, err = Open(ctx, Config{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "in use by another syncloop serve") {
		t.Fatalf("second server on the same data dir: err %v; want a refusal naming the cause", err)
	}
	if err := b.Healthy(ctx); err != nil {
		t.Fatalf("the first server after the second's refusal: %v", err)
	}
	b.Close()

	b2, err := Open(ctx, Config{Dir: dir})
	if err != nil {
		t.Fatalf("reopen after close: %v", err)
	}
	defer b2.Close()
	s, err := b2.JS.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "t")
	if err != nil || string(m.Data) != "kept" {
		t.Fatalf("after restart: %v %q", err, m.Data)
	}
}

// TestEmbeddedListen: with Listen the embedded server takes other clients.
func TestEmbeddedListen(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, Config{Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	u := b.ClientURL()
	if !strings.HasPrefix(u, "nats://127.0.0.1:") {
		t.Fatalf("ClientURL %q", u)
	}
	other, err := Open(ctx, Config{URLs: []string{u}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := other.Healthy(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestEmbeddedSync: by default the embedded server fsyncs each write
// before JetStream acknowledges it (a relay's acknowledged lines survive
// a host crash); a SyncInterval trades that for a periodic fsync.
func TestEmbeddedSync(t *testing.T) {
	for _, tc := range []struct {
		every      time.Duration
		wantAlways bool
	}{{0, true}, {time.Second, false}} {
		b, err := Open(t.Context(), Config{Dir: t.TempDir(), SyncInterval: tc.every})
		if err != nil {
			t.Fatal(err)
		}
		jc := b.ns.JetStreamConfig()
		b.Close()
		if jc == nil {
			t.Fatal("the embedded server has no JetStream config")
		}
		if jc.SyncAlways != tc.wantAlways || (!tc.wantAlways && jc.SyncInterval != tc.every) {
			t.Errorf("SyncInterval %v: JetStream syncs always %v every %v; want always %v", tc.every, jc.SyncAlways, jc.SyncInterval, tc.wantAlways)
		}
	}
}
