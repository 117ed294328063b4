package feeds

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/broker"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/natstest"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

const testToken = "t0ken"

// newLiveServer serves the live endpoints as routes.go mounts them.
func newLiveServer(t testing.TB, cfg Config) (*Service, *httptest.Server) {
	t.Helper()
	return newStoredLiveServer(t, "", cfg)
}

// newStoredLiveServer is newLiveServer with JetStream's files under dir
// ("" keeps them in memory).
func newStoredLiveServer(t testing.TB, dir string, cfg Config) (*Service, *httptest.Server) {
	t.Helper()
	if cfg.IngestToken == "" {
		cfg.IngestToken = testToken
	}
	if cfg.DemoPeriod == 0 {
		cfg.DemoPeriod = -1 // no demo unless a test asks
	}
	if cfg.DefaultTag == "" {
		cfg.DefaultTag = "v1.31.0"
	}
	b, err := broker.Open(t.Context(), broker.Config{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(cfg, b, nil)
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	l.closeBroker = true
	t.Cleanup(l.Close) // after the test server closes (cleanups run last first)
	return l, serveLive(t, l)
}

// serveLive serves l's endpoints as routes.go mounts them.
func serveLive(t testing.TB, l *Service) *httptest.Server {
	r := chi.NewRouter()
	r.Method("GET", "/feeds/{feed}/ws", l.HandleFeedSocket())
	r.Method("GET", "/feeds/{feed}/ingest", l.HandleIngest())
	r.Method("PUT", "/feeds/{feed}/journal", l.HandleJournal())
	r.Method("GET", "/feeds/{feed}/cursor", l.HandleCursor())
	r.Method("GET", "/feeds/{feed}/export", l.HandleExport())
	r.Method("GET", "/feeds/{feed}/fired", l.HandleFired())
	r.Method("GET", "/feeds/{feed}/fired/{case}/lines", l.HandleCaseLines())
	r.Method("POST", "/feeds/{feed}/timing", l.HandleTiming())
	r.Method("GET", "/feeds/{feed}/chains", l.HandleChains())
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(l.Collector())
	r.Method("GET", "/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	ts := httptest.NewServer(r)
	t.Cleanup(ts.Close)
	return ts
}

func dialIngest(t *testing.T, ctx context.Context, ts *httptest.Server, feed string) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+feed+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}},
	})
	if err != nil {
		t.Fatalf("dial ingest: %v", err)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

// browserMsg is any message a browser receives.
type browserMsg struct {
	Hello   *statusMsg `json:"hello"`
	Status  *statusMsg `json:"status"`
	Seq     uint64     `json:"seq"`
	Skipped int        `json:"skipped"`
	Rewind  uint64     `json:"rewind"`
	Demo    bool       `json:"demo"`
	Cut     bool       `json:"cut"`
	Line    *struct {
		Raw    string `json:"raw"`
		Text   string `json:"text"`
		Cursor string `json:"cursor"`
		Host   string `json:"host"`
		PID    int    `json:"pid"`
		Case   string `json:"case"`
	} `json:"line"`
	size int // bytes of the message
}

// feedClient reads messages from a feed socket.
type feedClient struct {
	t *testing.T
	c *websocket.Conn
	q []browserMsg
}

func dialBrowser(t *testing.T, ctx context.Context, ts *httptest.Server, path string) *feedClient {
	t.Helper()
	c, _, err := websocket.Dial(ctx, wstest.URL(ts, path), nil)
	if err != nil {
		t.Fatalf("dial %s: %v", path, err)
	}
	c.SetReadLimit(4 << 20)
	t.Cleanup(func() { c.CloseNow() })
	return &feedClient{t: t, c: c}
}

func (b *feedClient) next(ctx context.Context) (browserMsg, error) {
	for len(b.q) == 0 {
		_, data, err := b.c.Read(ctx)
		if err != nil {
			return browserMsg{}, err
		}
		for part := range strings.SplitSeq(string(data), "\n") {
			var m browserMsg
			if err := json.Unmarshal([]byte(part), &m); err != nil {
				b.t.Fatalf("bad message %q: %v", part, err)
			}
			m.size = len(part)
			b.q = append(b.q, m)
		}
	}
	m := b.q[0]
	b.q = b.q[1:]
	return m, nil
}

// lines reads until it has n lines, returning their raw text; status messages are skipped.
// nextLine returns the next message that carries a line.
func (b *feedClient) nextLine(ctx context.Context) browserMsg {
	b.t.Helper()
	for {
		m, err := b.next(ctx)
		if err != nil {
			b.t.Fatal(err)
		}
		if m.Line != nil {
			return m
		}
	}
}

func (b *feedClient) lines(ctx context.Context, n int) []string {
	b.t.Helper()
	var out []string
	for len(out) < n {
		m, err := b.next(ctx)
		if err != nil {
			b.t.Fatalf("after %d of %d lines: %v", len(out), n, err)
		}
		if m.Line != nil {
			out = append(out, m.Line.Raw+m.Line.Text) // a journald entry has text only
		}
		if m.Skipped > 0 {
			b.t.Fatalf("skipped %d", m.Skipped)
		}
	}
	return out
}

func lines(prefix string, from, to int) []relay.Line {
	var out []relay.Line
	for i := from; i <= to; i++ {
		out = append(out, relay.Line{ID: fmt.Sprintf("%s%d", prefix, i), Raw: fmt.Sprintf("%s line %d", prefix, i)})
	}
	return out
}

func raws(ls []relay.Line) string {
	var s []string
	for _, l := range ls {
		s = append(s, l.Raw)
	}
	return strings.Join(s, "|")
}

func TestLiveIngestAuth(t *testing.T) {
	tests := []struct {
		name, header string
		token        string // server's
		status       int
		body         string
	}{
		{name: "none", header: "", status: 401, body: "missing or wrong token"},
		{name: "wrong", header: "Bearer nope", status: 401, body: "missing or wrong token"},
		{name: "prefix", header: "Bearer " + testToken[:3], status: 401, body: "missing or wrong token"},
		{name: "basic", header: "Basic " + testToken, status: 401, body: "missing or wrong token"},
		{name: "disabled", header: "Bearer x", token: "-", status: 403, body: "--token"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := Config{}
			l, ts := newLiveServer(t, cfg)
			if tt.token == "-" {
				l.cfg.IngestToken = ""
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			h := http.Header{}
			if tt.header != "" {
				h.Set("Authorization", tt.header)
			}
			_, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/default/ingest"), &websocket.DialOptions{HTTPHeader: h})
			if err == nil || resp == nil || resp.StatusCode != tt.status {
				t.Fatalf("dial: %v, %v; want status %d", err, resp, tt.status)
			}
			body, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(body), tt.body) {
				t.Fatalf("body %q lacks %q", body, tt.body)
			}
			if st := l.feeds["default"].hub.Stats(); st.Next != 1 {
				t.Fatalf("feed touched: %+v", st)
			}
		})
	}
}

