package annotations

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/clients"
)

// serveNotes mounts the handlers on a test server. Every room exists and
// is at tag; a request's client is its X-Client header (one test process
// plays many addresses).
func serveNotes(t testing.TB, s *Store, reading *extractor.Reading, tune func(*HTTPConfig)) (*Handlers, *httptest.Server) {
	t.Helper()
	cfg := HTTPConfig{
		Store:    s,
		Room:     func(string) (string, error) { return reading.Tag, nil },
		Reading:  func(tag string) *extractor.Reading { return reading },
		Identify: func(r *http.Request) string { return r.Header.Get("X-Client") },
	}
	if tune != nil {
		tune(&cfg)
	}
	h := NewHandlers(cfg)
	r := chi.NewRouter()
	r.Get("/rooms/{id}/notes/events", h.Events().ServeHTTP)
	r.Post("/k8s/{tag}/notes", h.LocalViews().ServeHTTP)
	r.Post("/k8s/{tag}/worksheet.md", h.LocalWorksheet().ServeHTTP)
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	return h, ts
}

// stream opens a room's event stream as client; it returns the response
// (its body open until the test ends) or the refusal.
func stream(t *testing.T, ts *httptest.Server, room, client string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", ts.URL+"/rooms/"+room+"/notes/events", nil)
	req.Header.Set("X-Client", client)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const roomB = "fedcba9876543210fedcba9876543210"

// TestEventStreamCaps: one address holds at most its share of event
// streams (with its sockets), one room at most StreamsPerRoom; a stream
// closed gives its place back.
func TestEventStreamCaps(t *testing.T) {
	s, stop := open(t, "")
	defer stop()
	reading := extractortest.Reading(t, "v1.31.0", content.Symbols())
	_, ts := serveNotes(t, s, reading, func(c *HTTPConfig) {
		c.Sockets = clients.NewSockets(3, 0)
		c.StreamsPerRoom = 5
	})

	// One address: three streams, then 429, in any room.
	var first *http.Response
	for i := range 3 {
		resp := stream(t, ts, room, "198.51.100.1")
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d of one address: %d", i+1, resp.StatusCode)
		}
		first = cmpOr(first, resp)
	}
	for _, r := range []string{room, roomB} {
		if resp := stream(t, ts, r, "198.51.100.1"); resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("a 4th stream of one address: %d, want 429", resp.StatusCode)
		}
	}
	// The room has 3 of its 5: two more addresses fit, the next does not.
	for _, c := range []string{"198.51.100.2", "198.51.100.3"} {
		if resp := stream(t, ts, room, c); resp.StatusCode != 200 {
			t.Fatalf("stream from %s: %d", c, resp.StatusCode)
		}
	}
	resp := stream(t, ts, room, "198.51.100.4")
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a 6th stream on one room: %d, want 429", resp.StatusCode)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" {
		t.Error("a refused stream without Retry-After")
	}
	// Another room is not full.
	if resp := stream(t, ts, roomB, "198.51.100.4"); resp.StatusCode != 200 {
		t.Fatalf("a stream on another room: %d", resp.StatusCode)
	}
	// One stream closes: its address and its room may open one again.
	first.Body.Close()
	code := 0
	if !testwait.Until(5*time.Second, func() bool {
		resp := stream(t, ts, room, "198.51.100.1")
		if code = resp.StatusCode; code == 200 {
			return true
		}
		resp.Body.Close()
		return false
	}) {
		t.Fatalf("a closed stream did not give its place back: %d", code)
	}
}

func cmpOr(a, b *http.Response) *http.Response {
	if a != nil {
		return a
	}
	return b
}

// TestNoteEventSharedBytes: every page of a room at one tag gets the same
// bytes for a change, rendered once.
func TestNoteEventSharedBytes(t *testing.T) {
	s, stop := open(t, "")
	defer stop()
	reading := extractortest.Reading(t, "v1.31.0", content.Symbols())
	h, ts := serveNotes(t, s, reading, nil)

	const n = 20
	var events []*sse
	for i := range n {
		resp := stream(t, ts, room, "198.51.100."+string(rune('a'+i)))
		if resp.StatusCode != 200 {
			t.Fatalf("stream %d: %d", i, resp.StatusCode)
		}
		e := &sse{br: bufio.NewReader(resp.Body)}
		if name, _ := e.next(t, 5*time.Second); name != "snapshot" {
			t.Fatalf("first event %q", name)
		}
		events = append(events, e)
	}
	if _, err := s.Put(context.Background(), room, Note{ID: "case.config", Text: "**configCh** carries `kubetypes.PodUpdate`", Author: "Ann"}, 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]string, n)
	for i, e := range events {
		wg.Go(func() {
			name, data := e.next(t, 5*time.Second)
			if name != "note" {
				t.Errorf("page %d: event %q", i, name)
			}
			got[i] = data
		})
	}
	wg.Wait()
	for i := range got {
		if got[i] != got[0] {
			t.Fatalf("page %d got other bytes than page 0:\n%s\n%s", i, got[i], got[0])
		}
	}
	if !strings.Contains(got[0], `\u003cstrong\u003econfigCh`) {
		t.Errorf("the event is not the rendered view: %s", got[0])
	}
	h.events.mu.Lock()
	renders := len(h.events.m)
	h.events.mu.Unlock()
	if renders != 1 {
		t.Errorf("%d renders kept for one change seen by %d pages, want 1", renders, n)
	}
}

