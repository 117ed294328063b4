package server

// Quiz mode gives nothing away: every response a student can ask for in
// quiz mode (serve --quiz, and the rooms of a class that hides the notes
// on a server without it) is searched for the answers, derived from the
// real Reading at the default tag: each case's writer functions and the
// file:line of every place that sends on or feeds its channel, each set's
// file:line, path and type name, each element type. None may be there but
// what the request itself said. The same requests to a server without
// quiz mode do find them (so that the test tests).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/annotations"
	"github.com/syncloop/syncloop/server/internal/fixture"
)

// answerStrings are what the worksheet asks for at r's tag, as a page, a
// JSON document or a check could spell them.
func answerStrings(r *extractor.Reading) []string {
	var out []string
	add := func(s ...string) {
		for _, s := range s {
			if s != "" && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	short := func(sym string) string { // pkg/kubelet/config.(*podStorage).Merge → podStorage).Merge
		return strings.NewReplacer("(*", "", "(", "", ")", "").Replace(path.Base(sym))
	}
	for _, c := range r.Function.Cases {
		add(c.Type)
		for _, w := range c.Writers {
			add(w.Func, short(w.Func), fmt.Sprintf("%s:%d", w.File, w.Line), fmt.Sprintf("%s:%d", path.Base(w.File), w.Line), w.File)
		}
		// Another symbol's place: what feeds the sender, what starts its
		// goroutine, where the channel is made.
		for _, sites := range [][]extractor.Site{c.Upstream, c.Goroutine, c.Made} {
			for _, s := range sites {
				add(fmt.Sprintf("%s:%d", s.File, s.Line), fmt.Sprintf("%s:%d", path.Base(s.File), s.Line))
			}
		}
	}
	for _, d := range r.TwoSets {
		add(d.Name, d.File, fmt.Sprintf("%s:%d", d.File, d.Line), fmt.Sprintf("%s:%d", path.Base(d.File), d.Line))
	}
	return out
}

// leaks are the answer strings in body that the request did not say itself.
func leaks(answers []string, body, asked string) []string {
	var found []string
	for _, a := range answers {
		if strings.Contains(body, a) && !strings.Contains(asked, a) {
			found = append(found, a)
		}
	}
	return found
}

// withoutSource is a JSON document with its verbatim source removed (the
// function's and helpers' text, doc comments): the source is what the
// reader reads, not an answer. Everything else stays to be searched.
func withoutSource(t *testing.T, body string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("not JSON: %v: %.200s", err, body)
	}
	var strip func(any)
	strip = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if _, isText := e.(string); isText && (k == "text" || k == "doc") {
					delete(v, k)
					continue
				}
				strip(e)
			}
		case []any:
			for _, e := range v {
				strip(e)
			}
		}
	}
	strip(v)
	b, _ := json.Marshal(v)
	return string(b)
}

// checkInputs are wrong and near-miss answers at r's tag: for each case,
// what feeds its sender, what starts its goroutine, another case's
// writer, a real function that writes nothing, a made-up one, half a
// name; for each set, a wrong line, a wrong file, the other set's place,
// no type named.
func checkInputs(r *extractor.Reading) map[string][]string {
	in := map[string][]string{}
	cases := r.Function.Cases
	for i, c := range cases {
		id := "writer." + c.Key
		for _, s := range append(slices.Clone(c.Upstream), c.Goroutine...) {
			in[id] = append(in[id], s.Func)
		}
		other := cases[(i+1)%len(cases)]
		for _, w := range other.Writers {
			if !slices.ContainsFunc(c.Writers, func(x extractor.Site) bool { return x.Func == w.Func }) {
				in[id] = append(in[id], w.Func)
				break
			}
		}
		in[id] = append(in[id], "pkg/kubelet.(*Kubelet).syncLoop", "pkg/kubelet/config.(*podStorage).Mergeify", "podStorage.Mer", "the config sources, through a mux")
	}
	for _, d := range r.TwoSets {
		id := map[string]string{"DesiredStateOfWorld": "set.desired", "ActualStateOfWorld": "set.actual"}[d.Name]
		otherName := map[string]string{"DesiredStateOfWorld": "ActualStateOfWorld", "ActualStateOfWorld": "DesiredStateOfWorld"}[d.Name]
		in[id] = append(in[id],
			fmt.Sprintf("%s %s:%d", d.Name, d.File, d.Line+7),
			fmt.Sprintf("%s %s:%d", d.Name, path.Base(d.File), d.Line-1),
			fmt.Sprintf("%s %s:%d", otherName, d.File, d.Line),
			fmt.Sprintf("%s:%d", path.Base(d.File), d.Line+1),
			d.Name+" kubelet.go:10")
	}
	return in
}

