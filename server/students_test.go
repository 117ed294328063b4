package server

// A class's students as the tests play them: each a browser of its own
// (a cookie jar) that gave its name on the class page, so holds the
// class's session. The helpers that start a class's room, join it and
// write in it (startClassRoom, dialRoom, putNote) act as the student of
// that room, so that a test reads as a class does.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/rooms"
)

var (
	students    sync.Map // class + "/" + name → *http.Client holding that student's session
	roomClass   sync.Map // room id → its class's id, for the rooms startClassRoom started
	roomWriter  sync.Map // room id → the client of the student who writes its notes
	starterSeq  atomic.Int64
	jarClientMu sync.Mutex
)

// newJar is a client with a cookie jar of its own, which follows no
// redirect.
func newJar() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// helloAs posts name to class's hello from browser c, as the class page does.
func helloAs(t testing.TB, c *http.Client, ts, class, name string) (int, string) {
	t.Helper()
	// An id as pages once sent, which the server does not read.
	sid, _ := rooms.NewSecret()
	body, _ := json.Marshal(map[string]string{"id": sid, "name": name})
	req, _ := http.NewRequest("POST", ts+"/classes/"+class+"/hello", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", ts)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, b.String()
}

// student is the browser of class's student named name, who gave their
// name on the class page (once: the same browser after).
func student(t testing.TB, ts, class, name string) *http.Client {
	t.Helper()
	jarClientMu.Lock()
	defer jarClientMu.Unlock()
	if c, ok := students.Load(class + "/" + name); ok {
		return c.(*http.Client)
	}
	c := newJar()
	if code, body := helloAs(t, c, ts, class, name); code != 200 {
		t.Fatalf("hello %s: %d %s", name, code, body)
	}
	students.Store(class+"/"+name, c)
	return c
}

// startRoomAs starts a room of class from browser c: its id and driver
// key, or the code it was refused with.
func startRoomAs(t testing.TB, c *http.Client, ts, class string) (id, key string, code int) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts+"/classes/"+class+"/rooms", strings.NewReader(""))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", ts)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return "", "", resp.StatusCode
	}
	u, _ := url.Parse(resp.Header.Get("Location"))
	id, _ = strings.CutPrefix(u.Path, "/rooms/")
	roomClass.Store(id, class)
	if _, ok := roomWriter.Load(id); !ok {
		roomWriter.Store(id, c)
	}
	return id, u.Query().Get("k"), resp.StatusCode
}

// starter is a new student of class, who starts a room.
func starter(t testing.TB, ts, class string) *http.Client {
	return student(t, ts, class, fmt.Sprintf("Starter %d", starterSeq.Add(1)))
}

// isStarter reports whether name is a student starter made.
func isStarter(name string) bool { return strings.HasPrefix(name, "Starter ") }

// clientIn is the browser that acts in room as name: the class's student
// of that name in a class's room, the reader who wrote as name in another
// (writerFor), else the default client.
func clientIn(t testing.TB, ts, room, name string) *http.Client {
	class, ok := roomClass.Load(room)
	if name == "" {
		return http.DefaultClient
	}
	if !ok {
		if c, ok := readers.Load(room + "/" + name); ok {
			return c.(*http.Client)
		}
		return http.DefaultClient
	}
	return student(t, ts, class.(string), name)
}

// writerOf is the browser that writes room's notes in putNote.
func writerOf(room string) *http.Client {
	if c, ok := roomWriter.Load(room); ok {
		return c.(*http.Client)
	}
	return http.DefaultClient
}

// putAs writes note id of room from browser c, with an author in the
// body as an old page sent it: its code and body.
func putAs(t testing.TB, c *http.Client, ts *httptest.Server, room, id, text, author string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"text": text, "author": author, "rev": 0})
	req, _ := http.NewRequest("PUT", ts.URL+"/rooms/"+room+"/notes/"+id, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", ts.URL)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	out.ReadFrom(resp.Body)
	return resp.StatusCode, out.String()
}

var readers sync.Map // room id + "/" + name → the browser of the reader who gave name in the room

// readerIn is the browser of the reader named name in room (of no
// class), at the server at base: it joined the room's socket under that
// name once, so that the room knows its reader cookie by the name.
func readerIn(t testing.TB, base, room, name string) *http.Client {
	t.Helper()
	jarClientMu.Lock()
	defer jarClientMu.Unlock()
	if c, ok := readers.Load(room + "/" + name); ok {
		return c.(*http.Client)
	}
	c := newJar()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+"/rooms/"+room+"/ws", &websocket.DialOptions{HTTPClient: c})
	if err != nil {
		t.Fatalf("%s joins %s: %v", name, room, err)
	}
	defer conn.Close(websocket.StatusNormalClosure, "")
	rc := &roomClient{c: conn}
	rc.send(t, ctx, map[string]any{"t": "join", "name": name})
	rc.until(t, ctx, name+"'s welcome", func(m map[string]any) bool { return m["t"] == "welcome" })
	readers.Store(room+"/"+name, c)
	return c
}

// writerFor is the browser a note's write (or a pin's POST) in the room u
// names acts as:
// the class's student, or the room's reader, of the name an old test's
// body gives as its "author" (which the server does not read).
func writerFor(t testing.TB, method, u string, body any) *http.Client {
	t.Helper()
	m, _ := body.(map[string]any)
	name, _ := m["author"].(string)
	pu, err := url.Parse(u)
	if name == "" || err != nil || (method != "PUT" && method != "DELETE" && method != "POST") {
		return http.DefaultClient
	}
	rest, ok := strings.CutPrefix(pu.Path, "/rooms/")
	room, what, _ := strings.Cut(rest, "/")
	if !ok || !(strings.HasPrefix(what, "notes/") || what == "pins") {
		return http.DefaultClient
	}
	base := pu.Scheme + "://" + pu.Host
	if class, ok := roomClass.Load(room); ok {
		return student(t, base, class.(string), name)
	}
	return readerIn(t, base, room, name)
}