// sse reads server-sent events.
type sse struct{ br *bufio.Reader }

// next returns the next event's name and data, failing after d.
func (s *sse) next(t *testing.T, d time.Duration) (name, data string) {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		for {
			l, err := s.br.ReadString('\n')
			if err != nil {
				done <- err
				return
			}
			l = strings.TrimSuffix(l, "\n")
			switch {
			case strings.HasPrefix(l, "event: "):
				name = strings.TrimPrefix(l, "event: ")
			case strings.HasPrefix(l, "data: "):
				data = strings.TrimPrefix(l, "data: ")
			case l == "" && name != "":
				done <- nil
				return
			}
		}
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("event stream: %v", err)
		}
	case <-time.After(d):
		t.Errorf("no event within %v", d)
	}
	return name, data
}

// localReq posts a reader's own notes as client.
func localReq(t testing.TB, ts *httptest.Server, client, path string, notes []map[string]any) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"notes": notes})
	req, _ := http.NewRequest("POST", ts.URL+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Client", client)
	resp, err := ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// caseNotes is n case notes of size bytes each.
func caseNotes(n, size int) []map[string]any {
	var out []map[string]any
	for i := range n {
		out = append(out, map[string]any{"id": fmt.Sprintf("case.k%d", i), "text": strings.Repeat("x", size)})
	}
	return out
}

// TestLocalNotesLimits: a reader's own notes sent to be rendered are held
// to a room's limits (8 KB a note, 400 notes, 256 KB together), with a
// clear 413, and one client's renders are rate-limited.
func TestLocalNotesLimits(t *testing.T) {
	reading := extractortest.Reading(t, "v1.31.0", content.Symbols())
	_, ts := serveNotes(t, nil, reading, nil)
	views := "/k8s/" + reading.Tag + "/notes"
	sheet := "/k8s/" + reading.Tag + "/worksheet.md"
	for _, tc := range []struct {
		name  string
		notes []map[string]any
		code  int
		want  string
	}{
		{"a note of 8 KB", caseNotes(1, MaxNoteBytes), 200, `"views"`},
		{"a note over 8 KB", caseNotes(1, MaxNoteBytes+1), 413, "a note holds at most 8 KB"},
		{"one note of 500 KB", caseNotes(1, 500<<10), 413, "at most 8 KB"},
		{"a body over the cap", caseNotes(90, MaxNoteBytes), 413, "KB together: a reader's notes hold what a room's do"},
		{"401 notes", caseNotes(401, 10), 413, "at most 400"},
		{"30 notes of 8 KB", caseNotes(30, MaxNoteBytes), 200, `"views"`},
		{"40 notes of 8 KB: over 256 KB together", caseNotes(40, MaxNoteBytes), 413, "256 KB together"},
	} {
		for _, path := range []string{views, sheet} {
			// A client of its own each: the rate is tested below.
			code, body := localReq(t, ts, tc.name+path, path, tc.notes)
			if code != tc.code || (path == views && !strings.Contains(body, tc.want)) {
				t.Errorf("%s to %s: %d %.200s, want %d with %q", tc.name, path, code, body, tc.code, tc.want)
			}
		}
	}
	// One client is charged what its render took (at least a millisecond),
	// and refused while in debt; another client is not. The debt is
	// repaid at RenderRate: at 0.01 ms a second it outlasts any wait for a
	// CPU between the two requests (at 10 ms/s it was gone in 200 ms).
	_, ts = serveNotes(t, nil, reading, func(c *HTTPConfig) { c.RenderRate, c.RenderBurst = 0.01, 2 })
	costly := make([]map[string]any, 10)
	for i := range costly {
		costly[i] = map[string]any{"id": fmt.Sprintf("case.k%d", i), "text": strings.Repeat("- **configCh** `x` [l](https://example.com) _y_\n", 2<<10/48)}
	}
	if code, body := localReq(t, ts, "203.0.113.5", views, costly); code != 200 {
		t.Fatalf("first costly render: %d %s", code, body)
	}
	code, body := localReq(t, ts, "203.0.113.5", views, caseNotes(1, 10))
	if code != http.StatusTooManyRequests || !strings.Contains(body, "in a moment") {
		t.Errorf("a client in debt: %d %s, want 429 with advice", code, body)
	}
	if code, _ := localReq(t, ts, "203.0.113.6", views, caseNotes(1, 10)); code != 200 {
		t.Errorf("another client: %d", code)
	}
}

// TestRoomWriteChargedByRender: a reader writing room notes that are
// costly to render is charged the render, and refused while in debt;
// another reader is not.
func TestRoomWriteChargedByRender(t *testing.T) {
	s, stop := open(t, "")
	defer stop()
	reading := extractortest.Reading(t, "v1.31.0", content.Symbols())
	// Repaid at 0.01 ms a second: the debt lasts however slowly the
	// writes come. Each write costs a token and its render at least one.
	h, _ := serveNotes(t, s, reading, func(c *HTTPConfig) { c.RenderRate, c.RenderBurst = 0.01, 10 })
	r := chi.NewRouter()
	r.Put("/rooms/{id}/notes/{note}", h.Put().ServeHTTP)
	ts := httptest.NewServer(r)
	defer ts.Close()
	put := func(client, note, text string) (int, string) {
		b, _ := json.Marshal(map[string]any{"text": text, "author": "Eve"})
		req, _ := http.NewRequest("PUT", ts.URL+"/rooms/"+room+"/notes/"+note, bytes.NewReader(b))
		req.Header.Set("X-Client", client)
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	costly := strings.Repeat("- **configCh** `x` [l](https://example.com) _y_\n", (MaxNoteBytes-300)/48)
	refused := false
	for i := 0; i < 20 && !refused; i++ {
		code, body := put("203.0.113.7", fmt.Sprintf("case.k%d", i), costly)
		switch code {
		case http.StatusOK:
		case http.StatusTooManyRequests:
			refused = true
		default:
			t.Fatalf("write %d: %d %s", i, code, body)
		}
	}
	if !refused {
		t.Fatal("20 costly writes were all taken: a write is not charged its render")
	}
	if code, body := put("203.0.113.8", "sentence", "plain"); code != 200 {
		t.Errorf("another reader: %d %s", code, body)
	}
}

// TestAuthorIsTheServers: a write is signed with HTTPConfig.Author's name,
// whatever "author" its body gives; a *ForbiddenError refuses it (403,
// with its advice) and stores nothing.
func TestAuthorIsTheServers(t *testing.T) {
	s, stop := open(t, "")
	defer stop()
	reading := extractortest.Reading(t, "v1.31.0", content.Symbols())
	h, _ := serveNotes(t, s, reading, func(c *HTTPConfig) {
		c.Author = func(r *http.Request, id string) (string, error) {
			if r.Header.Get("X-Session") == "" {
				return "", &ForbiddenError{Msg: "give your name on the class page first"}
			}
			return r.Header.Get("X-Session"), nil
		}
	})
	r := chi.NewRouter()
	r.Put("/rooms/{id}/notes/{note}", h.Put().ServeHTTP)
	ts := httptest.NewServer(r)
	defer ts.Close()
	put := func(session, note string) (int, string) {
		b, _ := json.Marshal(map[string]any{"text": "words", "author": "Someone Else"})
		req, _ := http.NewRequest("PUT", ts.URL+"/rooms/"+room+"/notes/"+note, bytes.NewReader(b))
		req.Header.Set("X-Client", "203.0.113.1")
		if session != "" {
			req.Header.Set("X-Session", session)
		}
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}
	if code, body := put("Ann", "sentence"); code != 200 || !strings.Contains(body, `"author":"Ann"`) {
		t.Errorf("Ann's write: %d %s, want signed Ann", code, body)
	}
	if code, body := put("", "case.config"); code != http.StatusForbidden || !strings.Contains(body, "class page") {
		t.Errorf("a write without a session: %d %s, want 403", code, body)
	}
	for _, n := range s.Notes(room) {
		if n.Author != "Ann" {
			t.Errorf("note %s signed %q", n.ID, n.Author)
		}
	}
}
