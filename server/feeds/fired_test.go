package feeds

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// getFired reads the feed's record of what fired.
func getFired(t *testing.T, ctx context.Context, ts *httptest.Server, feed string) FiredRecord {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/feeds/"+feed+"/fired", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("fired: %s", resp.Status)
	}
	var rec FiredRecord
	if err := json.NewDecoder(resp.Body).Decode(&rec); err != nil {
		t.Fatal(err)
	}
	return rec
}

// caseLines reads a case's lines back from the stream: seq and raw or text.
func caseLines(t *testing.T, ctx context.Context, ts *httptest.Server, feed, key, query string) ([]uint64, []string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/feeds/"+feed+"/fired/"+key+"/lines"+query, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("case lines: %s", resp.Status)
	}
	var seqs []uint64
	var texts []string
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m browserMsg
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("%q: %v", sc.Text(), err)
		}
		if m.Line == nil || m.Line.Case != key {
			t.Fatalf("a line of %s without that case: %s", key, sc.Text())
		}
		seqs, texts = append(seqs, m.Seq), append(texts, m.Line.Raw+m.Line.Text)
	}
	return seqs, texts
}

// klogAdd is a config line naming pod.
func klogAdd(i int, pod string) string {
	return fmt.Sprintf(`I1130 01:02:%02d.000000    1234 kubelet.go:2407] "SyncLoop ADD" source="file" pods=[%q]`, i%60, pod)
}

// journalEntry wraps a kubelet line as journalctl -o json does.
func journalEntry(cursor, msg string) string {
	b, _ := json.Marshal(map[string]string{"__CURSOR": cursor, "__REALTIME_TIMESTAMP": "1764464523000000", "_HOSTNAME": "lab", "SYSLOG_IDENTIFIER": "kubelet", "_PID": "1234", "MESSAGE": msg})
	return string(b)
}

// TestFiredRecord: the record counts every line of a case, past the
// pane's ring and past floods of noise; it names the first and the last
// line, their pods and cursor; demo lines never count; a case's lines are
// read back from the stream by sequence; a restart rebuilds the same record.
func TestFiredRecord(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l1, ts1 := newStoredLiveServer(t, dir, Config{RingSize: 16})
	in := dialIngest(t, ctx, ts1, "lab")
	var sent []relay.Line
	var want []string // the config lines' raws, in order
	n := 0
	send := func(ls ...relay.Line) {
		sent = append(sent, ls...)
		wstest.Send(t, ctx, in, ls...)
	}
	noise := func(k int) {
		var ls []relay.Line
		for range k {
			n++
			ls = append(ls, relay.Line{ID: fmt.Sprintf("run-%d", n), Raw: fmt.Sprintf(`I1130 01:02:03.000000    1234 fs.go:100] "readlink /proc/1/fd/%d: permission denied"`, n)})
		}
		send(ls...)
	}
	for i := range 5 {
		noise(300)
		n++
		raw := klogAdd(i, fmt.Sprintf("default/p%d", i%2))
		want = append(want, raw)
		send(relay.Line{ID: fmt.Sprintf("run-%d", n), Raw: raw})
	}
	// A journald entry: its cursor is recorded.
	n++
	entry := journalEntry("s=abc;i=1f;b=x", `I1130 01:03:00.000000    1234 kubelet.go:2407] "SyncLoop ADD" source="file" pods=["kube-system/etcd"]`)
	want = append(want, entry)
	send(relay.Line{ID: "s=abc;i=1f;b=x", Raw: entry})
	noise(50)
	// The demo's lines are a simulated kubelet: they never count.
	f, err := l1.feed("lab")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.ingest([]relay.Line{{Raw: klogAdd(9, "default/demo")}}, true); err != nil {
		t.Fatal(err)
	}

	rec := getFired(t, ctx, ts1, "lab")
	c, ok := rec.Cases["config"]
	if !ok || len(rec.Cases) != 1 {
		t.Fatalf("cases %v, want config only", rec.Cases)
	}
	if c.Count != 6 {
		t.Errorf("config count %d, want 6", c.Count)
	}
	if c.First.Raw != want[0] || c.First.Seq != 301 || c.First.Time == nil {
		t.Errorf("first %+v, want line 301 %q with a time", c.First, want[0])
	}
	if c.Last.Raw != entry || c.Last.Cursor != "s=abc;i=1f;b=x" || c.Last.Seq != 5*301+1 {
		t.Errorf("last %+v, want the journald entry at %d with its cursor", c.Last, 5*301+1)
	}
	if !reflect.DeepEqual(c.Pods, []string{"default/p0", "default/p1", "kube-system/etcd"}) {
		t.Errorf("pods %q", c.Pods)
	}
	if rec.ReadAt != "v1.31.0" || rec.KubeletVersion != nil || rec.VersionFrom != nil {
		t.Errorf("read_at %q version %v from %v", rec.ReadAt, rec.KubeletVersion, rec.VersionFrom)
	}

	// Every line, though the ring holds 16 lines of noise.
	seqs, texts := caseLines(t, ctx, ts1, "lab", "config", "")
	if len(seqs) != 6 || seqs[0] != 301 || seqs[5] != 1506 {
		t.Fatalf("case lines at %v", seqs)
	}
	for i, tx := range texts[:5] {
		if tx != want[i] {
			t.Errorf("line %d: %q, want %q", i, tx, want[i])
		}
	}
	if !strings.Contains(texts[5], "kube-system/etcd") {
		t.Errorf("the journald entry shown as %q", texts[5])
	}
	// Walking back: the two before the last.
	if seqs, _ := caseLines(t, ctx, ts1, "lab", "config", "?before=1505&limit=2"); !reflect.DeepEqual(seqs, []uint64{903, 1204}) {
		t.Errorf("before=1505&limit=2: %v", seqs)
	}
	if seqs, _ := caseLines(t, ctx, ts1, "lab", "pleg", ""); len(seqs) != 0 {
		t.Errorf("pleg, which never fired: %v", seqs)
	}
	in.CloseNow()
	ts1.Close()
	l1.Close()

	_, ts2 := newStoredLiveServer(t, dir, Config{RingSize: 16})
	if got := getFired(t, ctx, ts2, "lab"); !reflect.DeepEqual(got, rec) {
		t.Fatalf("after a restart the record is\n%+v\nwant\n%+v", got, rec)
	}
}