// postLocal posts a reader's own notes to be checked (the page's request).
func postLocal(t *testing.T, ts, tag string, notes []map[string]string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"notes": notes})
	req, _ := http.NewRequest("POST", ts+"/k8s/"+tag+"/notes", bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// roomNotes writes notes in rooms as their pages do, each over the
// revision it last wrote (so that no write is a conflict, whose answer
// would hold the text it conflicts with).
type roomNotes map[string]uint64

// put writes a note and returns the view the server answers with.
func (revs roomNotes) put(t *testing.T, ts, room, id, text string) (int, string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"text": text, "rev": revs[room+" "+id]})
	req, _ := http.NewRequest("PUT", ts+"/rooms/"+room+"/notes/"+id, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err := writerOf(room).Do(req) // a class's room takes its students' writes
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var v struct {
		Rev      uint64 `json:"rev"`
		Conflict bool   `json:"conflict"`
	}
	if json.Unmarshal(body, &v) == nil && v.Conflict {
		t.Fatalf("PUT %s %q: a conflict", id, text)
	}
	revs[room+" "+id] = v.Rev
	return resp.StatusCode, string(body)
}

func TestQuizGivesNothingAway(t *testing.T) {
	t.Parallel()
	r := realReading(t)
	answers := answerStrings(r)
	if len(answers) < 30 {
		t.Fatalf("%d answer strings at %s: the extractor found too little to test with", len(answers), r.Tag)
	}
	// The history reads every minor release, the compare another tag: the
	// same real Reading stands in for each.
	readings := map[string]*extractor.Reading{r.Tag: r}
	for _, tag := range diff.MinorTags(r.Tag) {
		if tag != r.Tag {
			c := *r
			c.Tag = tag
			readings[tag] = &c
		}
	}
	other := diff.PreviousMinor(r.Tag)
	serve := func(quiz bool) *httptest.Server {
		fl := &fixture.Loader{Readings: readings}
		s, err := openTuned(Config{DefaultTag: r.Tag, CacheDir: t.TempDir(), Load: fl.Load, Getenv: func(string) string { return "" }, DemoPeriod: -1, Quiz: quiz},
			func(p *Plan) { // the rates are other tests'
				p.Notes.ChecksPerMinute, p.Notes.WriteRate, p.Notes.WriteBurst = 100000, 1000, 1000
				p.Notes.RenderRate, p.Notes.RenderBurst = 1e6, 1e6
			})
		if err != nil {
			t.Fatal(err)
		}
		waitLoaded(t, s, r.Tag)
		ts := httptest.NewServer(s)
		t.Cleanup(func() { ts.Close(); s.Close() })
		return ts
	}
	plain, quiz := serve(false), serve(true)

	// What a student can fetch, the same way on both servers; ask names
	// what the request itself said (a check may repeat the reader's words).
	type response struct{ name, body, asked string }
	fetch := func(ts *httptest.Server) []response {
		var out []response
		for _, p := range []string{"/k8s/" + r.Tag + "/", "/k8s/" + r.Tag + "/pod-workers",
			"/k8s/compare/" + other + "..." + r.Tag, "/k8s/history/config", "/k8s/history/pleg"} {
			code, body := getUntil200(t, ts.URL+p)
			if code != 200 {
				t.Fatalf("%s: %d", p, code)
			}
			out = append(out, response{p, body, ""})
		}
		_, j := getUntil200(t, ts.URL+"/k8s/"+r.Tag+"/reading.json")
		out = append(out, response{"reading.json", withoutSource(t, j), ""})
		room, _ := createRoom(t, ts)
		revs := roomNotes{}
		inputs := checkInputs(r)
		for _, id := range slices.Sorted(maps.Keys(inputs)) {
			for i, text := range inputs[id] {
				code, body := postLocal(t, ts.URL, r.Tag, []map[string]string{{"id": id, "text": text}})
				if code != 200 {
					t.Fatalf("check %s %q: %d %s", id, text, code, body)
				}
				out = append(out, response{"check " + id + " " + text, body, text})
				code, body = revs.put(t, ts.URL, room, id, text)
				if code != 200 {
					t.Fatalf("room check %s %q: %d %s", id, text, code, body)
				}
				// A room's note keeps the text it replaced (Prev).
				out = append(out, response{"room check " + id + " " + text, body, strings.Join(inputs[id][:i+1], "\n")})
			}
		}
		// The room's hand-in holds the last of each answer: what it says
		// about them is searched with their words taken out.
		_, ws := getUntil200(t, ts.URL+"/rooms/"+room+"/worksheet.md")
		asked := ""
		for _, texts := range inputs {
			asked += strings.Join(texts, "\n") + "\n"
		}
		out = append(out, response{"room worksheet.md", ws, asked})
		_, page := getUntil200(t, ts.URL+"/rooms/"+room)
		out = append(out, response{"room page", page, ""})
		return out
	}
	before, after := fetch(plain), fetch(quiz)
	if len(before) != len(after) {
		t.Fatalf("%d responses without quiz mode, %d with", len(before), len(after))
	}
	for i, b := range before {
		// (The pod_workers page and the checks of wrong answers may hold
		// none; the checks are counted below.)
		if len(leaks(answers, b.body, b.asked)) == 0 && !strings.HasSuffix(b.name, "/pod-workers") && !strings.Contains(b.name, "check ") {
			t.Errorf("without quiz mode, %s holds no answer: the test would test nothing", b.name)
		}
		a := after[i]
		if a.name != b.name {
			t.Fatalf("response %d is %s without quiz mode, %s with", i, b.name, a.name)
		}
		if l := leaks(answers, a.body, a.asked); len(l) > 0 {
			t.Errorf("in quiz mode, %s gives away %q", a.name, l)
		}
	}
	// Outside quiz mode the checker helps: it tells where (the test's
	// near-misses are near).
	helped := 0
	for _, b := range before {
		if strings.HasPrefix(b.name, "check ") && len(leaks(answers, b.body, b.asked)) > 0 {
			helped++
		}
	}
	if helped < 5 {
		t.Errorf("without quiz mode only %d checks say where the answer is: the near-misses test nothing", helped)
	}
	for _, p := range []string{"/k8s/" + r.Tag + "/", "/rooms/"} {
		for _, a := range after {
			if strings.HasPrefix(a.name, p) || (p == "/rooms/" && a.name == "room page") {
				if strings.Contains(a.body, "Written by") || strings.Contains(a.body, ">element<") {
					t.Errorf("in quiz mode, %s shows \"Written by\" or an element type", a.name)
				}
			}
		}
	}

	// A class that hides the notes, on the server without --quiz: its
	// room's pages and hand-in give nothing away, and link to no page
	// that does.
	class, _ := createClass(t, plain, url.Values{"name": {"Sealed"}, "hide_notes": {"1"}})
	room, _, code := startClassRoom(t, plain, class)
	if code != http.StatusSeeOther {
		t.Fatalf("start a room of the class: %d", code)
	}
	revs := roomNotes{}
	inputs := checkInputs(r)
	for id, texts := range inputs {
		for i, text := range texts {
			code, body := revs.put(t, plain.URL, room, id, text)
			if code != 200 {
				t.Fatalf("class room check %s %q: %d %s", id, text, code, body)
			}
			if l := leaks(answers, body, strings.Join(texts[:i+1], "\n")); len(l) > 0 {
				t.Errorf("in a hide-notes class's room, the check of %s %q gives away %q", id, text, l)
			}
		}
	}
	for _, p := range []string{"/rooms/" + room, "/rooms/" + room + "/pod-workers", "/rooms/" + room + "/worksheet.md"} {
		_, body := getUntil200(t, plain.URL+p)
		asked := ""
		if strings.HasSuffix(p, ".md") {
			for _, texts := range inputs {
				asked += strings.Join(texts, "\n") + "\n"
			}
		}
		if l := leaks(answers, body, asked); len(l) > 0 {
			t.Errorf("in a hide-notes class's room, %s gives away %q", p, l)
		}
		if strings.HasSuffix(p, ".md") {
			continue
		}
		for _, link := range []string{`href="/k8s/`, `action="/k8s`, `href="/"`, "reading.json", "answer-key.md"} {
			if strings.Contains(body, link) {
				t.Errorf("in a hide-notes class's room, %s links to a page with the site's answers (%s)", p, link)
			}
		}
	}
	code, body := httpGet(t, plain.URL+"/classes/"+class)
	if code != 200 || !strings.Contains(body, "still sees the site's notes and answers, unless the server runs <code>serve --quiz</code>") {
		t.Errorf("the class page does not say that another browser still sees the notes: %d", code)
	}
	if strings.Contains(body, `href="/"`) || strings.Contains(body, `href="/k8s/`) {
		t.Error("the page of a class that hides the notes links to the site's pages with them")
	}
	if code, _ := httpGet(t, quiz.URL+"/k8s/"+r.Tag+"/answer-key.md"); code != http.StatusForbidden {
		t.Errorf("in quiz mode the answer key answers %d", code)
	}
	// A peek does not look the sets' declarations up by name in quiz mode
	// (it would answer their file:line); without quiz mode it does.
	setSyms := setDeclSyms(r)
	if len(setSyms) == 0 {
		t.Fatal("no definition in the index declares a set: nothing to test /def with")
	}
	for _, sym := range setSyms {
		u := "/k8s/" + r.Tag + "/def?sym=" + url.QueryEscape(sym)
		if code, body := getUntil200(t, quiz.URL+u); code != http.StatusForbidden || len(leaks(answers, body, sym)) > 0 {
			t.Errorf("in quiz mode %s answers %d %.200s, want 403 and no answer", u, code, body)
		}
		if code, _ := getUntil200(t, plain.URL+u); code != http.StatusOK {
			t.Errorf("without quiz mode %s answers %d, want the definition", u, code)
		}
	}

	// A student of that class, on the same plain server, gets every page
	// of the site in quiz mode, not only the class's rooms; a browser
	// without the class's session still gets the notes (so the search can
	// find what it looks for).
	sealed := student(t, plain.URL, class, "Quinn")
	for _, p := range []string{"/k8s/" + r.Tag + "/", "/k8s/" + r.Tag + "/reading.json", "/k8s/" + r.Tag + "/pod-workers"} {
		code, body := getAs(t, sealed, plain.URL+p)
		if code != 200 {
			t.Fatalf("a student of the class asks %s: %d", p, code)
		}
		if strings.HasSuffix(p, ".json") {
			body = withoutSource(t, body)
		}
		if l := leaks(answers, body, ""); len(l) > 0 {
			t.Errorf("a student of a hide-notes class gets %s with %q", p, l)
		}
	}
	if code, _ := getAs(t, sealed, plain.URL+"/k8s/"+r.Tag+"/answer-key.md"); code != http.StatusForbidden {
		t.Errorf("a student of a hide-notes class gets the answer key: %d", code)
	}
	if _, body := getUntil200(t, plain.URL+"/k8s/"+r.Tag+"/reading.json"); len(leaks(answers, withoutSource(t, body), "")) == 0 {
		t.Error("without the class's session, reading.json holds none of the answers: the search above proves nothing")
	}
}

