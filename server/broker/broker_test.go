package broker

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
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
	if !strings.HasPrefix(u, "nats://") || !strings.Contains(u, "@127.0.0.1:") {
		t.Fatalf("ClientURL %q: want nats://TOKEN@127.0.0.1:port", u)
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

// TestEmbeddedSync: by default the embedded server writes each message to
// the kernel before its PubAck and Synced waits for a syncfs of the store
// (a relay's acknowledged lines survive a host crash), with a periodic
// fsync as the backstop for what nobody waits for; a SyncInterval trades
// the wait for a periodic fsync, and Synced then waits for nothing.
func TestEmbeddedSync(t *testing.T) {
	for _, tc := range []struct {
		every     time.Duration
		wantEvery time.Duration
		wantGroup bool
	}{{0, backstopSync, true}, {time.Minute, time.Minute, false}} {
		b, err := Open(t.Context(), Config{Dir: t.TempDir(), SyncInterval: tc.every})
		if err != nil {
			t.Fatal(err)
		}
		jc := b.ns.JetStreamConfig()
		select {
		case <-b.Synced():
		case <-time.After(10 * time.Second):
			t.Errorf("SyncInterval %v: Synced not closed within 10 s", tc.every)
		}
		group := b.gs != nil
		b.Close()
		if jc == nil {
			t.Fatal("the embedded server has no JetStream config")
		}
		if jc.SyncAlways || jc.SyncInterval != tc.wantEvery || group != tc.wantGroup {
			t.Errorf("SyncInterval %v: JetStream syncs always %v, every %v, group commit %v; want every %v, group commit %v",
				tc.every, jc.SyncAlways, jc.SyncInterval, group, tc.wantEvery, tc.wantGroup)
		}
	}
}

// TestGroupSync: a channel Synced returned closes only after a sync that
// began after the call ended well; waiters that arrive during a sync wait
// for the next one, and share it; a failed sync is retried, never taken
// for done.
func TestGroupSync(t *testing.T) {
	type call struct {
		began   chan struct{}
		release chan error
	}
	calls := make(chan call)
	g := newGroupSync(func() error {
		c := call{make(chan struct{}), make(chan error)}
		calls <- c
		close(c.began)
		return <-c.release
	}, func(error) {}, 0)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); g.run(ctx) }()
	defer func() { cancel(); <-done }()

	closed := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(50 * time.Millisecond):
			return false
		}
	}
	a1, a2 := g.synced(), g.synced()
	first := <-calls
	<-first.began
	b := g.synced() // arrives while the first sync runs: not covered by it
	if closed(a1) {
		t.Fatal("closed before its sync ended")
	}
	first.release <- nil
	if !closed(a1) || !closed(a2) {
		t.Fatal("waiters before a sync not released by it")
	}
	if closed(b) {
		t.Fatal("a waiter that arrived during a sync was released by it")
	}
	second := <-calls
	second.release <- errors.New("disk on fire")
	if closed(b) {
		t.Fatal("released by a sync that failed")
	}
	third := <-calls // retried
	third.release <- nil
	if !closed(b) {
		t.Fatal("not released by the retried sync")
	}
	select {
	case c := <-calls:
		c.release <- nil
		t.Fatal("a sync ran with nobody waiting")
	case <-time.After(50 * time.Millisecond):
	}
}

// TestGroupSyncGap: syncs run at most one per gap, however many wait.
func TestGroupSyncGap(t *testing.T) {
	var mu sync.Mutex
	var at []time.Time
	const gap = 50 * time.Millisecond
	g := newGroupSync(func() error {
		mu.Lock()
		at = append(at, time.Now())
		mu.Unlock()
		return nil
	}, func(error) {}, gap)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); g.run(ctx) }()
	defer func() { cancel(); <-done }()
	for range 5 {
		<-g.synced()
	}
	mu.Lock()
	defer mu.Unlock()
	for i := 1; i < len(at); i++ {
		if d := at[i].Sub(at[i-1]); d < gap {
			t.Errorf("syncs %d and %d %v apart, under the gap of %v", i-1, i, d, gap)
		}
	}
}

