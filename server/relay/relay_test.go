package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/internal/testwait"
)

func TestResumeCommand(t *testing.T) {
	const cur = "s=0a1b;i=2c;b=3d;m=4e;t=5f;x=60"
	tests := []struct {
		cmd, cursor, want string
		err               bool
	}{
		// A first start: from now, without journalctl's tail (which drops lines).
		{cmd: "journalctl -u kubelet -f -o json --all", cursor: "", want: "journalctl -u kubelet -f -o json --all --since=now --no-tail"},
		{cmd: "ssh worker sudo journalctl -u kubelet --follow", cursor: "", want: "ssh worker sudo journalctl -u kubelet --follow --since=now --no-tail"},
		{cmd: "journalctl -u kubelet -fo json", cursor: "", want: "journalctl -u kubelet -fo json --since=now --no-tail"},
		// It says where to start itself, or does not follow: as given.
		{cmd: "journalctl -u kubelet -f -o json -n 100", cursor: "", want: "journalctl -u kubelet -f -o json -n 100"},
		{cmd: "journalctl -u kubelet -f --since=-1h", cursor: "", want: "journalctl -u kubelet -f --since=-1h"},
		{cmd: "journalctl -u kubelet -b -f", cursor: "", want: "journalctl -u kubelet -b -f"},
		{cmd: "journalctl -u kubelet -o json", cursor: "", want: "journalctl -u kubelet -o json"},
		{cmd: "journalctl -u kubelet -f -o json --all", cursor: cur,
			want: "journalctl -u kubelet -f -o json --all '--after-cursor=" + cur + "' --no-tail"},
		{cmd: "sudo /usr/bin/journalctl -u kubelet -f -o json ", cursor: cur,
			want: "sudo /usr/bin/journalctl -u kubelet -f -o json '--after-cursor=" + cur + "' --no-tail"},
		{cmd: "ssh worker sudo journalctl -u kubelet -f -o json --all", cursor: cur,
			want: "ssh worker sudo journalctl -u kubelet -f -o json --all \"'--after-cursor=" + cur + "'\" --no-tail"},
		{cmd: "tail -f /var/log/kubelet.log", cursor: cur, want: "tail -f /var/log/kubelet.log"},
		{cmd: "journalctl -f -o json", cursor: "s=1;$(rm -rf ~)", err: true},
		{cmd: "journalctl -f -o json", cursor: "s=1' x", err: true},
	}
	for _, tt := range tests {
		got, err := ResumeCommand(tt.cmd, tt.cursor)
		if (err != nil) != tt.err || got != tt.want && !tt.err {
			t.Errorf("ResumeCommand(%q, %q) = %q, %v; want %q (error %v)", tt.cmd, tt.cursor, got, err, tt.want, tt.err)
		}
	}
}

func TestParseJournalAndLineTime(t *testing.T) {
	tests := []struct {
		raw    string
		cursor string
		ok     bool
		when   string // RFC 3339 in UTC, "" for none
	}{
		{raw: `{"__CURSOR":"s=a;i=1","__REALTIME_TIMESTAMP":"1764464523123456","MESSAGE":"x"}`, cursor: "s=a;i=1", ok: true, when: "2025-11-30T01:02:03.123456Z"},
		{raw: `{"__CURSOR":"s=a;i=2","MESSAGE":[73,49]}`, cursor: "s=a;i=2", ok: true},
		{raw: `{"MESSAGE":"no cursor"}`},
		{raw: `{"__CURSOR": 5}`},
		{raw: `{"__CURSOR":"s=a`},
		{raw: `I1130 01:02:03.123456    1234 kubelet.go:2407] "SyncLoop ADD"`, when: "-11-30T01:02:03.123456Z"},
		{raw: `Nov 30 01:02:03 worker kubelet[1234]: E1130 01:02:04.000001    1234 x.go:1] boom`, when: "-11-30T01:02:04.000001Z"},
		{raw: `plain text`},
	}
	for _, tt := range tests {
		j, ok := ParseJournal([]byte(tt.raw))
		if ok != tt.ok || j.Cursor != tt.cursor {
			t.Errorf("ParseJournal(%q) = %+v, %v; want cursor %q, %v", tt.raw, j, ok, tt.cursor, tt.ok)
		}
		when, ok := lineTime([]byte(tt.raw))
		got := ""
		if ok {
			got = when.UTC().Format("2006-01-02T15:04:05.999999Z")
		}
		if strings.HasPrefix(tt.when, "-") { // klog has no year
			got = strings.TrimPrefix(got, fmt.Sprint(time.Now().Year()))
		}
		if got != tt.when {
			t.Errorf("lineTime(%q) = %q, want %q", tt.raw, got, tt.when)
		}
	}
}

