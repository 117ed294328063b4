package server

// A class's progress, grades and autograder results over HTTP: rooms in
// different states (a worksheet written with a warning and a confirmed
// item and a pin; the lab's recorded real journal relayed, its pod
// default/probe-me-lab; the same journal with the pod named otherwise;
// an ended room with nothing in it), read as progress.json, grades.csv
// (parsed by encoding/csv) and a room's results.json (held to the fields
// Gradescope's autograder specification documents).

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/labcheck"
	"github.com/syncloop/syncloop/server/relay"
)

// wholeLabJournal is the lab's recorded v1.33.0 journal, every entry,
// each with its cursor as id; with the pod from renamed to, where the
// classifier finds a line naming it, when from is not "".
func wholeLabJournal(t *testing.T, from, to string) []relay.Line {
	t.Helper()
	cls := classify.New(fixture.Reading(t)).Stream()
	var out []relay.Line
	for line := range strings.Lines(string(labJournal(t))) {
		line = strings.TrimSuffix(line, "\n")
		l := cls.ClassifyString(line)
		if from != "" && slices.Contains(l.Pods, "default/"+from) {
			line = strings.ReplaceAll(line, from, to)
		}
		out = append(out, relay.Line{ID: l.Cursor, Raw: line})
	}
	return out
}

// relayJournal sends lines to room's feed as its relay does (with the
// room's ingest token), and leaves the relay attached.
func relayJournal(t *testing.T, ctx context.Context, ts *httptest.Server, room, token string, lines []relay.Line) {
	t.Helper()
	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+room+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	t.Cleanup(func() { rl.CloseNow() })
	for j := 0; j < len(lines); j += 400 {
		wstest.Send(t, ctx, rl, lines[j:min(j+400, len(lines))]...)
	}
}

// pinLast pins the last line of caseKey in room's journal as its student
// author does from the pane ("Pin to the room's worksheet"), once the
// room's record of what fired has it.
func pinLast(t *testing.T, ts *httptest.Server, room, caseKey, author string) {
	t.Helper()
	var seq uint64
	testwait.For(t, 30*time.Second, "room "+room+"'s "+caseKey+" lines recorded", func() bool {
		var fired struct {
			Cases map[string]struct{ Last struct{ Seq uint64 } } `json:"cases"`
		}
		getJSON(t, ts.URL+"/feeds/room-"+room+"/fired", &fired)
		seq = fired.Cases[caseKey].Last.Seq
		return seq > 0
	})
	if code, v := notesReq(t, "POST", ts.URL+"/rooms/"+room+"/pins", map[string]any{"seq": seq, "author": author}); code != 200 {
		t.Fatalf("pin line %d of room %s: %d %v", seq, room, code, v)
	}
}

func progressOf(t *testing.T, base, class, key string) classes.Progress {
	t.Helper()
	code, b := instructorGetURL(t, base+"/classes/"+class+"/progress.json", key)
	if code != 200 {
		t.Fatalf("progress.json: %d %s", code, b)
	}
	var p classes.Progress
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("progress.json %s: %v", b, err)
	}
	return p
}

