package server

// Tests of what any client can send: bodies bounded by route, nothing
// spooled to disk.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/fixture"
)

// countFiles counts the files under dir.
func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// formPadded streams a URL-encoded form of a tag and size bytes of
// padding, from one small buffer however large size is.
func formPadded(size int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		chunk := []byte(strings.Repeat("x", 64<<10))
		io.WriteString(pw, "tag="+fixture.Tag+"&pad=")
		for n := 0; n < size; n += len(chunk) {
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return pr
}

func TestRoomFormBodyBounded(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	_, ts := newRoomServer(t, t.TempDir(), nil)
	before := countFiles(t, tmp)

	post := func(body io.Reader, contentType string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("POST", ts.URL+"/rooms", body)
		req.Header.Set("Content-Type", contentType)
		req.Header.Set("Origin", ts.URL)
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatalf("POST /rooms: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	const size = 50 << 20
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	alloc := ms.TotalAlloc

	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		mw.WriteField("tag", fixture.Tag)
		f, err := mw.CreateFormFile("upload", "big.bin")
		if err != nil { // the server answered without reading
			return
		}
		chunk := []byte(strings.Repeat("x", 64<<10))
		for n := 0; n < size; n += len(chunk) {
			if _, err := f.Write(chunk); err != nil {
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	status, body := post(pr, mw.FormDataContentType())
	pr.CloseWithError(io.ErrClosedPipe) // stop the writer if the server did not read it all
	if status != http.StatusUnsupportedMediaType || !strings.Contains(body, "application/x-www-form-urlencoded") {
		t.Errorf("50 MB multipart POST /rooms: %d %q, want 415 naming the form's type", status, body)
	}

	status, body = post(formPadded(size), "application/x-www-form-urlencoded")
	if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, fmt.Sprint(roomFormBytes)) {
		t.Errorf("50 MB URL-encoded POST /rooms: %d %q, want 413 naming the limit", status, body)
	}

	runtime.ReadMemStats(&ms)
	t.Logf("two 50 MB bodies (multipart, URL-encoded): %.1f MB allocated in the test binary", float64(ms.TotalAlloc-alloc)/(1<<20))
	if got := ms.TotalAlloc - alloc; got > 16<<20 {
		t.Errorf("two 50 MB bodies allocated %d MB, want them never held", got>>20)
	}
	if after := countFiles(t, tmp); after != before {
		t.Errorf("files in TMPDIR: %d before, %d after: a body was spooled to disk", before, after)
	}
	// The form the site's own page sends still makes a room.
	if id, key := createRoom(t, ts); id == "" || key == "" {
		t.Fatal("no room")
	}
}

// TestAccessLogRedactsRooms: the access log names a room by the first
// characters of its id, never the whole id (its viewer link) or a key,
// whatever logger the server is given.
func TestAccessLogRedactsRooms(t *testing.T) {
	t.Parallel()
	var out syncBuffer
	log := slog.New(slog.NewTextHandler(&out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	_, ts := newRoomServer(t, t.TempDir(), func(c *Config) { c.Logger = log })
	id, key := createRoom(t, ts)
	for _, path := range []string{"/rooms/" + id + "?k=" + key, "/rooms/" + id + "/pod-workers", "/rooms/" + id + "/notes", "/feeds/room-" + id + "/export"} {
		httpGet(t, ts.URL+path)
	}
	var requests []string
	for line := range strings.Lines(out.String()) {
		if strings.Contains(line, "msg=request") {
			requests = append(requests, line)
		}
	}
	if len(requests) < 4 {
		t.Fatalf("%d requests logged at debug, want 4 or more:\n%s", len(requests), out.String())
	}
	for _, line := range requests {
		if strings.Contains(line, id) || strings.Contains(line, key) {
			t.Errorf("access log shows a room's id or key: %s", line)
		}
		if !strings.Contains(line, id[:6]+"…") && !strings.Contains(line, "path=/rooms ") {
			t.Errorf("access log does not name the room by its id's start: %s", line)
		}
	}
}

// TestReadTimeoutSparesStreams: a server whose ReadTimeout bounds slow
// bodies (serve --read-timeout) does not cut off what sends none and lives
// longer: a room's note event stream and a feed's websocket. (net/http
// lifts the read deadline once a body is read, or at once when there is
// none, and a hijacked connection has none: this keeps it so.)
func TestReadTimeoutSparesStreams(t *testing.T) {
	const readTimeout = 500 * time.Millisecond
	s, _ := newRoomServer(t, t.TempDir(), nil)
	ts := httptest.NewUnstartedServer(s)
	ts.Config.ReadTimeout = readTimeout
	ts.Start()
	defer ts.Close()
	id, _ := createRoom(t, ts)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/rooms/"+id+"/notes/events", nil)
	events, err := http.DefaultClient.Do(req)
	if err != nil || events.StatusCode != http.StatusOK {
		t.Fatalf("note events: %v %v", err, events)
	}
	defer events.Body.Close()
	streamEnded := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, events.Body)
		streamEnded <- fmt.Errorf("ended (%v)", err)
	}()
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(ts.URL, "http")+"/feeds/room-"+id+"/ws", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	socketEnded := make(chan error, 1)
	go func() {
		for {
			if _, _, err := ws.Read(ctx); err != nil {
				socketEnded <- err
				return
			}
		}
	}()

	time.Sleep(3 * readTimeout) // sleep: the read timeout passes, three times over, with the streams open
	select {
	case err := <-streamEnded:
		t.Errorf("the note event stream %v past the read timeout", err)
	case err := <-socketEnded:
		t.Errorf("the feed's websocket ended past the read timeout: %v", err)
	default:
	}
	if err := ws.Ping(ctx); err != nil {
		t.Errorf("ping the feed's websocket past the read timeout: %v", err)
	}
}