// setDeclSyms are the symbols of the definitions index whose declaration
// is one of the two sets' (the worksheet's answer).
func setDeclSyms(r *extractor.Reading) []string {
	var syms []string
	if r.Defs == nil {
		return nil
	}
	for sym, d := range r.Defs.Decls {
		for _, set := range r.TwoSets {
			if set.File == d.File && d.Start <= set.Line && set.Line <= d.End {
				syms = append(syms, sym)
				break
			}
		}
	}
	return syms
}

// getAs GETs u with browser c until it is no longer a page that says the
// tag is being read.
func getAs(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	var code int
	var body string
	testwait.For(t, time.Minute, "a page rather than a wait: "+u, func() bool {
		resp, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		code, body = resp.StatusCode, string(b)
		return code != http.StatusAccepted
	})
	return code, body
}

// getUntil200 GETs u until it is no longer a page that says the tag, or
// the tags of a history, are being fetched.
func getUntil200(t *testing.T, u string) (int, string) {
	t.Helper()
	var code int
	var body string
	testwait.For(t, time.Minute, "a page rather than a wait: "+u, func() bool {
		code, body = httpGet(t, u)
		return code != http.StatusAccepted
	})
	return code, body
}

// TestQuizCheckLimit: in quiz mode one reader (one client address, an
// IPv6 network of --ipv6-prefix bits) gets annotations.ChecksPerMinute
// verdicts a minute, in its own notes and a room's alike; then 429 with
// a message that says why, while an answer checked before is still
// shown and another reader is not held back. Without quiz mode there is
// no such limit.
func TestQuizCheckLimit(t *testing.T) {
	t.Parallel()
	proxy := []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	as := func(ts *httptest.Server, client, method, p string, body any) (int, string, string) {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, ts.URL+p, bytes.NewReader(b))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Sec-Fetch-Site", "same-origin")
		req.Header.Set("X-Forwarded-For", client)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out), resp.Header.Get("Retry-After")
	}
	writer := func(i int) map[string]any {
		return map[string]any{"notes": []map[string]string{{"id": "writer.config", "text": fmt.Sprintf("pkg/kubelet/config.Candidate%d.Send", i)}}}
	}
	notes := "/k8s/" + fixture.Tag + "/notes"
	_, quiz := newRoomServer(t, "", func(c *Config) { c.Quiz, c.TrustedProxies = true, proxy })
	const a, sameA, b = "2001:db8:1::1", "2001:db8:1::2", "2001:db8:2::1"
	for i := range annotations.ChecksPerMinute {
		if code, body, _ := as(quiz, a, "POST", notes, writer(i)); code != 200 {
			t.Fatalf("check %d of a minute: %d %s", i+1, code, body)
		}
	}
	code, body, retry := as(quiz, a, "POST", notes, writer(annotations.ChecksPerMinute))
	if code != http.StatusTooManyRequests || retry == "" || !strings.Contains(body, fmt.Sprintf("at most %d answers a minute", annotations.ChecksPerMinute)) {
		t.Errorf("check %d of a minute: %d %q (Retry-After %q); want 429 saying the limit", annotations.ChecksPerMinute+1, code, body, retry)
	}
	if code, _, _ := as(quiz, sameA, "POST", notes, writer(annotations.ChecksPerMinute)); code != http.StatusTooManyRequests {
		t.Errorf("the same reader from another address of its /64: %d, want 429", code)
	}
	if code, body, _ := as(quiz, a, "POST", notes, writer(3)); code != 200 {
		t.Errorf("an answer checked before, sent again: %d %s", code, body)
	}
	room, _ := createRoom(t, quiz)
	put := map[string]any{"text": "pkg/kubelet/config.Other.Send", "rev": 0, "author": "Bo"}
	if code, body, _ := as(quiz, a, "PUT", "/rooms/"+room+"/notes/writer.config", put); code != http.StatusTooManyRequests {
		t.Errorf("a room's answer from a reader past its checks: %d %s, want 429", code, body)
	}
	if code, body, _ := as(quiz, b, "PUT", "/rooms/"+room+"/notes/writer.config", put); code != 200 {
		t.Errorf("another reader's answer in the room: %d %s", code, body)
	}

	_, plain := newRoomServer(t, "", func(c *Config) { c.TrustedProxies = proxy })
	for i := range 2 * annotations.ChecksPerMinute {
		if code, body, _ := as(plain, a, "POST", notes, writer(i)); code != 200 {
			t.Fatalf("without quiz mode, check %d: %d %s", i+1, code, body)
		}
	}
}
