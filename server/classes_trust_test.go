package server

// What a class's instructor can rely on (issues 35 and 39): every note is
// signed by the server, from the writer's session, never by the body; an
// instructor watching is no reader; look-alike names are told apart; and
// no client takes the server's rooms through a class, a class's budget
// as one student, or the roster's hellos from others.

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/internal/wstest"
)

// noteAuthors are the authors of room's notes, by note id.
func noteAuthors(t testing.TB, ts *httptest.Server, room string) map[string]string {
	t.Helper()
	code, body := httpGet(t, ts.URL+"/rooms/"+room+"/notes")
	if code != 200 {
		t.Fatalf("notes of %s: %d %s", room, code, body)
	}
	var v struct {
		Views []struct{ ID, Author string }
	}
	json.Unmarshal([]byte(body), &v)
	out := map[string]string{}
	for _, n := range v.Views {
		out[n.ID] = n.Author
	}
	return out
}

func TestAuthorIsTheServers(t *testing.T) {
	_, ts := newRoomServer(t, "", nil)
	ctx := testCtx(t)

	t.Run("in a class's room, the session's student", func(t *testing.T) {
		class, _ := createClass(t, ts, url.Values{"name": {"Authors"}})
		ann := student(t, ts.URL, class, "Ann")
		room, _, code := startRoomAs(t, ann, ts.URL, class)
		if code != http.StatusSeeOther {
			t.Fatalf("Ann's room: %d", code)
		}
		if code, body := putAs(t, ann, ts, room, "sentence", "Mine.", "Someone Else"); code != 200 {
			t.Fatalf("Ann's note: %d %s", code, body)
		}
		var a string
		testwait.For(t, 10*time.Second, "Ann's note in the room's list", func() bool {
			a = noteAuthors(t, ts, room)["sentence"]
			return a != ""
		})
		if a != "Ann" {
			t.Errorf("a note Ann wrote with \"author\":\"Someone Else\" is signed %q, want Ann", a)
		}
	})

	t.Run("in a room of no class, the name its reader gave there", func(t *testing.T) {
		room, key := createRoom(t, ts)
		bob := newJar()
		dialRoomWith(t, ctx, ts, bob, room, "key", key, "Bob")
		if code, body := putAs(t, bob, ts, room, "sentence", "Bob's.", "Someone Else"); code != 200 {
			t.Fatalf("Bob's note: %d %s", code, body)
		}
		stranger := newJar()
		if code, body := putAs(t, stranger, ts, room, "writer.config", "Whose?", "Bob"); code != 200 {
			t.Fatalf("a note from a browser that gave no name: %d %s", code, body)
		}
		var got map[string]string
		testwait.For(t, 10*time.Second, "both notes in the room's list", func() bool { // the list is the notes' mirror, a moment behind a write
			got = noteAuthors(t, ts, room)
			return got["sentence"] != "" && got["writer.config"] != ""
		})
		if got["sentence"] != "Bob" || got["writer.config"] != "anonymous" {
			t.Errorf("authors %v: want Bob's signed Bob, the other anonymous", got)
		}
	})
}

// An instructor's read-only watch (room.js's ?ro=1 joins with watch) is
// never one of the room's readers: not in its hand-in, its overview or
// the class page's list.
func TestWatcherIsNoReader(t *testing.T) {
	_, ts := newRoomServer(t, "", nil)
	ctx := testCtx(t)
	class, key := createClass(t, ts, url.Values{"name": {"Watched"}})
	ann := student(t, ts.URL, class, "Ann")
	room, rkey, _ := startRoomAs(t, ann, ts.URL, class)
	dialRoomWith(t, ctx, ts, ann, room, "key", rkey, "Ann")
	// The instructor, who is a student of the class too in this browser.
	w := student(t, ts.URL, class, "Teacher")
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/rooms/"+room+"/ws"), &websocket.DialOptions{HTTPClient: w})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	wc := &roomClient{c: c}
	wc.send(t, ctx, map[string]any{"t": "join", "name": "instructor (watching)", "watch": true})
	wc.until(t, ctx, "the watcher's welcome", func(m map[string]any) bool { return m["t"] == "welcome" })
	testwait.For(t, 5*time.Second, "Ann in the overview", func() bool {
		o := overviewOf(t, ts, class, key)
		return len(o.Rooms) == 1 && len(o.Rooms[0].Readers) >= 1
	})
	o := overviewOf(t, ts, class, key)
	if r := o.Rooms[0].Readers; strings.Join(r, ",") != "Ann" {
		t.Errorf("the overview's readers %v, want Ann alone", r)
	}
	code, md := httpGet(t, ts.URL+"/rooms/"+room+"/worksheet.md")
	if code != 200 || strings.Contains(md, "watching") || strings.Contains(md, "Teacher") || !strings.Contains(md, "Readers: Ann\n") {
		t.Errorf("worksheet.md (%d) names the watcher, or not Ann:\n%.400s", code, md)
	}
	_, pairs := httpGet(t, ts.URL+"/classes/"+class+"/pairs.json")
	if strings.Contains(pairs, "watching") || strings.Contains(pairs, "Teacher") {
		t.Errorf("pairs.json lists the watcher: %s", pairs)
	}
}