// fakeServer is an ingest endpoint that stores lines by id, like the real
// one, and can be told to misbehave.
type fakeServer struct {
	t     *testing.T
	token string

	mu       sync.Mutex
	stored   []string
	seen     map[string]bool
	received int // lines received, resends included
	batches  int
	conns    int
	// dropEvery > 0: every n-th batch is stored but the connection is
	// dropped before the ack, as a server killed at the worst moment.
	dropEvery int
	noAck     bool
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+s.token {
		http.Error(w, "missing or wrong token", http.StatusUnauthorized)
		return
	}
	if r.URL.Path != "/feeds/lab/ingest" {
		http.Error(w, "wrong path "+r.URL.Path, http.StatusNotFound)
		return
	}
	c, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	s.mu.Lock()
	s.conns++
	s.mu.Unlock()
	for {
		_, b, err := c.Read(r.Context())
		if err != nil {
			return
		}
		var m struct { // encoding/json, not DecodeBatch: the wire format is checked independently
			Lines []Line `json:"lines"`
		}
		if err := json.Unmarshal(b, &m); err != nil {
			s.t.Errorf("bad batch: %v", err)
			return
		}
		s.mu.Lock()
		s.batches++
		for _, l := range m.Lines {
			s.received++
			if !s.seen[l.ID] {
				s.seen[l.ID] = true
				s.stored = append(s.stored, l.Raw)
			}
		}
		drop := s.dropEvery > 0 && s.batches%s.dropEvery == 0
		noAck := s.noAck
		s.mu.Unlock()
		if drop {
			return
		}
		if noAck || len(m.Lines) == 0 {
			continue
		}
		ack, _ := json.Marshal(ackMsg{Ack: m.Lines[len(m.Lines)-1].ID})
		if err := c.Write(r.Context(), websocket.MessageText, ack); err != nil {
			return
		}
	}
}

func newFake(t *testing.T) (*fakeServer, *httptest.Server) {
	fs := &fakeServer{t: t, token: "s3cret", seen: map[string]bool{}}
	ts := httptest.NewServer(fs)
	t.Cleanup(ts.Close)
	return fs, ts
}

func newClient(url string) *Client {
	return &Client{Server: url, Feed: "lab", Token: "s3cret", Batch: 7, Window: 30, MinBackoff: time.Millisecond, MaxBackoff: 20 * time.Millisecond}
}