func TestLiveBrowserOrigin(t *testing.T) {
	_, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tt := range []struct {
		origin string
		ok     bool
	}{{"", true}, {ts.URL, true}, {"http://evil.example", false}, {"null", false}} {
		h := http.Header{}
		if tt.origin != "" {
			h.Set("Origin", tt.origin)
		}
		c, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/default/ws"), &websocket.DialOptions{HTTPHeader: h})
		if tt.ok != (err == nil) {
			t.Errorf("origin %q: err %v; want ok=%v", tt.origin, err, tt.ok)
		}
		if !tt.ok && (resp == nil || resp.StatusCode != http.StatusForbidden) {
			t.Errorf("origin %q: response %v; want 403", tt.origin, resp)
		}
		if c != nil {
			c.CloseNow()
		}
	}
}

func TestLiveIngestOversizedAndMalformed(t *testing.T) {
	_, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tt := range []struct {
		name   string
		msg    []byte
		status websocket.StatusCode
		reason string
	}{
		{"too big", []byte(`{"lines":[{"id":"1","raw":"` + strings.Repeat("x", ingestLimit) + `"}]}`), websocket.StatusMessageTooBig, "over 1 MiB"},
		{"not json", []byte(`lines please`), websocket.StatusUnsupportedData, `{"lines"`},
	} {
		c := dialIngest(t, ctx, ts, "default")
		if err := c.Write(ctx, websocket.MessageText, tt.msg); err != nil {
			t.Fatalf("%s: write: %v", tt.name, err)
		}
		_, _, err := c.Read(ctx)
		var ce websocket.CloseError
		if !errors.As(err, &ce) || ce.Code != tt.status || !strings.Contains(ce.Reason, tt.reason) {
			t.Errorf("%s: %v; want close %v with %q", tt.name, err, tt.status, tt.reason)
		}
	}
}

