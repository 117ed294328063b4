package kvmirror

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/broker"
)

// seen is what a mirror's apply was given, in order.
type seen struct {
	mu  sync.Mutex
	all []string // "key=value initial" or "key deleted"
}

func (s *seen) apply(e Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := e.Key() + "=" + string(e.Value())
	if !e.Put() {
		v = e.Key() + " deleted"
	}
	if e.Initial {
		v += " initial"
	}
	s.all = append(s.all, v)
}

func (s *seen) get() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.all...)
}

// TestMirror: Start returns once apply had what the bucket held, marked
// initial; changes follow in order, not initial; after Stop, none.
func TestMirror(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Open(ctx, broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kv, err := b.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "mirror_test", Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b"} {
		if _, err := kv.Put(ctx, k, []byte(k+"1")); err != nil {
			t.Fatal(err)
		}
	}
	var s seen
	m, err := Start(ctx, kv, s.apply)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.get(); len(got) != 2 || got[0] != "a=a1 initial" || got[1] != "b=b1 initial" {
		t.Fatalf("after Start: %q, want a and b, initial", got)
	}
	if _, err := kv.Put(ctx, "a", []byte("a2")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	want := []string{"a=a1 initial", "b=b1 initial", "a=a2", "b deleted"}
	if !testwait.UntilDone(ctx, func() bool { return len(s.get()) >= len(want) }) {
		t.Fatalf("changes: %q, want %q", s.get(), want)
	}
	if got := s.get(); len(got) != len(want) || got[2] != want[2] || got[3] != want[3] {
		t.Fatalf("changes: %q, want %q", got, want)
	}
	m.Stop()
	if _, err := kv.Put(ctx, "c", []byte("c1")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond) // sleep: a window in which a change after Stop would come
	if got := s.get(); len(got) != len(want) {
		t.Errorf("after Stop: %q", got)
	}
}

// TestMirrorCanceled: a Start whose context ends first returns its error.
func TestMirrorCanceled(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	b, err := broker.Open(ctx, broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	kv, err := b.JS.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "mirror_test", Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	done, stop := context.WithCancel(ctx)
	stop()
	if _, err := Start(done, kv, func(Entry) {}); !errors.Is(err, context.Canceled) {
		t.Errorf("Start on an ended context: %v, want context.Canceled", err)
	}
}