// Names that look alike are one name: on a class's roster the second is
// refused with why; in a room of no class the second reader is numbered.
func TestLookAlikeNames(t *testing.T) {
	_, ts := newRoomServer(t, "", nil)
	ctx := testCtx(t)
	class, key := createClass(t, ts, url.Values{"name": {"Names"}})
	if code, body := helloAs(t, newJar(), ts.URL, class, "Anna"); code != 200 {
		t.Fatalf("Anna: %d %s", code, body)
	}
	for _, n := range []string{"\u0410nna", "Anna\ufe0f", "An\u034fna", "Anna\u00a0", "ANNA", "Ａnna", "Anna\u200f", "An\u200bna"} {
		code, body := helloAs(t, newJar(), ts.URL, class, n)
		if code != http.StatusConflict || !strings.Contains(body, "a student named Anna is already in this class; add an initial") {
			t.Errorf("%q beside Anna: %d %s, want 409", n, code, body)
		}
	}
	if o := overviewOf(t, ts, class, key); len(o.Students) != 1 {
		t.Errorf("roster %+v, want Anna alone", o.Students)
	}

	room, rkey := createRoom(t, ts)
	a := dialRoomWith(t, ctx, ts, newJar(), room, "key", rkey, "Sam")
	dialRoomWith(t, ctx, ts, newJar(), room, "", "", "Ѕаm\u200f")
	a.until(t, ctx, "two readers, told apart", func(m map[string]any) bool {
		if m["t"] != "state" {
			return false
		}
		rs, _ := m["readers"].([]any)
		var got []string
		for _, r := range rs {
			got = append(got, r.(map[string]any)["name"].(string))
		}
		return strings.Join(got, ",") == "Sam,Ѕаm (2)"
	})
	if _, md := httpGet(t, ts.URL+"/rooms/"+room+"/worksheet.md"); !strings.Contains(md, "Readers: Sam, Ѕаm (2)\n") {
		t.Errorf("the hand-in does not tell the two apart:\n%.300s", md)
	}
}

// behind makes every request of c come from client addr, as a trusted
// proxy names it.
type behind struct {
	addr string
	rt   http.RoundTripper
}

func (b behind) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-Forwarded-For", b.addr)
	return b.rt.RoundTrip(r)
}

// from is a browser of its own at client address addr.
func from(addr string) *http.Client {
	c := newJar()
	c.Transport = behind{addr, http.DefaultTransport}
	return c
}

func trustLoopback(c *Config) {
	c.TrustedProxies, _ = clients.ParseTrustedProxies("127.0.0.0/8,::1/128")
}

// createClassFrom makes a class from browser c: its id, or the code it
// was refused with.
func createClassFrom(t testing.TB, c *http.Client, ts string, form url.Values) (string, int) {
	t.Helper()
	req, _ := http.NewRequest("POST", ts+"/classes", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		return "", resp.StatusCode
	}
	u, _ := url.Parse(resp.Header.Get("Location"))
	return strings.TrimPrefix(u.Path, "/classes/"), resp.StatusCode
}

