package main

// The cluster shape, end to end: three nats-server processes built from the
// module version in go.mod, clustered on loopback; two `syncloop serve
// --nats …` replicas; a relay given both. One replica and one NATS node are
// killed with SIGKILL mid-stream; every journal entry must be stored once,
// in order, and reach a browser on the surviving replica exactly once. A
// room with browsers on both replicas must follow across them and outlive
// the killed replica (e2e_cluster_rooms_test.go).

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
)

// natsServerBin builds nats-server at the version go.mod requires.
func natsServerBin(t *testing.T) string {
	t.Helper()
	return goBuild(t, "nats-server", "github.com/nats-io/nats-server/v2")
}

// natsCluster starts n clustered nats-server processes with JetStream and
// returns them and their client URLs.
func natsCluster(t *testing.T, n int) ([]*proc, []string) {
	bin := natsServerBin(t)
	dir := t.TempDir()
	clientPorts, routePorts := make([]int, n), make([]int, n)
	for i := range n {
		clientPorts[i], routePorts[i] = freePort(t), freePort(t)
	}
	var routes []string
	for _, p := range routePorts {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	var procs []*proc
	var urls []string
	for i := range n {
		args := []string{"-js", "-sd", filepath.Join(dir, fmt.Sprint("n", i)), "-n", fmt.Sprint("n", i),
			"-a", "127.0.0.1", "-p", fmt.Sprint(clientPorts[i]),
			"--cluster_name", "syncloop-test", "--cluster", routes[i], "--routes", strings.Join(routes, ",")}
		procs = append(procs, start(t, fmt.Sprint("nats-", i), bin, args...))
		urls = append(urls, fmt.Sprintf("nats://127.0.0.1:%d", clientPorts[i]))
	}
	return procs, urls
}

func TestE2ECluster(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the cluster test builds nats-server and runs five processes")
	}
	bin := syncloopBin(t)
	nodes, urls := natsCluster(t, 3)
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	const n = 2000
	journal := filepath.Join(dir, "journal.json")
	writeJournal(t, journal, n, e2eSites(t, cache), 2*time.Millisecond) // 4 s at --speed 1

	type replica struct {
		base string
		p    *proc
	}
	var reps []replica
	for i := range 2 {
		addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
		p := start(t, fmt.Sprint("serve-", i), bin, "serve", "--addr", addr, "--token", "e2e-token",
			"--cache-dir", cache, "--data-dir", filepath.Join(dir, fmt.Sprint("data", i)),
			"--nats", strings.Join(urls, ","), "--log-level", "warn")
		reps = append(reps, replica{"http://" + addr, p})
	}
	for _, r := range reps {
		waitHealthy(t, r.base, r.p)
	}

	// A room across the replicas, with a browser on each, before the
	// relay starts (e2e_cluster_rooms_test.go).
	room := clusterRoomOpen(t, reps[0].base, reps[1].base)
	room.followAndHand(t)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	// A browser on each replica; the first's goes when its replica does.
	watchers := []*watcher{{cases: map[string]int{}}, {cases: map[string]int{}}}
	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for i, w := range watchers {
		wg.Go(func() { w.run(wctx, "ws"+strings.TrimPrefix(reps[i].base, "http")+"/feeds/cl/ws") })
	}
	defer func() { wcancel(); wg.Wait() }()

	relay := start(t, "relay", bin, "relay", "--server", reps[0].base+","+reps[1].base, "--feed", "cl",
		"--token", "e2e-token", "--file", journal, "--speed", "1")

	survivor := watchers[1]
	testwait.For(t, 60*time.Second, "a quarter of the journal on the second replica", func() bool { return survivor.count() >= n/4 })
	sigkill(t, reps[0].p) // the relay's replica
	t.Logf("replica 0 killed at %d lines", survivor.count())
	testwait.For(t, 60*time.Second, "half of the journal on the second replica", func() bool { return survivor.count() >= n/2 })
	sigkill(t, nodes[2])
	t.Logf("nats node 2 killed at %d lines", survivor.count())

	select {
	case err := <-relay.done:
		relay.done <- err
		if err != nil {
			t.Fatalf("relay: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the relay did not finish")
	}
	testwait.For(t, 30*time.Second, "the whole journal on the second replica", func() bool { return survivor.count() >= n })
	time.Sleep(300 * time.Millisecond) // sleep: a window in which a duplicate would arrive
	survivor.mu.Lock()
	got := append([]int(nil), survivor.got...)
	survivor.mu.Unlock()
	if err := checkExactlyOnce(got, n); err != nil {
		t.Fatalf("browser on the surviving replica: %v", err)
	}
	checkExport(t, reps[1].base, "cl", journal)
	// The room, whose driver's page was on replica 0, goes on on replica 1
	// (checked last: it takes seconds the feed's checks above are timed by).
	room.afterKill(t)
}