// journalLines writes n journald JSON lines and returns the file and the lines.
func journalLines(t *testing.T, n int) (string, []string) {
	t.Helper()
	var lines []string
	for i := 1; i <= n; i++ {
		lines = append(lines, fmt.Sprintf(`{"__CURSOR":"s=ab;i=%x","__REALTIME_TIMESTAMP":"%d","MESSAGE":"I1130 01:02:03.000000 1 kubelet.go:2407] line %d"}`, i, 1764464523000000+int64(i)*1000, i))
	}
	name := filepath.Join(t.TempDir(), "journal.json")
	if err := os.WriteFile(name, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return name, lines
}

func TestDropsLoseAndDuplicateNothing(t *testing.T) {
	for _, dropEvery := range []int{0, 3} {
		t.Run(fmt.Sprint("dropEvery=", dropEvery), func(t *testing.T) {
			fs, ts := newFake(t)
			fs.dropEvery = dropEvery
			file, want := journalLines(t, 500)
			c := newClient(ts.URL)
			c.StateFile = filepath.Join(t.TempDir(), "state")
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := c.Run(ctx, func(ctx context.Context, emit Emit) error {
				return ReplayFile(ctx, file, 0, "", emit)
			}); err != nil {
				t.Fatal(err)
			}
			fs.mu.Lock()
			defer fs.mu.Unlock()
			if strings.Join(fs.stored, "\n") != strings.Join(want, "\n") {
				t.Fatalf("server stored %d lines, want the %d of the journal in order", len(fs.stored), len(want))
			}
			if dropEvery == 3 && (fs.received <= len(want) || fs.conns < 2) {
				t.Fatalf("dropping connections caused no resend: %d received over %d connections", fs.received, fs.conns)
			}
			if c.Acked() != uint64(len(want)) {
				t.Fatalf("acked %d, want %d", c.Acked(), len(want))
			}
			st, err := LoadState(c.StateFile)
			if err != nil || st.Cursor != "s=ab;i=1f4" || st.Feed != "lab" {
				t.Fatalf("state %+v, %v; want the last cursor s=ab;i=1f4", st, err)
			}
		})
	}
}

func TestStateResumeSkipsAcknowledged(t *testing.T) {
	fs, ts := newFake(t)
	file, want := journalLines(t, 100)
	c := newClient(ts.URL)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Run(ctx, func(ctx context.Context, emit Emit) error {
		return ReplayFile(ctx, file, 0, "s=ab;i=3c", emit) // line 60
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fs.stored, "\n"); got != strings.Join(want[60:], "\n") {
		t.Fatalf("resumed replay stored %d lines, want the 40 after cursor i=3c", len(fs.stored))
	}
	// A cursor not in the file: everything is sent rather than nothing.
	fs2, ts2 := newFake(t)
	if err := newClient(ts2.URL).Run(ctx, func(ctx context.Context, emit Emit) error {
		return ReplayFile(ctx, file, 0, "s=other;i=1", emit)
	}); err != nil {
		t.Fatal(err)
	}
	if len(fs2.stored) != 100 {
		t.Fatalf("unknown cursor: %d lines stored, want all 100", len(fs2.stored))
	}
}

func TestWrongTokenStops(t *testing.T) {
	_, ts := newFake(t)
	c := newClient(ts.URL)
	c.Token = "wrong"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err := c.Run(ctx, func(ctx context.Context, emit Emit) error {
		return ReadLines(ctx, strings.NewReader("a\nb\n"), emit)
	})
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "missing or wrong token") {
		t.Fatalf("Run with a wrong token = %v; want ErrUnauthorized with the server's words", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Fatalf("took %v: retried a 401", time.Since(start))
	}
}

func TestRefusalStops(t *testing.T) {
	_, ts := newFake(t)
	c := newClient(ts.URL)
	c.Feed = "other" // the fake serves only lab: 404
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.Run(ctx, func(ctx context.Context, emit Emit) error {
		return ReadLines(ctx, strings.NewReader("a\n"), emit)
	})
	if err == nil || !strings.Contains(err.Error(), "404") || ctx.Err() != nil {
		t.Fatalf("Run against a 404: %v; want it to stop with the status", err)
	}
}

func TestBackpressureInsteadOfLoss(t *testing.T) {
	fs, ts := newFake(t)
	fs.noAck = true
	c := newClient(ts.URL)
	c.MaxLines = 25
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	emitted := 0
	done := make(chan error, 1)
	go func() {
		done <- c.Run(ctx, func(ctx context.Context, emit Emit) error {
			for i := 0; ; i++ {
				if err := emit(Line{ID: fmt.Sprint(i), Raw: "x"}); err != nil {
					return err
				}
				mu.Lock()
				emitted++
				mu.Unlock()
			}
		})
	}()
	emittedNow := func() int { mu.Lock(); defer mu.Unlock(); return emitted }
	testwait.Until(10*time.Second, func() bool { return emittedNow() >= 25 }) // the check below says how many
	time.Sleep(300 * time.Millisecond)                                        // sleep: a window in which a source not held would emit more
	n := emittedNow()
	if n != 25 {
		t.Fatalf("the source emitted %d lines with nothing acknowledged; want it held at 25", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run after cancel = %v", err)
	}
}

// TestRunCommandResumesJournalctl runs a fake journalctl that prints three
// entries after the cursor it is given and exits: RunCommand must restart it
// with --after-cursor of the last entry and --no-tail.
func TestRunCommandResumesJournalctl(t *testing.T) {
	dir := t.TempDir()
	script := `#!/bin/sh
start=0
tail=yes
for a in "$@"; do
  case "$a" in
    --after-cursor=*) start=${a#--after-cursor=s=ab;i=} ;;
    --no-tail) tail=no ;;
  esac
done
if [ "$start" != 0 ] && [ "$tail" = yes ]; then echo "resumed without --no-tail" >&2; exit 1; fi
for i in 1 2 3; do
  n=$((start + i))
  echo "{\"__CURSOR\":\"s=ab;i=$n\",\"MESSAGE\":\"entry $n\"}"
done
`
	if err := os.WriteFile(filepath.Join(dir, "journalctl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []string
	err := RunCommand(ctx, dir+"/journalctl -u kubelet -f -o json", "s=ab;i=10", func(l Line) error {
		if !l.Cursor {
			t.Errorf("line %q has no cursor id", l.Raw)
		}
		got = append(got, l.ID)
		if len(got) == 6 {
			cancel()
		}
		return nil
	}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("RunCommand = %v", err)
	}
	want := "s=ab;i=11 s=ab;i=12 s=ab;i=13 s=ab;i=14 s=ab;i=15 s=ab;i=16"
	if strings.Join(got, " ") != want {
		t.Fatalf("ids %v, want %s", got, want)
	}
}

func TestReadLinesCutsLongLines(t *testing.T) {
	long := strings.Repeat("x", MaxLineBytes+100_000)
	in := "a\r\n\n" + long + "\nb"
	var got []Line
	if err := ReadLines(context.Background(), strings.NewReader(in), func(l Line) error {
		got = append(got, l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Raw != "a" || len(got[1].Raw) != MaxLineBytes || got[2].Raw != "b" {
		t.Fatalf("got %d lines (%q…)", len(got), got[0].Raw)
	}
	if got[0].ID == got[2].ID || got[0].Cursor {
		t.Fatalf("ids %q %q must differ and not be cursors", got[0].ID, got[2].ID)
	}
}

func TestReplaySpeed(t *testing.T) {
	// 5 lines 100 ms apart: 400 ms at speed 1, ~100 ms at speed 4, none at 0.
	var lines []string
	for i := range 5 {
		lines = append(lines, fmt.Sprintf("I1130 01:02:03.%06d 1 x.go:1] n", i*100000))
	}
	name := filepath.Join(t.TempDir(), "klog.txt")
	os.WriteFile(name, []byte(strings.Join(lines, "\n")), 0o644)
	for _, tt := range []struct {
		speed    float64
		min, max time.Duration
	}{{0, 0, 80 * time.Millisecond}, {4, 90 * time.Millisecond, 300 * time.Millisecond}, {1, 390 * time.Millisecond, 900 * time.Millisecond}} {
		start := time.Now()
		n := 0
		if err := ReplayFile(context.Background(), name, tt.speed, "", func(Line) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); n != 5 || d < tt.min || d > tt.max {
			t.Errorf("speed %v: %d lines in %v, want 5 in [%v, %v]", tt.speed, n, d, tt.min, tt.max)
		}
	}
}

// A command whose shell leaves a child holding stdout open (as `sh -c
// "journalctl … | …"` or ssh can) must still stop when the relay stops, and
// take the child with it: the serve --journal-cmd shutdown hang.
func TestRunCommandStopsGrandchildren(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "pid")
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		done <- RunCommand(ctx, "sleep 300 & echo $! > "+marker+"; echo started; wait", "", func(Line) error {
			select {
			case got <- struct{}{}:
			default:
			}
			return nil
		}, slog.New(slog.DiscardHandler))
	}()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the command's first line never arrived")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("RunCommand = %v, want context.Canceled", err)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("RunCommand did not return after its context ended")
	}
	b, err := os.ReadFile(marker)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !testwait.Until(5*time.Second, func() bool { return !alive(pid) }) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Fatalf("the command's child %d outlived the relay", pid)
	}
}

// alive reports whether pid runs; a zombie does not (PID 1 on some machines
// never reaps the orphans it inherits).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// the state follows the command name's closing parenthesis
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// TestFailsOverToTheNextServer: with two replicas of one site (one store
// behind both), the relay goes on to the second when the first is down
// from the start, or goes down mid-stream; nothing is lost or duplicated.
func TestFailsOverToTheNextServer(t *testing.T) {
	for _, name := range []string{"first down", "first dies"} {
		t.Run(name, func(t *testing.T) {
			fs := &fakeServer{t: t, token: "s3cret", seen: map[string]bool{}}
			var down atomic.Bool
			down.Store(name == "first down")
			var served atomic.Int32
			first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if down.Load() || served.Add(1) > 1 {
					down.Store(true)
					http.Error(w, "down", http.StatusBadGateway)
					return
				}
				fs.ServeHTTP(w, r) // dropped after 3 batches below
			}))
			defer first.Close()
			second := httptest.NewServer(fs)
			defer second.Close()
			fs.dropEvery = 3
			file, want := journalLines(t, 300)
			c := newClient(first.URL + "," + second.URL)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			if err := c.Run(ctx, func(ctx context.Context, emit Emit) error {
				return ReplayFile(ctx, file, 0, "", emit)
			}); err != nil {
				t.Fatal(err)
			}
			fs.mu.Lock()
			defer fs.mu.Unlock()
			if strings.Join(fs.stored, "\n") != strings.Join(want, "\n") {
				t.Fatalf("stored %d lines, want the %d of the journal in order", len(fs.stored), len(want))
			}
			if n := served.Load(); (name == "first dies") != (n >= 1) {
				t.Fatalf("the first server served %d connections", n)
			}
		})
	}
}