func TestLiveIngestDedupHistoryAndTail(t *testing.T) {
	l, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "lab")
	if ack := wstest.Send(t, ctx, in, lines("a", 1, 3)...); ack != "a3" {
		t.Fatalf("ack %q, want a3", ack)
	}
	// a resend of the tail plus new lines, as after a reconnect
	if ack := wstest.Send(t, ctx, in, lines("a", 2, 5)...); ack != "a5" {
		t.Fatalf("ack %q, want a5", ack)
	}
	// a batch of only duplicates still acks
	if ack := wstest.Send(t, ctx, in, lines("a", 4, 5)...); ack != "a5" {
		t.Fatalf("ack %q, want a5", ack)
	}

	// The ack means JetStream stored the lines; this replica's hub follows the
	// stream and may not have them all yet, so the hello's Next is at most 6
	// and whatever it lacks arrives as live lines, which lines() reads alike.
	late := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	hello, err := late.next(ctx)
	if err != nil || hello.Hello == nil || hello.Hello.Feed != "lab" || hello.Hello.Source != "relay" || hello.Hello.Next < 1 || hello.Hello.Next > 6 {
		t.Fatalf("first message %+v, %v; want a hello for lab with Next in 1..6", hello.Hello, err)
	}
	resumed := dialBrowser(t, ctx, ts, "/feeds/lab/ws?after=3")
	want := raws(lines("a", 1, 5))
	if got := strings.Join(late.lines(ctx, 5), "|"); got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
	if got := strings.Join(resumed.lines(ctx, 2), "|"); got != raws(lines("a", 4, 5)) {
		t.Fatalf("history after 3: %q", got)
	}
	wstest.Send(t, ctx, in, lines("a", 6, 7)...)
	if got := strings.Join(late.lines(ctx, 2), "|"); got != raws(lines("a", 6, 7)) {
		t.Fatalf("tail %q", got)
	}
	if got := strings.Join(resumed.lines(ctx, 2), "|"); got != raws(lines("a", 6, 7)) {
		t.Fatalf("tail after resume %q", got)
	}

	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"# TYPE syncloop_lines_ingested_total counter",
		`syncloop_lines_ingested_total{feed="lab"} 7`,
		`syncloop_lines_by_case_total{case="none",feed="lab"} 7`,
		`syncloop_lines_dropped_total{feed="lab"} 0`,
		`syncloop_clients{feed="lab"} 2`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	_ = l
}

// TestRestartKeepsHistoryAndDedup is the server killed after storing a
// batch but before acking it: the restarted server has the lines, and the
// relay's resend is not stored twice.
func TestLiveRestartKeepsHistoryAndDedup(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l1, ts1 := newStoredLiveServer(t, dir, Config{RingSize: 4})
	in := dialIngest(t, ctx, ts1, "lab")
	wstest.Send(t, ctx, in, lines("c", 1, 6)...)
	in.CloseNow() // the relay goes away with the server, before its close frame
	ts1.Close()
	l1.Close()

	l2, ts2 := newStoredLiveServer(t, dir, Config{RingSize: 4})
	in2 := dialIngest(t, ctx, ts2, "lab")
	if ack := wstest.Send(t, ctx, in2, lines("c", 5, 8)...); ack != "c8" {
		t.Fatalf("ack %q", ack)
	}
	b := dialBrowser(t, ctx, ts2, "/feeds/lab/ws?after=4")
	if got := strings.Join(b.lines(ctx, 4), "|"); got != raws(lines("c", 5, 8)) {
		t.Fatalf("after restart, from seq 5: %q", got)
	}
	b2 := dialBrowser(t, ctx, ts2, "/feeds/lab/ws?after=99")
	m, _ := b2.next(ctx)
	if m.Hello == nil || !m.Hello.Reset || m.Hello.Next != 9 {
		t.Fatalf("hello for a browser ahead of the server: %+v", m.Hello)
	}
	// A resend of everything, with other boundaries, stores nothing.
	wstest.Send(t, ctx, in2, lines("c", 1, 3)...)
	if ack := wstest.Send(t, ctx, in2, lines("c", 2, 8)...); ack != "c8" {
		t.Fatalf("ack %q", ack)
	}
	if got := exportLines(t, ctx, ts2, "lab", 0); strings.Join(got, "|") != raws(lines("c", 1, 8)) {
		t.Fatalf("stored after the resends: %q", got)
	}
	if got := exportLines(t, ctx, ts2, "lab", 6); strings.Join(got, "|") != raws(lines("c", 7, 8)) {
		t.Fatalf("export after 6: %q", got)
	}
	_ = l2
}

// TestLiveExportEmptyFeed: a feed with nothing stored exports nothing, at
// once (its "no last message" is an answer, not an outage to wait out).
func TestLiveExportEmptyFeed(t *testing.T) {
	_, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	dialIngest(t, ctx, ts, "empty").Close(websocket.StatusNormalClosure, "")
	if got := exportLines(t, ctx, ts, "empty", 0); len(got) != 0 {
		t.Fatalf("export of an empty feed: %q", got)
	}
}

// exportLines reads the feed's export.
func exportLines(t *testing.T, ctx context.Context, ts *httptest.Server, feed string, after uint64) []string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/feeds/%s/export?after=%d", ts.URL, feed, after), nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/x-ndjson; charset=utf-8" {
		t.Fatalf("export: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	var out []string
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		out = append(out, sc.Text())
	}
	return out
}