// One anonymous address, with classes and students of its own, cannot
// leave another address without a room: its classes hold 12 rooms in all,
// and classes leave a reserve of --max-rooms to rooms of no class.
func TestAnonymousClassLeavesRooms(t *testing.T) {
	_, ts := newRoomServer(t, "", func(c *Config) { trustLoopback(c); c.MaxRooms = 16 })
	a := from("198.51.100.1")
	if _, code := createClassFrom(t, a, ts.URL, url.Values{"budget": {"16"}}); code != http.StatusBadRequest {
		t.Errorf("an anonymous class of 16 rooms: %d, want 400", code)
	}
	started := 0
	for i := range 3 {
		class, code := createClassFrom(t, a, ts.URL, url.Values{"budget": {"12"}})
		if code != http.StatusSeeOther {
			t.Fatalf("class %d: %d", i+1, code)
		}
		for j := range 7 {
			st := from("198.51.100.1")
			if code, body := helloAs(t, st, ts.URL, class, fmt.Sprintf("S%d", j)); code != 200 {
				t.Fatalf("hello: %d %s", code, body)
			}
			for range 2 {
				if _, _, code := startRoomAs(t, st, ts.URL, class); code == http.StatusSeeOther {
					started++
				}
			}
		}
	}
	if started != 12 {
		t.Errorf("one anonymous address's classes started %d rooms, want 12", started)
	}
	for i := range 4 {
		resp := postRoomFrom(t, ts, fmt.Sprintf("203.0.113.%d", i+1))
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("another address's room %d: %d", i+1, resp.StatusCode)
		}
	}
}

// postRoomFrom starts a room of no class from client addr.
func postRoomFrom(t testing.TB, ts *httptest.Server, addr string) *http.Response {
	t.Helper()
	return postRoom(t, ts, "Origin", ts.URL, "Sec-Fetch-Site", "same-origin", "X-Forwarded-For", addr)
}

