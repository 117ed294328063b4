package server

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/wstest"
)

// smallDisk mounts a tmpfs of sizeMB at a new directory, unmounted when
// the test ends; it skips the test where that cannot be done (not root),
// but under CI (CI=true) it fails: CI runs as root, and must run these.
func smallDisk(t *testing.T, sizeMB string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+sizeMB+"m", "tmpfs", dir).CombinedOutput(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("cannot mount a tmpfs, which CI must (it runs as root): %v %s", err, out)
		}
		t.Skipf("cannot mount a tmpfs (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fill takes mb MB of the disk at dir, in a file removed by the returned func.
func fill(t *testing.T, dir string, mb int) func() {
	t.Helper()
	name := filepath.Join(dir, "ballast")
	f, err := os.Create(name)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 1<<20)
	for range mb {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	return func() { os.Remove(name) }
}

// TestFullDisk: on a nearly full disk the server refuses to start with an
// error naming the directory and what needs the space; running, it refuses
// new feeds with 507 and a reason, takes them again once space frees, and
// the feeds it has keep their lines.
func TestFullDisk(t *testing.T) {
	t.Parallel()
	disk := smallDisk(t, "40")
	data := filepath.Join(disk, "data")
	feedMB := func(c *Config) { c.FeedBytes = 4 << 20 } // a feed needs 4 MB + 16 MB free

	// At start: 24 MB of 40 taken leaves less than 20.
	free := fill(t, disk, 24)
	_, err := Open(Config{DefaultTag: "v1.37.2", CacheDir: t.TempDir(), DataDir: data, Getenv: func(string) string { return "" }, DemoPeriod: -1, FeedBytes: 4 << 20})
	if !errors.Is(err, broker.ErrNoSpace) || !strings.Contains(err.Error(), filepath.Join(data, "nats")) || !strings.Contains(err.Error(), "JetStream store") {
		t.Fatalf("start on a full disk: %v; want ErrNoSpace naming %s and the JetStream store", err, data)
	}
	t.Logf("start: %v", err)
	free()

	_, ts := newRoomServer(t, data, feedMB)
	ingest := func(feed string) (int, string) {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+testToken)
		c, resp, err := websocket.Dial(t.Context(), wstest.URL(ts, "/feeds/"+feed+"/ingest"), &websocket.DialOptions{HTTPHeader: h})
		if err == nil {
			c.Close(websocket.StatusNormalClosure, "")
			return http.StatusSwitchingProtocols, ""
		}
		if resp == nil {
			t.Fatalf("ingest %s: %v", feed, err)
		}
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := ingest("first"); code != http.StatusSwitchingProtocols {
		t.Fatalf("a feed with space free: %d %s", code, body)
	}
	// Running: the disk fills; a new feed is refused, with why.
	free = fill(t, disk, 24)
	code, body := ingest("second")
	if code != http.StatusInsufficientStorage || !strings.Contains(body, "disk is nearly full") || !strings.Contains(body, "MB free") {
		t.Errorf("a new feed on a full disk: %d %q, want 507 saying why", code, body)
	}
	// The feed it has is still taken.
	if code, body := ingest("first"); code != http.StatusSwitchingProtocols {
		t.Errorf("the existing feed on a full disk: %d %s", code, body)
	}
	// Space frees: the new feed is taken.
	free()
	if code, body := ingest("second"); code != http.StatusSwitchingProtocols {
		t.Errorf("a new feed once space freed: %d %s", code, body)
	}
}

// syncBuffer is a log's output, read while the server writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestFullCacheDirWarns: a cache dir without room to fetch a tag is named
// at start, with what needs the space; the server still starts, to serve
// the tags cached there.
func TestFullCacheDirWarns(t *testing.T) {
	t.Parallel()
	cache := smallDisk(t, "40")
	var log syncBuffer
	_, ts := newRoomServer(t, "", func(c *Config) {
		c.CacheDir = cache
		c.Logger = slog.New(slog.NewTextHandler(&log, nil))
	})
	if !strings.Contains(log.String(), "fetching a tag") || !strings.Contains(log.String(), cache) || !strings.Contains(log.String(), "MB free") {
		t.Errorf("no warning naming the cache dir and what needs space:\n%s", log.String())
	}
	resp, err := http.Get(ts.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}