// TestLiveRestartKeepsVersion: the start-up line that named the kubelet's
// version leaves the ring (and the compacted file) long before the server
// restarts; the restarted server still knows the version.
func TestLiveRestartKeepsVersion(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l1, ts1 := newStoredLiveServer(t, dir, Config{RingSize: 4, DefaultTag: "v1.37.2"})
	in := dialIngest(t, ctx, ts1, "lab")
	wstest.Send(t, ctx, in, relay.Line{ID: "v", Raw: `I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion="v1.31.0"`})
	for i := 0; i < 10; i++ { // far past the ring, and compacted more than once
		wstest.Send(t, ctx, in, lines(fmt.Sprint("e", i, "-"), 1, 3)...)
	}
	in.CloseNow()
	ts1.Close()
	l1.Close()

	_, ts2 := newStoredLiveServer(t, dir, Config{RingSize: 4, DefaultTag: "v1.37.2"})
	b := dialBrowser(t, ctx, ts2, "/feeds/lab/ws")
	m, err := b.next(ctx)
	if err != nil || m.Hello == nil {
		t.Fatalf("no hello: %v", err)
	}
	if m.Hello.KubeletVersion != "v1.31.0" {
		t.Fatalf("after a restart the hello says kubelet_version %q; want v1.31.0", m.Hello.KubeletVersion)
	}
}

func TestLiveSlowBrowserGetsSkipped(t *testing.T) {
	// A browser falls behind by the ring before it skips; more than a
	// batch, so a reader that keeps up never does.
	l, ts := newLiveServer(t, Config{RingSize: 150})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "lab") // a relay's feed: browsers do not make one
	slow := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	fast := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	if m, _ := slow.next(ctx); m.Hello == nil {
		t.Fatal("no hello")
	}
	// The slow browser reads nothing: its TCP buffers fill, then the ring
	// moves past it.
	total := 0
	big := strings.Repeat("y", 4<<10)
	for i := 0; l.feeds["lab"].hub.Stats().Lagging == 0; i++ {
		if i > 200 {
			t.Fatalf("nothing dropped after %d lines", total)
		}
		var batch []relay.Line
		for j := 0; j < 100; j++ {
			total++
			batch = append(batch, relay.Line{ID: fmt.Sprint(total), Raw: fmt.Sprint(total, " ", big)})
		}
		wstest.Send(t, ctx, in, batch...)
		got := fast.lines(ctx, 100)
		if !strings.HasPrefix(got[99], fmt.Sprint(total, " ")) {
			t.Fatalf("fast browser behind: %q…", got[99][:10])
		}
	}
	t.Logf("dropped after %d lines at %v", total, time.Now().Format("15:04:05.000"))
	// The slow browser now reads: lines, then a skipped marker, then lines,
	// adding up to everything.
	seen, skipped := 0, 0
	for seen+skipped < total {
		m, err := slow.next(ctx)
		if err != nil {
			t.Fatalf("slow browser after %d+%d of %d: %v", seen, skipped, total, err)
		}
		if m.Line != nil {
			seen++
		}
		skipped += m.Skipped
	}
	t.Logf("read phase: %d lines, %d skipped, at %v", seen, skipped, time.Now().Format("15:04:05.000"))
	if skipped == 0 || seen+skipped != total {
		t.Fatalf("slow browser: %d lines, %d skipped, want %d in all with some skipped", seen, skipped, total)
	}
}

func TestLiveLongLineCut(t *testing.T) {
	_, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "lab")
	long := strings.Repeat("é", displayLimit) // 2 bytes each: cut mid-rune unless careful
	wstest.Send(t, ctx, in, relay.Line{ID: "1", Raw: long})
	m := dialBrowser(t, ctx, ts, "/feeds/lab/ws").nextLine(ctx)
	if !m.Cut || len(m.Line.Raw) > displayLimit || !strings.HasPrefix(long, m.Line.Raw) || len(m.Line.Raw)%2 != 0 {
		t.Fatalf("cut %v, %d bytes", m.Cut, len(m.Line.Raw))
	}
}

func TestLiveCloseEndsSockets(t *testing.T) {
	l, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "lab")
	b := dialBrowser(t, ctx, ts, "/feeds/lab/ws")
	b.next(ctx)
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }() // Close waits for the close handshakes below
	defer func() { <-closed }()
	for _, c := range []*websocket.Conn{b.c, in} {
		var err error
		for err == nil {
			_, _, err = c.Read(ctx)
		}
		if websocket.CloseStatus(err) != websocket.StatusGoingAway {
			t.Errorf("after Close: %v; want going away", err)
		}
	}
}

