package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestServeExitsForRestartOnceDiskFrees: a real `syncloop serve` whose
// data dir's disk fills under a relay's feed (so JetStream's store failed
// a write) keeps serving until the space is free again, then exits with
// an error that says why, for its supervisor to start it again.
func TestServeExitsForRestartOnceDiskFrees(t *testing.T) {
	disk := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=40m", "tmpfs", disk).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot mount a tmpfs, which CI must (it runs as root): %v %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", disk).Run() })
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var stderr lockedBuffer
	done := make(chan error, 1)
	args := []string{"syncloop", "serve", "--addr", "127.0.0.1:0", "--cache-dir", t.TempDir(), "--data-dir", filepath.Join(disk, "data"), "--feed-mb", "4", "--token", "T0KEN"}
	go func() {
		done <- run(ctx, args, goEnv(map[string]string{"GOPROXY": "off"}), strings.NewReader(""), io.Discard, &stderr)
	}()
	base := servingAt(t, &stderr, done, time.Minute)
	c, _, err := websocket.Dial(ctx, "ws://"+base+"/feeds/lab/ingest", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer T0KEN"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ballast := filepath.Join(disk, "ballast")
	f, _ := os.Create(ballast)
	for chunk := make([]byte, 64<<10); ; {
		if _, err := f.Write(chunk); err != nil {
			break
		}
	}
	f.Close()
	n, stopped := 0, false
	for range 2000 {
		var ls []map[string]string
		for range 10 {
			n++
			ls = append(ls, map[string]string{"id": fmt.Sprintf("run-%d", n), "raw": fmt.Sprintf("I1130 01:02:03.000000 1234 kubelet.go:2407] line %d %01000d", n, 0)})
		}
		b, _ := json.Marshal(map[string]any{"lines": ls})
		if c.Write(ctx, websocket.MessageText, b) != nil {
			stopped = true
			break
		}
		if _, _, err := c.Read(ctx); err != nil {
			stopped = true
			break
		}
	}
	if !stopped {
		t.Fatal("the feed stored 20 MB on a full disk")
	}
	select {
	case err := <-done:
		t.Fatalf("serve exited while the disk was full: %v", err)
	default:
	}
	os.Remove(ballast)
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "exiting for the supervisor") {
			t.Fatalf("serve once space freed: %v, want an error saying it exits to be restarted", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve still running 60 s after space freed:\n%s", stderr.String())
	}
}