// TestFiredSameOnReplicas: a second replica, which took the lines through
// its consumer, serves the same record as the one that stored them.
func TestFiredSameOnReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l1, l2 := twoReplicas(t)
	ts1, ts2 := serveLive(t, l1), serveLive(t, l2)
	in := dialIngest(t, ctx, ts1, "lab")
	for i := range 20 {
		ls := lines(fmt.Sprintf("n%d-", i), 1, 50)
		ls = append(ls, relay.Line{ID: fmt.Sprintf("a%d", i), Raw: klogAdd(i, fmt.Sprintf("default/p%d", i))})
		wstest.Send(t, ctx, in, ls...)
	}
	want := getFired(t, ctx, ts1, "lab")
	if want.Cases["config"].Count != 20 {
		t.Fatalf("replica 1 counts %d config lines, want 20", want.Cases["config"].Count)
	}
	// The second replica follows the stream: wait for it to catch up.
	var got FiredRecord
	if !testwait.Until(10*time.Second, func() bool { got = getFired(t, ctx, ts2, "lab"); return reflect.DeepEqual(got, want) }) {
		t.Fatalf("replica 2's record\n%+v\nreplica 1's\n%+v", got, want)
	}
	s1, _ := caseLines(t, ctx, ts1, "lab", "config", "")
	s2, _ := caseLines(t, ctx, ts2, "lab", "config", "")
	if len(s1) != 20 || !reflect.DeepEqual(s1, s2) {
		t.Fatalf("case lines: replica 1 %v, replica 2 %v", s1, s2)
	}
}

// TestFiredPrune: lines the stream no longer holds leave the record, and
// a case's first line is read back anew.
func TestFiredPrune(t *testing.T) {
	r := firedRecord{}
	for i := uint64(1); i <= 10; i++ {
		line := classify.Line{Case: "config"}
		r.add(i, 100+i/4, &line, fmt.Sprint("raw", i))
	}
	refirst := r.dropBefore(5)
	if c := r.cases["config"]; len(c.at) != 6 || c.at[0].seq != 5 {
		t.Fatalf("after dropBefore(5): %v", c.at)
	}
	if refirst["config"] != (firedAt{5, 101}) {
		t.Fatalf("refirst %v", refirst)
	}
	if r.dropBefore(11); len(r.cases) != 0 {
		t.Fatalf("after every line went: %v", r.cases)
	}
}