// One student holds two open rooms of a class; a room needs a student;
// and a room the instructor ends gives its places back at once, the
// class's budget's, the student's and --max-rooms'.
func TestStudentRooms(t *testing.T) {
	_, ts := newRoomServer(t, "", func(c *Config) { trustLoopback(c); c.MaxRooms = 8; c.ClassToken = "tok" })
	class, key := createClass(t, ts, url.Values{"budget": {"4"}, "class_token": {"tok"}})
	if _, _, code := startRoomAs(t, newJar(), ts.URL, class); code != http.StatusForbidden {
		t.Errorf("a room from a browser that gave no name: %d, want 403", code)
	}
	ann := student(t, ts.URL, class, "Ann")
	var mine []string
	for i := range 3 {
		id, _, code := startRoomAs(t, ann, ts.URL, class)
		if i == 2 {
			if code != http.StatusTooManyRequests {
				t.Errorf("Ann's 3rd room: %d, want 429", code)
			}
			break
		}
		if code != http.StatusSeeOther {
			t.Fatalf("Ann's room %d: %d", i+1, code)
		}
		mine = append(mine, id)
	}
	bob := student(t, ts.URL, class, "Bob")
	for i := range 2 {
		if _, _, code := startRoomAs(t, bob, ts.URL, class); code != http.StatusSeeOther {
			t.Fatalf("Bob's room %d: %d", i+1, code)
		}
	}
	// --max-rooms 8, the classes' 4 held: the reserve's 4 go to rooms of
	// no class, and then there is none.
	for i := range 5 {
		resp := postRoomFrom(t, ts, fmt.Sprintf("203.0.113.%d", i+1))
		if want := map[bool]int{true: http.StatusSeeOther, false: http.StatusServiceUnavailable}[i < 4]; resp.StatusCode != want {
			t.Fatalf("room %d of no class: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
	if code, body := instructorPost(t, ts.URL, "/classes/"+class+"/rooms/"+mine[0]+"/end", key); code != 200 {
		t.Fatalf("end Ann's room: %d %s", code, body)
	}
	if _, _, code := startRoomAs(t, ann, ts.URL, class); code != http.StatusSeeOther {
		t.Errorf("Ann's room after the instructor ended one: %d, want 303 at once", code)
	}
	if code, body := instructorPost(t, ts.URL, "/classes/"+class+"/rooms/"+mine[1]+"/end", key); code != 200 {
		t.Fatalf("end Ann's other room: %d %s", code, body)
	}
	if resp := postRoomFrom(t, ts, "203.0.113.9"); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a room of no class after a class's room ended: %d, want 303 at once", resp.StatusCode)
	}
	if code, _ := instructorGet(t, ts, "/classes/"+class+"/handins.zip", key); code != 200 {
		t.Errorf("the hand-ins with rooms ended: %d", code)
	}
}

// One client's flood of hellos spends its own rate, not another's; and a
// roster's cap refuses new names, never a student already on it.
func TestHelloFlood(t *testing.T) {
	_, ts := newRoomServer(t, "", trustLoopback)
	class, _ := createClass(t, ts, url.Values{"name": {"Flooded"}})
	flood := from("198.51.100.9")
	refused := 0
	for i := range 400 {
		if code, _ := helloAs(t, flood, ts.URL, class, fmt.Sprintf("Bot %d", i)); code == http.StatusTooManyRequests {
			refused++
		}
	}
	if refused == 0 {
		t.Error("400 hellos from one client at once: none refused")
	}
	t.Logf("400 hellos from one client: %d refused (429)", refused)
	for i := range 40 { // a classroom behind one NAT
		if code, body := helloAs(t, from("203.0.113.50"), ts.URL, class, fmt.Sprintf("Student %d", i)); code != 200 {
			t.Fatalf("student %d behind the NAT, after another client's flood: %d %s", i+1, code, body)
		}
	}
}

// --ipv6-prefix 48: one /48 is one client for the classes it makes.
func TestClassesIPv6Prefix(t *testing.T) {
	_, ts := newRoomServer(t, "", func(c *Config) { trustLoopback(c); c.IPv6Prefix = 48 })
	made := 0
	for i := range 8 {
		if _, code := createClassFrom(t, from(fmt.Sprintf("2001:db8:7:%x::1", i+1)), ts.URL, url.Values{}); code == http.StatusSeeOther {
			made++
		}
	}
	if made != 5 {
		t.Errorf("one /48 made %d classes, want 5", made)
	}
	if _, code := createClassFrom(t, from("2001:db8:8::1"), ts.URL, url.Values{}); code != http.StatusSeeOther {
		t.Errorf("another /48: %d", code)
	}
}

// 300 hellos at once with made-up ids, each from a client of its own:
// the roster stores at most its cap, and a student who already has a
// session is never refused by the full roster.
func TestRosterCapUnderConcurrency(t *testing.T) {
	_, ts := newRoomServer(t, "", trustLoopback)
	class, key := createClass(t, ts, url.Values{"name": {"Crowded"}})
	real := from("203.0.113.200")
	if code, body := helloAs(t, real, ts.URL, class, "Real Student"); code != 200 {
		t.Fatalf("the real student: %d %s", code, body)
	}
	var wg sync.WaitGroup
	codes := make([]int, 300)
	start := time.Now()
	for i := range codes {
		wg.Go(func() {
			codes[i], _ = helloAs(t, from(fmt.Sprintf("198.51.%d.%d", i/250, i%250+1)), ts.URL, class, fmt.Sprintf("Made up %d", i))
		})
	}
	wg.Wait()
	t.Logf("300 concurrent hellos answered in %v", time.Since(start).Round(time.Millisecond))
	taken := 0
	for _, c := range codes {
		switch c {
		case 200:
			taken++
		case http.StatusConflict:
		default:
			t.Errorf("a hello answered %d", c)
		}
	}
	if n := len(overviewOf(t, ts, class, key).Students); n != classes.MaxStudents || taken != classes.MaxStudents-1 {
		t.Errorf("%d on the roster, %d hellos taken: want %d, %d", n, taken, classes.MaxStudents, classes.MaxStudents-1)
	}
	if code, body := helloAs(t, real, ts.URL, class, "Real Student"); code != 200 {
		t.Errorf("the real student on the full roster: %d %s", code, body)
	}
	if code, _ := helloAs(t, from("203.0.113.201"), ts.URL, class, "Late"); code != http.StatusConflict {
		t.Errorf("a new student on the full roster: %d, want 409", code)
	}
}