// TestLostRace: a KV Create of a key that holds a value, an Update from a
// stale revision and a publish expecting a moved sequence are lost races;
// other errors are not. (The replicated bucket's 10164 for a Create over a
// delete marker is met in server/rooms' cluster test.)
func TestLostRace(t *testing.T) {
	b, err := Open(t.Context(), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := t.Context()
	kv, err := b.JS.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "race", Storage: jetstream.MemoryStorage})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(ctx, "k", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	_, created := kv.Create(ctx, "k", []byte("b"))
	if _, err := kv.Update(ctx, "k", []byte("c"), rev); err != nil {
		t.Fatal(err)
	}
	_, stale := kv.Update(ctx, "k", []byte("d"), rev)
	if _, err := b.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "RACE", Subjects: []string{"race"}, Storage: jetstream.MemoryStorage}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.JS.Publish(ctx, "race", []byte("1")); err != nil {
		t.Fatal(err)
	}
	_, moved := b.JS.Publish(ctx, "race", []byte("2"), jetstream.WithExpectLastSequencePerSubject(7))
	for name, err := range map[string]error{"create": created, "update": stale, "publish": moved} {
		if err == nil || !LostRace(err) {
			t.Errorf("%s: %v is not a lost race", name, err)
		}
	}
	_, gone := kv.Get(ctx, "nothing")
	for _, err := range []error{gone, context.Canceled, errors.New("disk")} {
		if LostRace(err) {
			t.Errorf("%v taken for a lost race", err)
		}
	}
}

// TestConnectErrorMasksPassword: a --nats URL's password or token is
// never printed when the cluster cannot be reached.
func TestConnectErrorMasksPassword(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	for _, u := range []string{"nats://alice:hunter2@" + addr, "nats://s3cr3tt0ken@" + addr} {
		_, err := Open(context.Background(), Config{URLs: []string{u}})
		if err == nil {
			t.Fatalf("Open(%s): connected to nothing", u)
		}
		if msg := err.Error(); strings.Contains(msg, "hunter2") || strings.Contains(msg, "s3cr3tt0ken") || !strings.Contains(msg, addr) {
			t.Errorf("Open error %q: want the address, never the secret", msg)
		}
	}
}

// TestListenNeedsToken: the embedded server's port takes only clients
// that present its token, written to the token file (mode 0600) and read
// back on restart; with no host it binds loopback; beyond loopback it
// refuses to listen without a token file another host could be given.
func TestListenNeedsToken(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "nats-token")
	b, err := Open(ctx, Config{Dir: dir, Listen: ":0", TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(tokenFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		b.Close()
		t.Fatalf("token file: %v %v, want mode 0600", fi, err)
	}
	token, err := readToken(tokenFile)
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	u := b.ClientURL()
	plain := strings.Replace(u, token+"@", "", 1)
	if !strings.HasPrefix(plain, "nats://127.0.0.1:") || plain == u {
		b.Close()
		t.Fatalf("ClientURL %q: want nats://TOKEN@127.0.0.1:port", u)
	}
	if nc, err := nats.Connect(plain, nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Error("a client without the token connected")
	} else if !strings.Contains(strings.ToLower(err.Error()), "authorization") {
		t.Errorf("a client without the token: %v, want an authorization error", err)
	}
	if nc, err := nats.Connect(plain, nats.Token("wrong")); err == nil {
		nc.Close()
		t.Error("a client with the wrong token connected")
	}
	nc, err := nats.Connect(u)
	if err != nil {
		t.Errorf("a client with the token in its URL: %v", err)
	} else {
		nc.Close()
	}
	other, err := Open(ctx, Config{URLs: []string{plain}, TokenFile: tokenFile})
	if err != nil {
		t.Errorf("a replica given the token file: %v", err)
	} else {
		other.Close()
	}
	b.Close()

	// Restarted, it takes the same token.
	b, err = Open(ctx, Config{Dir: dir, Listen: "127.0.0.1:0", TokenFile: tokenFile})
	if err != nil {
		t.Fatal(err)
	}
	if again := b.ClientURL(); !strings.Contains(again, "//"+token+"@") {
		t.Errorf("after a restart ClientURL %q, want the token kept", again)
	}
	b.Close()

	if _, err := Open(ctx, Config{Listen: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "--nats-token-file") {
		t.Errorf("listen on all interfaces with no token file: %v, want a refusal that says what to give", err)
	}
	os.Chmod(tokenFile, 0o644)
	if _, err := Open(ctx, Config{Dir: t.TempDir(), Listen: "127.0.0.1:0", TokenFile: tokenFile}); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a token file others can read: %v, want a refusal", err)
	}
}