// TestLiveVersionAndDemo: the demo stops for good when a relay attaches, and
// a start-up line of another kubelet version makes the feed offer a link to
// that version's reading.
func TestLiveVersionAndDemo(t *testing.T) {
	_, ts := newLiveServer(t, Config{DefaultTag: "v1.37.2", DemoPeriod: 10 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	b := dialBrowser(t, ctx, ts, "/feeds/default/ws")
	m, err := b.next(ctx)
	if err != nil || m.Hello == nil || !m.Hello.Demo || m.Hello.Source != "demo" || !strings.Contains(m.Hello.Note, "simulated kubelet") {
		t.Fatalf("hello on the default feed: %+v, %v; want the demo", m.Hello, err)
	}
	in := dialIngest(t, ctx, ts, "default")
	wstest.Send(t, ctx, in, relay.Line{ID: "v", Raw: `I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion="v1.31.0"`})
	var st *statusMsg
	demoAfter := false
	for st == nil || st.KubeletVersion == "" {
		m, err := b.next(ctx)
		if err != nil {
			t.Fatalf("waiting for the relay's status: %v (last %+v)", err, st)
		}
		if m.Status != nil {
			st = m.Status
		}
		if m.Line != nil && st != nil && m.Demo {
			demoAfter = true
		}
	}
	if st.Demo || st.Source != "relay" || !strings.Contains(st.Note, "demo feed stopped") {
		t.Fatalf("status after a relay attached: %+v", st)
	}
	if st.KubeletVersion != "v1.31.0" || st.VersionLink != "/k8s/v1.31.0/" {
		t.Fatalf("status after a v1.31.0 start-up line: %+v; want a link to /k8s/v1.31.0/", st)
	}
	if demoAfter {
		t.Fatal("demo lines after the relay attached")
	}
}

// TestLiveJournalCommand: serve --journal-cmd runs the command, restarts it
// when it exits, and resumes journalctl after the last cursor it stored, so
// no line is stored twice.
func TestLiveJournalCommand(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
start=0
for a in "$@"; do
  case "$a" in
    --after-cursor=*) start=${a#--after-cursor=s=j;i=} ;;
  esac
done
for i in 1 2 3; do
  n=$((start + i))
  echo "{\"__CURSOR\":\"s=j;i=$n\",\"MESSAGE\":\"I1130 01:02:03.000000 1 x.go:1] entry $n\"}"
done
`
	if err := os.WriteFile(filepath.Join(dir, "journalctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, ts := newLiveServer(t, Config{JournalCmd: dir + "/journalctl -u kubelet -f -o json"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := dialBrowser(t, ctx, ts, "/feeds/default/ws")
	m, _ := b.next(ctx)
	if m.Hello == nil || m.Hello.Source != "journal" || m.Hello.Demo {
		t.Fatalf("hello: %+v; want a journal feed", m.Hello)
	}
	got := b.lines(ctx, 6) // two runs of the command, a second apart
	for i, text := range got {
		if !strings.HasSuffix(text, fmt.Sprintf("] entry %d", i+1)) {
			t.Fatalf("line %d is %q; want entry %d (each once, in order)", i+1, text, i+1)
		}
	}
}

// A journald JSON entry reaches browsers as its MESSAGE (text) and the
// fields shown (cursor, host, pid), without the entry's JSON, which the
// feed's stream keeps whole.
func TestLiveJournalEntryShownAsText(t *testing.T) {
	_, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	msg := `I1130 01:02:03.000000    4242 kubelet.go:2500] "SyncLoop (PLEG): event for pod" pod="default/probe-me" event={"Type":"ContainerStarted"}`
	entry, _ := json.Marshal(map[string]string{
		"__CURSOR": "s=abc;i=7;b=def", "__REALTIME_TIMESTAMP": "1796000523000000", "_HOSTNAME": "node-1",
		"_PID": "4242", "SYSLOG_IDENTIFIER": "kubelet", "_SYSTEMD_UNIT": "kubelet.service",
		"_CMDLINE": "/usr/bin/kubelet --config=/var/lib/kubelet/config.yaml " + strings.Repeat("--flag=value ", 40),
		"MESSAGE":  msg,
	})
	in := dialIngest(t, ctx, ts, "lab")
	wstest.Send(t, ctx, in, relay.Line{ID: "s=abc;i=7;b=def", Raw: string(entry)})
	m := dialBrowser(t, ctx, ts, "/feeds/lab/ws").nextLine(ctx)
	if l := m.Line; l.Raw != "" || l.Text != msg || l.Cursor != "s=abc;i=7;b=def" || l.Host != "node-1" || l.PID != 4242 || l.Case != "pleg" {
		t.Fatalf("browser's line: %+v", l)
	}
	if m.size >= len(entry) {
		t.Errorf("the browser's message is %d bytes for a %d-byte entry", m.size, len(entry))
	}
	if stored := exportLines(t, ctx, ts, "lab", 0); len(stored) != 1 || stored[0] != string(entry) {
		t.Fatalf("the feed's export is not the whole entry:\n%q", stored)
	}
}

// Relays with a token create feeds by sending to them (browsers cannot: a
// made-up name answers 404). Feeds left vacant (no line, no browser, no
// relay) make room for new ones once the server holds MaxFeeds; a feed
// with lines or a reader is never let go.
func TestLiveVacantFeedsMakeRoom(t *testing.T) {
	l, ts := newLiveServer(t, Config{})
	l.vacantAfter = 0
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := dialIngest(t, ctx, ts, "kept-lines")
	wstest.Send(t, ctx, in, relay.Line{ID: "1", Raw: "a line"})
	in.CloseNow()
	dialIngest(t, ctx, ts, "kept-reader").CloseNow()
	reader := dialBrowser(t, ctx, ts, "/feeds/kept-reader/ws")
	if m, _ := reader.next(ctx); m.Hello == nil {
		t.Fatal("no hello")
	}
	// visit connects a relay that sends nothing and leaves.
	visit := func(name string) int {
		c, resp, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/"+name+"/ingest"), &websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}},
		})
		if err != nil {
			if resp != nil {
				return resp.StatusCode
			}
			t.Fatal(err)
		}
		c.Close(websocket.StatusNormalClosure, "")
		return http.StatusSwitchingProtocols
	}
	for i := range 3 * MaxFeeds { // three times over the cap
		name := fmt.Sprint("made-up-", i)
		if code := visit(name); code != http.StatusSwitchingProtocols {
			t.Fatalf("visit %d: %d", i, code)
		}
		// The visitor has gone once its handler has detached.
		testwait.For(t, 5*time.Second, fmt.Sprintf("visit %d's end", i), func() bool {
			l.mu.Lock()
			f := l.feeds[name]
			l.mu.Unlock()
			relays := 0
			if f != nil {
				f.mu.Lock()
				relays = f.src.relays
				f.mu.Unlock()
			}
			return relays == 0
		})
	}
	l.mu.Lock()
	n, kept := len(l.feeds), l.feeds["kept-lines"] != nil && l.feeds["kept-reader"] != nil && l.feeds[defaultFeed] != nil
	l.mu.Unlock()
	if n > MaxFeeds || !kept {
		t.Fatalf("%d feeds; the default, the one with a line and the one with a reader kept: %v", n, kept)
	}
	// A relay still gets a new feed, and the kept ones still work.
	in2 := dialIngest(t, ctx, ts, "a-new-relay")
	if ack := wstest.Send(t, ctx, in2, relay.Line{ID: "x", Raw: "new"}); ack != "x" {
		t.Fatalf("ack %q", ack)
	}
	if got := dialBrowser(t, ctx, ts, "/feeds/kept-lines/ws").lines(ctx, 1); got[0] != "a line" {
		t.Fatalf("kept-lines: %q", got)
	}
	// Without vacant feeds, the cap holds.
	l.mu.Lock()
	l.vacantAfter = time.Hour
	l.mu.Unlock()
	for i := 0; ; i++ {
		if code := visit(fmt.Sprint("over-", i)); code == http.StatusServiceUnavailable {
			break
		} else if i > MaxFeeds {
			t.Fatal("no 503 past the cap")
		}
	}
}

// TestLiveDemoOnePerCluster: two replicas on one NATS run one demo between
// them, and the other takes over when the holder stops.
func TestLiveDemoOnePerCluster(t *testing.T) {
	b, b2 := natstest.Pair(t, t.TempDir())
	cfg := Config{DefaultTag: "v1.31.0", DemoPeriod: 50 * time.Millisecond}
	r := func(string) *extractor.Reading { return fixture.Reading(t) }
	l1, err := New(cfg, b, r)
	if err != nil {
		t.Fatal(err)
	}
	defer l1.Close()
	l2, err := New(cfg, b2, r)
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Close()
	holders := func() int {
		n := 0
		for _, l := range []*Service{l1, l2} {
			if l.demoHeld.Load() {
				n++
			}
		}
		return n
	}
	if !testwait.Until(10*time.Second, func() bool { return holders() == 1 }) {
		t.Fatalf("%d replicas hold the demo lease; want 1", holders())
	}
	for range 20 { // and it stays so
		if n := holders(); n != 1 {
			t.Fatalf("%d replicas hold the demo lease; want 1", n)
		}
		time.Sleep(10 * time.Millisecond) // sleep: the lease is watched over 200 ms
	}
	holder, other := l1, l2
	if !holder.demoHeld.Load() {
		holder, other = l2, l1
	}
	holder.Close()
	testwait.For(t, demoLeaseTTL, "the other replica taking the demo over", other.demoHeld.Load)
}

// TestLiveTagDemo: while the server's feed is the demo, a page at another
// tag gets that tag's own demo feed, classified at that tag; a browser
// that resumes with the other feed's sequence numbers takes the history
// anew; the tag's demo is let go once no browser watches it, and stops
// when a relay attaches to the server's feed.
func TestLiveTagDemo(t *testing.T) {
	b, err := broker.Open(t.Context(), broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	readings := map[string]*extractor.Reading{}
	for _, tag := range []string{"v1.31.0", "v1.20.0", "v1.25.0"} {
		r := *fixture.Reading(t)
		r.Tag = tag
		readings[tag] = &r
	}
	cfg := Config{DefaultTag: "v1.31.0", DemoPeriod: 20 * time.Millisecond, IngestToken: testToken}
	l, err := New(cfg, b, func(tag string) *extractor.Reading { return readings[tag] })
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	l.closeBroker = true
	l.demoIdle = 300 * time.Millisecond
	rt := chi.NewRouter()
	rt.Method("GET", "/feeds/{feed}/ws", l.HandleFeedSocket())
	rt.Method("GET", "/feeds/{feed}/ingest", l.HandleIngest())
	ts := httptest.NewServer(rt)
	t.Cleanup(func() { ts.Close(); l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	open := func(path string) (*feedClient, *statusMsg) {
		t.Helper()
		c := dialBrowser(t, ctx, ts, path)
		m, err := c.next(ctx)
		if err != nil || m.Hello == nil {
			t.Fatalf("%s: no hello: %+v, %v", path, m, err)
		}
		return c, m.Hello
	}
	c, h := open("/feeds/default/ws?tag=v1.20.0")
	if h.Feed != "demo-v1.20.0" || h.Tag != "v1.20.0" || !h.Demo {
		t.Fatalf("a page at v1.20.0 got %+v; want the demo-v1.20.0 feed, a demo at v1.20.0", h)
	}
	var last uint64
	for last < 3 {
		m, err := c.next(ctx)
		if err != nil {
			t.Fatal(err)
		}
		last = max(last, m.Seq)
	}
	c.c.CloseNow()
	for path, want := range map[string]string{
		"/feeds/default/ws?tag=v1.31.0": defaultFeed, // the default tag
		"/feeds/default/ws?tag=v1.99.0": defaultFeed, // a tag not loaded
		"/feeds/default/ws":             defaultFeed,
	} {
		c, h := open(path)
		if h.Feed != want {
			t.Errorf("%s: feed %q, want %q", path, h.Feed, want)
		}
		c.c.CloseNow()
	}
	c, h = open(fmt.Sprintf("/feeds/default/ws?tag=v1.20.0&after=%d&of=default", last))
	if !h.Reset {
		t.Errorf("resuming after line %d of another feed: %+v; want a reset", last, h)
	}
	c.c.CloseNow()
	c, h = open(fmt.Sprintf("/feeds/default/ws?tag=v1.20.0&after=%d&of=demo-v1.20.0", last))
	if h.Reset {
		t.Errorf("resuming after line %d of the same feed: %+v; want no reset", last, h)
	}
	c.c.CloseNow()

	has := func(name string) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.feeds[name] != nil
	}
	testwait.For(t, 10*time.Second, "the demo of v1.20.0 stopping with no browser watching", func() bool { return !has("demo-v1.20.0") })

	// A relay attaches to the server's feed: a tag's demo stops, saying so.
	c, h = open("/feeds/default/ws?tag=v1.25.0")
	if h.Feed != "demo-v1.25.0" {
		t.Fatalf("feed %q", h.Feed)
	}
	in := dialIngest(t, ctx, ts, defaultFeed)
	wstest.Send(t, ctx, in, relay.Line{ID: "1", Raw: "a real line"})
	for {
		m, err := c.next(ctx)
		if err != nil {
			t.Fatal("no status saying the demo stopped: ", err)
		}
		if m.Status != nil && !m.Status.Demo && strings.Contains(m.Status.Note, "demo stopped") {
			break
		}
	}
}

// TestLiveTagDemosHaveTheirOwnPool (issue 11: one client cannot lock the
// others out): pages at other tags start demos, which have their own cap
// (maxTagDemos) beside the feeds' (MaxFeeds). With every feed slot taken, a
// page at another tag still gets its demo; past maxTagDemos watched demos a
// page keeps the server's demo, and an unwatched demo makes room for a new
// one. Before, tags' demos took feed slots: 64 pages at 64 tags shut relays
// and rooms out, and a full server gave a page at another tag an error.
func TestLiveTagDemosHaveTheirOwnPool(t *testing.T) {
	b, err := broker.Open(t.Context(), broker.Config{})
	if err != nil {
		t.Fatal(err)
	}
	readings := map[string]*extractor.Reading{}
	var tags []string
	for i := range maxTagDemos + 1 {
		tag := fmt.Sprintf("v1.%d.0", 21+i)
		r := *fixture.Reading(t)
		r.Tag = tag
		readings[tag] = &r
		tags = append(tags, tag)
	}
	cfg := Config{DefaultTag: "v1.20.0", DemoPeriod: 50 * time.Millisecond, IngestToken: testToken}
	readings[cfg.DefaultTag] = fixture.Reading(t)
	l, err := New(cfg, b, func(tag string) *extractor.Reading { return readings[tag] })
	if err != nil {
		b.Close()
		t.Fatal(err)
	}
	l.closeBroker = true
	rt := chi.NewRouter()
	rt.Method("GET", "/feeds/{feed}/ws", l.HandleFeedSocket())
	ts := httptest.NewServer(rt)
	t.Cleanup(func() { ts.Close(); l.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	count := func(demos bool) int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.countLocked(demos)
	}
	// Every feed slot taken, as relays and rooms would.
	for i := 0; count(false) < MaxFeeds; i++ {
		if _, err := l.feed(fmt.Sprintf("relay-%d", i)); err != nil {
			t.Fatalf("feed %d: %v", i, err)
		}
	}
	if _, err := l.feed("one-more"); !errors.Is(err, errTooManyFeeds) {
		t.Fatalf("feed past MaxFeeds: %v; want errTooManyFeeds", err)
	}
	open := func(tag string) (*feedClient, string) {
		t.Helper()
		c := dialBrowser(t, ctx, ts, "/feeds/default/ws?tag="+tag)
		m, err := c.next(ctx)
		if err != nil || m.Hello == nil {
			t.Fatalf("tag %s: no hello: %+v, %v", tag, m, err)
		}
		return c, m.Hello.Feed
	}
	var watching []*feedClient
	for _, tag := range tags[:maxTagDemos] {
		c, feed := open(tag)
		if feed != demoFeedPrefix+tag {
			t.Fatalf("a page at %s with every feed slot taken got feed %q; want its demo", tag, feed)
		}
		watching = append(watching, c)
	}
	last := tags[maxTagDemos]
	c, feed := open(last)
	if feed != defaultFeed {
		t.Fatalf("a page at %s with %d demos watched got feed %q; want the server's demo", last, maxTagDemos, feed)
	}
	c.c.CloseNow()
	if _, err := l.feed("one-more"); !errors.Is(err, errTooManyFeeds) {
		t.Fatalf("the demos took a feed slot: %v", err)
	}

	// The first page leaves: its demo, unwatched, makes room for the next.
	watching[0].c.CloseNow()
	var got string
	if !testwait.Until(10*time.Second, func() bool {
		var c *feedClient
		c, got = open(last)
		c.c.CloseNow()
		return got == demoFeedPrefix+last
	}) {
		t.Fatalf("a page at %s after one demo's page left got feed %q; want its demo", last, got)
	}
	l.mu.Lock()
	_, first := l.feeds[demoFeedPrefix+tags[0]]
	l.mu.Unlock()
	if first {
		t.Errorf("the unwatched demo of %s is still held", tags[0])
	}
	if n := count(true); n > maxTagDemos {
		t.Errorf("%d tags' demos, cap %d", n, maxTagDemos)
	}
	for _, c := range watching[1:] {
		c.c.CloseNow()
	}
}

// TestLiveRoomFeedNoteAfterRestart (issue 12, item 11): a room's feed with
// stored lines, opened by a restarted server, says these are the room's
// lines so far, not "No journal in this room yet" above them; a new room's
// feed says there is no journal yet. The note is set as soon as the room
// asks, before the stored lines have reached the feed's hub.
func TestLiveRoomFeedNoteAfterRestart(t *testing.T) {
	dir := t.TempDir()
	open := func() *Service {
		b, err := broker.Open(t.Context(), broker.Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		l, err := New(Config{DefaultTag: "v1.31.0", DemoPeriod: -1}, b, nil)
		if err != nil {
			b.Close()
			t.Fatal(err)
		}
		l.closeBroker = true
		return l
	}
	l := open()
	f, err := l.feed("room-abc")
	if err != nil {
		t.Fatal(err)
	}
	var lines []relay.Line
	for i := range 230 {
		lines = append(lines, relay.Line{ID: fmt.Sprint("run-", i+1), Raw: fmt.Sprint("line ", i+1)})
	}
	if _, err := f.ingest(lines, false); err != nil {
		t.Fatal(err)
	}
	l.Close()

	l = open()
	defer l.Close()
	note := func(name string) string {
		l.hold(name, Owned{Tag: "v1.31.0", Waiting: "No journal in this room yet", History: "the room's journal lines so far"})
		l.mu.Lock()
		f := l.feeds[name]
		l.mu.Unlock()
		return f.statusMsg().Note
	}
	if n := note("room-abc"); !strings.Contains(n, "journal lines so far") {
		t.Errorf("a room's feed with 230 stored lines, after a restart, says %q", n)
	}
	if n := note("room-new"); !strings.Contains(n, "No journal in this room yet") {
		t.Errorf("a new room's feed says %q", n)
	}
}