func instructorGetURL(t *testing.T, u, key string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestClassProgress(t *testing.T) {
	_, ts := newRoomServer(t, "", func(c *Config) { c.DemoPeriod = 5 * time.Millisecond })
	// Two journals of 4,309 lines relayed: longer than testCtx's 20 s
	// under -race on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	r := fixture.Reading(t)
	if code := postForm(t, ts, "/classes", url.Values{"pod": {"Probe Me"}}).StatusCode; code != http.StatusBadRequest {
		t.Errorf("a class whose pod is no pod's name: %d, want 400", code)
	}
	if c2, k2 := createClass(t, ts, url.Values{"pod": {"default/probe-demo"}}); progressOf(t, ts.URL, c2, k2).Class.Pod != "default/probe-demo" {
		t.Error("the class form's pod was not kept")
	}
	class, key := createClass(t, ts, url.Values{"name": {"Lab 3"}, "budget": {"6"}, "pod": {"probe-me"}})
	var ids, keys []string
	for i := range 4 {
		id, k, code := startClassRoom(t, ts, class)
		if code != http.StatusSeeOther {
			t.Fatalf("room %d: %d", i+1, code)
		}
		ids, keys = append(ids, id), append(keys, k)
	}

	// Room 1: a writer (nothing the fixture can check), a set with a
	// warning, one confirmed, the sentence, a pin.
	dialRoom(t, ctx, ts, ids[0], keys[0], "Ann")
	dialRoom(t, ctx, ts, ids[0], "", "Bob")
	putNote(t, ts, ids[0], "writer.config", "pkg/kubelet/config.(*PodConfig).Updates")
	putNote(t, ts, ids[0], "set.actual", "somewhere.go:1")
	putNote(t, ts, ids[0], "set.desired", "DesiredStateOfWorld, pkg/kubelet/volumemanager/cache/desired_state_of_world.go:45")
	putNote(t, ts, ids[0], "sentence", "The loop reconciles what is wanted with what is.")
	// Room 1's live pane plays the demo (probe-me added, its probe
	// failing): never a check.
	demo := readLines(t, ctx, dialFeed(t, ctx, ts, "room-"+ids[0]), 40)
	if !strings.Contains(demo, "probe-me") {
		t.Fatalf("the demo does not play the lab's pod:\n%s", demo)
	}
	// Rooms 2 and 3: the lab's journal, its pod as the lab names it and
	// renamed; room 4 ended with nothing in it.
	journals := [][]relay.Line{wholeLabJournal(t, "", ""), wholeLabJournal(t, "probe-me-lab", "probe-demo-vm")}
	for i, lines := range journals {
		d := dialRoom(t, ctx, ts, ids[1+i], keys[1+i], []string{"Cy", "Dee"}[i])
		relayJournal(t, ctx, ts, ids[1+i], d.token, lines)
	}
	pinLast(t, ts, ids[1], "liveness", "Cy") // a pin names a stored line of the room's own journal
	d4 := dialRoom(t, ctx, ts, ids[3], keys[3], "Eve")
	d4.send(t, ctx, map[string]any{"t": "end"})
	d4.until(t, ctx, "room 4 ended", func(m map[string]any) bool { return m["t"] == "state" && m["ended"] == true })

	// What the checks must say: the journal's lines, classified as the
	// feed does, through the pure function.
	want := make([]labcheck.Result, 2)
	for i, lines := range journals {
		cls := classify.New(r).Stream()
		var ls []labcheck.Line
		for j, l := range lines {
			ls = append(ls, labcheck.Line{Seq: uint64(j + 1), Line: cls.ClassifyString(l.Raw)})
		}
		want[i] = labcheck.Journal("", "room-"+ids[1+i], r, ls)
	}
	if want[0].Done() < 3 || want[1].Added.OK || !strings.Contains(want[1].Added.Text, "saw default/probe-demo-vm") {
		t.Fatalf("the journals do not test what they are for: %+v\n%+v", want[0], want[1])
	}

	t.Run("progress.json", func(t *testing.T) {
		for _, k := range []string{"", class, key + "x"} {
			if code, _ := instructorGetURL(t, ts.URL+"/classes/"+class+"/progress.json", k); code != http.StatusUnauthorized {
				t.Errorf("progress.json with key %q: %d, want 401", k, code)
			}
		}
		var p classes.Progress
		testwait.For(t, 20*time.Second, "the checks from both journals", func() bool {
			p = progressOf(t, ts.URL, class, key)
			return len(p.Rooms) == 4 && p.Rooms[1].Checks.Lines == want[0].Lines && p.Rooms[2].Checks.Lines == want[1].Lines
		})
		if len(p.Items) != len(r.Function.Cases)*3+4 || p.Items[0].ID != "case."+r.Function.Cases[0].Key || p.Items[len(p.Items)-1].ID != "sentence" {
			t.Errorf("items: %+v", p.Items)
		}
		a := p.Rooms[0]
		cells := map[string]string{"writer.config": "written", "set.actual": "warned", "set.desired": "confirmed", "sentence": "written", "case.config": "empty"}
		for id, st := range cells {
			if a.Cells[id] != st {
				t.Errorf("room 1's %s: %q, want %q", id, a.Cells[id], st)
			}
		}
		if len(a.Cells) != len(p.Items) || a.Written != 4 || a.Warned != 1 || a.Confirmed != 1 || len(a.Warnings["set.actual"]) == 0 || a.By["sentence"] != "Ann" {
			t.Errorf("room 1: %+v", a)
		}
		if a.Checks.Lines != 0 || a.Checks.Done() != 0 {
			t.Errorf("room 1's demo lines were checked: %+v", a.Checks)
		}
		if len(a.Pins) != 0 || a.N != 1 || !slices.Contains(a.Flags, "no relay yet") {
			t.Errorf("room 1's pins, number, flags: %v %d %v", a.Pins, a.N, a.Flags)
		}
		if b := p.Rooms[1]; !maps.Equal(b.Pins, map[string]int{"liveness": 1}) {
			t.Errorf("room 2's pins: %v, want its one liveness pin", b.Pins)
		}
		for i, w := range want {
			got, _ := json.Marshal(p.Rooms[1+i].Checks)
			wantJSON, _ := json.Marshal(w)
			if string(got) != string(wantJSON) {
				t.Errorf("room %d's checks:\n%s\nwant\n%s", 2+i, got, wantJSON)
			}
			if slices.Contains(p.Rooms[1+i].Flags, "no relay yet") {
				t.Errorf("room %d, relayed, flagged %v", 2+i, p.Rooms[1+i].Flags)
			}
		}
		if e := p.Rooms[3]; !e.Ended || e.Written != 0 || e.Checks.Done() != 0 || !slices.Equal(e.Flags, []string{"ended"}) || e.HandedIn != nil || e.Late {
			t.Errorf("room 4, ended and empty: %+v", e)
		}
		// The key in the address works as the header does.
		if code, _ := instructorGetURL(t, ts.URL+"/classes/"+class+"/progress.json?k="+url.QueryEscape(key), ""); code != 200 {
			t.Errorf("progress.json?k=KEY: %d", code)
		}
	})

	t.Run("checks.json: the room's readers see the grid's checks", func(t *testing.T) {
		p := progressOf(t, ts.URL, class, key)
		for i, id := range ids[:3] {
			var got labcheck.Result
			getJSON(t, ts.URL+"/rooms/"+id+"/checks.json", &got)
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(p.Rooms[i].Checks)
			if string(a) != string(b) {
				t.Errorf("room %d's checks.json:\n%s\nthe grid's:\n%s", i+1, a, b)
			}
		}
		if code, _ := httpGet(t, ts.URL+"/rooms/AAAAAAAAAAAAAAAAAAAAAA/checks.json"); code != http.StatusNotFound {
			t.Errorf("checks.json of no room: %d, want 404", code)
		}
	})

	t.Run("grades.csv", func(t *testing.T) {
		code, b := instructorGetURL(t, ts.URL+"/classes/"+class+"/grades.csv", key)
		if code != 200 {
			t.Fatalf("grades.csv: %d %s", code, b)
		}
		rows, err := csv.NewReader(strings.NewReader(string(b))).ReadAll()
		if err != nil {
			t.Fatalf("grades.csv is not CSV: %v\n%s", err, b)
		}
		head := rows[0]
		col := func(name string) int { return slices.Index(head, name) }
		if head[0] != "student" || col("writer.config") < 0 || col("lab_added") < 0 || col("late") != len(head)-1 {
			t.Fatalf("header %v", head)
		}
		got := map[string][]string{}
		for _, row := range rows[1:] {
			if !isStarter(row[0]) { // the students who started the rooms, on the roster in none: rows too
				got[row[0]+" in "+row[1]] = row
			}
		}
		wantRows := []string{"Ann in Room 1", "Bob in Room 1", "Cy in Room 2", "Dee in Room 3", "Eve in Room 4"}
		if len(got) != len(wantRows) || len(rows) != 1+len(wantRows)+4 {
			t.Errorf("%d rows, want %d: %v", len(rows)-1, len(wantRows), slices.Collect(maps.Keys(got)))
		}
		for _, w := range wantRows {
			if got[w] == nil {
				t.Errorf("no row for %s", w)
			}
		}
		ann := got["Ann in Room 1"]
		if ann[col("writer.config")] != "1" || ann[col("set.actual")] != "0.5" || ann[col("set.desired")] != "1" || ann[col("case.config")] != "0" || ann[col("score")] != "3.5" || ann[col("max_score")] != fmt.Sprint(len(head)-7) {
			t.Errorf("Ann's row: %v", ann)
		}
		cy := got["Cy in Room 2"]
		if cy[col("lab_added")] != "1" || cy[col("lab_liveness_failed")] != "1" || cy[col("lab_deleted")] != "1" || cy[col("handed_in")] != "" || cy[col("late")] != "false" {
			t.Errorf("Cy's row: %v", cy)
		}
		if dee := got["Dee in Room 3"]; dee[col("lab_added")] != "0" {
			t.Errorf("Dee's row (the pod named otherwise): %v", dee)
		}
	})

	t.Run("results.json", func(t *testing.T) {
		for _, k := range []string{"", class} {
			if code, _ := instructorGetURL(t, ts.URL+"/classes/"+class+"/rooms/"+ids[1]+"/results.json", k); code != http.StatusUnauthorized {
				t.Errorf("results.json with key %q: %d, want 401", k, code)
			}
		}
		if code, _ := instructorGetURL(t, ts.URL+"/classes/"+class+"/rooms/AAAAAAAAAAAAAAAAAAAAAA/results.json", key); code != http.StatusNotFound {
			t.Errorf("results.json of no room of the class: %d, want 404", code)
		}
		code, b := instructorGetURL(t, ts.URL+"/classes/"+class+"/rooms/"+ids[1]+"/results.json", key)
		if code != 200 {
			t.Fatalf("results.json: %d %s", code, b)
		}
		checkGradescope(t, b)
		var res classes.GradescopeResults
		json.Unmarshal(b, &res)
		var added *classes.GradescopeTest
		for i := range res.Tests {
			if res.Tests[i].Name == "lab: probe-me added" {
				added = &res.Tests[i]
			}
		}
		e := want[0].Added.At
		if added == nil || added.Score != 1 || !strings.Contains(added.Output, e.Line) || !strings.Contains(added.Output, e.Cursor) || added.Visibility != "visible" {
			t.Errorf("the lab's added test: %+v", added)
		}
		if n := len(res.Tests); n != len(r.Function.Cases)*3+4+4 {
			t.Errorf("%d tests", n)
		}
	})

	t.Run("one question across every room", func(t *testing.T) {
		code, b := instructorGetURL(t, ts.URL+"/classes/"+class+"/items/set.actual.json", key)
		var a classes.Answers
		if code != 200 || json.Unmarshal(b, &a) != nil {
			t.Fatalf("items/set.actual.json: %d %s", code, b)
		}
		if a.Item.ID != "set.actual" || len(a.Answers) != 4 || a.Answers[0].Text != "somewhere.go:1" || a.Answers[0].By != "Ann" || a.Answers[0].State != "warned" || len(a.Answers[0].Warnings) == 0 || a.Answers[1].State != "empty" || a.Answers[3].N != 4 {
			t.Errorf("set.actual across the rooms: %s", b)
		}
		if code, _ := instructorGetURL(t, ts.URL+"/classes/"+class+"/items/nothing.json", key); code != http.StatusNotFound {
			t.Errorf("an item the worksheet has not: %d, want 404", code)
		}
		if code, _ := instructorGetURL(t, ts.URL+"/classes/"+class+"/items/set.actual.json", ""); code != http.StatusUnauthorized {
			t.Errorf("without the key: %d, want 401", code)
		}
	})

	t.Run("the class names its pod", func(t *testing.T) {
		for body, code := range map[string]int{`{"pod":"Probe Me"}`: http.StatusBadRequest, `{"pod":"probe-demo"}`: http.StatusOK} {
			req, _ := http.NewRequest("POST", ts.URL+"/classes/"+class+"/settings", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != code {
				t.Errorf("settings %s: %d, want %d", body, resp.StatusCode, code)
			}
		}
		// probe-demo is the static pod the renamed journal's probe-demo-vm
		// mirrors (node vm): room 3 now passes, room 2 is the other name.
		p := progressOf(t, ts.URL, class, key)
		if p.Class.Pod != "probe-demo" || !p.Rooms[2].Checks.Added.OK || p.Rooms[2].Checks.Pod != "probe-demo" || p.Rooms[1].Checks.Added.OK {
			t.Errorf("after the class named probe-demo: %s; room 2 %+v; room 3 %+v", p.Class.Pod, p.Rooms[1].Checks.Added, p.Rooms[2].Checks.Added)
		}
	})
}

// The fields Gradescope's autograder specification documents
// (https://gradescope-autograders.readthedocs.io/en/latest/specs/), at
// the top and in each test, and the values its visibility takes.
var (
	gradescopeTop  = []string{"score", "execution_time", "output", "output_format", "test_output_format", "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests", "leaderboard"}
	gradescopeTest = []string{"score", "max_score", "status", "name", "name_format", "number", "output", "output_format", "tags", "visibility", "extra_data"}
	gradescopeVis  = []string{"hidden", "after_due_date", "after_published", "visible"}
)

// checkGradescope holds a results.json to the documented fields.
func checkGradescope(t *testing.T, b []byte) {
	t.Helper()
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	for k := range top {
		if !slices.Contains(gradescopeTop, k) {
			t.Errorf("results.json: %q is not a documented field", k)
		}
	}
	var doc struct {
		Score            *float64 `json:"score"`
		Visibility       string   `json:"visibility"`
		StdoutVisibility string   `json:"stdout_visibility"`
		Tests            []map[string]any
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Tests) == 0 || !slices.Contains(gradescopeVis, doc.Visibility) || !slices.Contains(gradescopeVis, doc.StdoutVisibility) {
		t.Errorf("results.json: %d tests, visibility %q, stdout_visibility %q", len(doc.Tests), doc.Visibility, doc.StdoutVisibility)
	}
	sum := 0.0
	for i, test := range doc.Tests {
		for k := range test {
			if !slices.Contains(gradescopeTest, k) {
				t.Errorf("test %d: %q is not a documented field", i, k)
			}
		}
		name, _ := test["name"].(string)
		score, ok1 := test["score"].(float64)
		most, ok2 := test["max_score"].(float64)
		vis, _ := test["visibility"].(string)
		status, _ := test["status"].(string)
		if name == "" || !ok1 || !ok2 || score < 0 || score > most || !slices.Contains(gradescopeVis, vis) || (status != "passed" && status != "failed") {
			t.Errorf("test %d: %v", i, test)
		}
		sum += score
	}
	if doc.Score == nil || *doc.Score != sum {
		t.Errorf("score %v, the tests' sum %v", doc.Score, sum)
	}
}

// TestClassLabChecksVerbosity: with the log sites of a real Reading
// (their V levels), the room's journal proves -v=4, and the server reads
// of the other cases only what can hold an earlier proof: its checks are
// the pure function's over the whole journal, from fewer lines.
func TestClassLabChecksVerbosity(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("classify", "testdata", "reading-"+fixture.Tag+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var real extractor.Reading
	if err := json.Unmarshal(b, &real); err != nil {
		t.Fatal(err)
	}
	// The fixture's loop (a page can be made of it) with the log sites of
	// the real one at the same tag, V levels and all, for the cases both
	// have (the classifier's test Reading has no source to show).
	r := *fixture.Reading(t)
	r.Function.Cases = slices.Clone(r.Function.Cases)
	for i, c := range r.Function.Cases {
		if rc, ok := real.Function.CaseByKey(c.Key); ok {
			r.Function.Cases[i].Logs = rc.Logs
		}
	}
	fl := &fixture.Loader{Readings: map[string]*extractor.Reading{fixture.Tag: &r}}
	_, ts := newRoomServer(t, "", func(c *Config) { c.Load = fl.Load })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	class, key := createClass(t, ts, url.Values{"name": {"Lab 3"}})
	id, k, code := startClassRoom(t, ts, class)
	if code != http.StatusSeeOther {
		t.Fatalf("room: %d", code)
	}
	d := dialRoom(t, ctx, ts, id, k, "Cy")
	lines := wholeLabJournal(t, "", "")
	relayJournal(t, ctx, ts, id, d.token, lines)

	cls := classify.New(&r).Stream()
	var ls []labcheck.Line
	for j, l := range lines {
		ls = append(ls, labcheck.Line{Seq: uint64(j + 1), Line: cls.ClassifyString(l.Raw)})
	}
	want := labcheck.Journal("", "room-"+id, &r, ls)
	if want.Done() != 4 {
		t.Fatalf("the journal does not prove the four checks at %s: %+v", r.Tag, want)
	}
	var got labcheck.Result
	testwait.For(t, 20*time.Second, "the four checks", func() bool {
		got = progressOf(t, ts.URL, class, key).Rooms[0].Checks
		if got.Done() != 4 {
			t.Logf("checks: %+v", got)
		}
		return got.Done() == 4
	})
	for _, c := range []struct {
		name      string
		got, want labcheck.Check
	}{{"added", got.Added, want.Added}, {"liveness_failed", got.LivenessFailed, want.LivenessFailed}, {"deleted", got.Deleted, want.Deleted}, {"verbosity", got.Verbosity, want.Verbosity}} {
		g, _ := json.Marshal(c.got)
		w, _ := json.Marshal(c.want)
		if string(g) != string(w) {
			t.Errorf("%s:\n%s\nwant\n%s", c.name, g, w)
		}
	}
	if got.Lines >= want.Lines/2 {
		t.Errorf("the server looked at %d lines of the journal's %d classified", got.Lines, want.Lines)
	}
	t.Logf("the checks read %d of the %d lines of the loop's cases", got.Lines, want.Lines)
}
