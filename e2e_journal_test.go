package main

// A journal with nothing to install (issue 37): a real curl streams the
// recorded lab journal into a real server, started as `syncloop serve`
// through run, on PUT /feeds/{feed}/journal; sent twice, each entry is
// stored and counted once.

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/relay"
)

// serveRun runs `syncloop serve` with args through run, on a
// loopback port, and returns its base URL once it is healthy; the test's
// end stops it as a signal would.
func serveRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stderr lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"syncloop", "serve", "--addr", "127.0.0.1:0"}, args...),
			goEnv(nil), strings.NewReader(""), io.Discard, &stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
		if t.Failed() {
			t.Logf("serve's log (tail):\n%s", tail(stderr.String(), 4000))
		}
	})
	base := "http://" + servingAt(t, &stderr, done, 30*time.Second)
	hctx, hcancel := context.WithTimeout(ctx, 3*time.Minute)
	defer hcancel()
	if err := waitHealthz(hctx, base, done); err != nil {
		t.Fatalf("serve: %v", err)
	}
	return base
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// curlJournal runs the room page's curl command against feed with
// stdin as the journal, and returns the status and summary it printed.
func curlJournal(t *testing.T, base, feed, token string, stdin io.Reader) (int, feeds.JournalSummary) {
	t.Helper()
	status, sum, err := runCurl(base, feed, token, stdin)
	if err != nil {
		t.Fatal(err)
	}
	return status, sum
}

// runCurl is curlJournal, for a goroutine of the test's own.
func runCurl(base, feed, token string, stdin io.Reader) (int, feeds.JournalSummary, error) {
	var sum feeds.JournalSummary
	cmd := exec.Command("curl", "-sS", "--no-buffer", "-T", "-", "-H", "Authorization: Bearer "+token,
		"-w", "\n%{http_code}", base+"/feeds/"+feed+"/journal")
	cmd.Stdin = stdin
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, sum, fmt.Errorf("curl: %v\n%s", err, stderr.Bytes())
	}
	i := bytes.LastIndexByte(out, '\n')
	if i < 0 {
		return 0, sum, fmt.Errorf("curl printed %q", out)
	}
	body := strings.TrimSpace(string(out[:i]))
	status, err := strconv.Atoi(string(out[i+1:]))
	if err != nil {
		return 0, sum, fmt.Errorf("curl printed %q", out)
	}
	if !strings.HasPrefix(body, "{") { // refused before the body was read: a line of text
		sum.Error = body
		return status, sum, nil
	}
	if err := json.Unmarshal([]byte(body), &sum); err != nil {
		return 0, sum, fmt.Errorf("the journal's answer %q: %v", body, err)
	}
	return status, sum, nil
}

// sameFired waits until the records of feeds a and b count the same
// cases, and fails the test with both if they do not within ctx.
func sameFired(t *testing.T, ctx context.Context, base, a, b string) firedRecord {
	t.Helper()
	var ra, rb firedRecord
	var err error
	if !testwait.UntilDone(ctx, func() bool {
		var errA, errB error
		ra, errA = getFired(base, a)
		rb, errB = getFired(base, b)
		err = errors.Join(errA, errB)
		return err == nil && len(ra.Cases) > 0 && reflect.DeepEqual(ra.Cases, rb.Cases)
	}) {
		t.Fatalf("the records of %s and %s (%v):\n%v\n%v", a, b, err, firedCounts(ra), firedCounts(rb))
	}
	return ra
}

// recordedJournal is the lab's recorded journal, a line per entry, and
// each entry's cursor.
func recordedJournal(t *testing.T) (lines, cursors []string) {
	t.Helper()
	f, err := os.Open(labJournal)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		j, ok := relay.ParseJournal(sc.Bytes())
		if !ok {
			t.Fatalf("the recorded journal has a line without a cursor: %.200s", sc.Text())
		}
		lines, cursors = append(lines, sc.Text()), append(cursors, j.Cursor)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return lines, cursors
}

func joinLines(lines []string) string { return strings.Join(lines, "\n") + "\n" }

// getText is GET url with a bearer token: its status and body.
func getText(t *testing.T, url, token string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// shownLines follows the feed's browser websocket and sends each line
// it shows (its raw text, or a journald entry's MESSAGE) on the channel.
func shownLines(t *testing.T, ctx context.Context, url string) <-chan string {
	t.Helper()
	c, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatalf("the feed's websocket: %v", err)
	}
	c.SetReadLimit(8 << 20)
	out := make(chan string, 1<<16)
	go func() { // owned: ends with ctx, which closes the connection
		defer c.CloseNow()
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				return
			}
			for part := range strings.SplitSeq(string(data), "\n") {
				var m struct {
					Line *struct{ Raw, Text string } `json:"line"`
				}
				if json.Unmarshal([]byte(part), &m) == nil && m.Line != nil {
					select {
					case out <- m.Line.Raw + m.Line.Text:
					case <-ctx.Done():
						return
					}
				}
			}
		}
	}()
	return out
}

// waitShown waits until a line shown contains want.
func waitShown(t *testing.T, ctx context.Context, shown <-chan string, want string) {
	t.Helper()
	for {
		select {
		case s := <-shown:
			if strings.Contains(s, want) {
				return
			}
		case <-ctx.Done():
			t.Fatalf("no line with %q shown", want)
		}
	}
}

func TestE2EJournalCurl(t *testing.T) {
	t.Parallel() // its own server, directories and port
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is needed (.ci/run installs it): %v", err)
	}
	dir := t.TempDir()
	cache := filepath.Join(dir, "cache")
	copyReadingCache(cache, extractor.DefaultTag)
	lctx, lcancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer lcancel()
	if _, err := extractor.Load(lctx, extractor.Options{Tag: extractor.DefaultTag, CacheDir: cache, Symbols: content.Symbols()}); err != nil {
		t.Fatalf("the Reading of %s: %v", extractor.DefaultTag, err)
	}
	const readTimeout = 2 * time.Second
	base := serveRun(t, "--token", "tok", "--cache-dir", cache, "--data-dir", filepath.Join(dir, "data"),
		"--read-timeout", readTimeout.String())
	lines, cursors := recordedJournal(t)
	full := filepath.Join(dir, "journal.json")
	if err := os.WriteFile(full, []byte(joinLines(lines)), 0o644); err != nil {
		t.Fatal(err)
	}
	n, part := len(lines), len(lines)*3/5
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The journal once, to compare with.
	status, sum := curlJournal(t, base, "once", "tok", strings.NewReader(joinLines(lines)))
	if want := (feeds.JournalSummary{Received: n, Stored: n, LastCursor: cursors[n-1]}); status != 200 || sum != want {
		t.Fatalf("the journal once: %d %+v; want 200 %+v", status, sum, want)
	}

	t.Run("sent twice, with a break", func(t *testing.T) {
		// The first run streams, and breaks off after 3/5 of the journal:
		// its lines are stored and shown while the body goes on.
		pr, pw := io.Pipe()
		type result struct {
			status int
			sum    feeds.JournalSummary
		}
		first := make(chan result, 1)
		go func() { // owned: ends when the pipe is closed below
			st, s, err := runCurl(base, "lab", "tok", pr)
			if err != nil {
				s.Error = err.Error()
			}
			first <- result{st, s}
		}()
		storedTo := func(i int) {
			if !testwait.UntilDone(ctx, func() bool { // stored, while curl still sends
				st, c := getText(t, base+"/feeds/lab/cursor", "tok")
				return st == 200 && strings.TrimSpace(c) == cursors[i]
			}) {
				t.Fatalf("entry %d was not stored while the body went on", i+1)
			}
		}
		if _, err := io.WriteString(pw, joinLines(lines[:10])); err != nil {
			t.Fatal(err)
		}
		storedTo(9)
		shown := shownLines(t, ctx, "ws"+strings.TrimPrefix(base, "http")+"/feeds/lab/ws")
		if _, err := io.WriteString(pw, joinLines(lines[10:part])); err != nil {
			t.Fatal(err)
		}
		storedTo(part - 1)
		for i := range part { // the ten stored before, then each as it came
			select {
			case <-shown:
			case <-ctx.Done():
				t.Fatalf("%d of the %d lines sent were shown", i, part)
			}
		}
		pw.Close()
		r := <-first
		if want := (feeds.JournalSummary{Received: part, Stored: part, LastCursor: cursors[part-1]}); r.status != 200 || r.sum != want {
			t.Fatalf("the first run: %d %+v; want 200 %+v", r.status, r.sum, want)
		}
		// The same command again, from the journal's start.
		for run := range 2 {
			status, sum := curlJournal(t, base, "lab", "tok", strings.NewReader(joinLines(lines)))
			want := feeds.JournalSummary{Received: n, Stored: n - part, Duplicates: part, LastCursor: cursors[n-1]}
			if run == 1 {
				want.Stored, want.Duplicates = 0, n
			}
			if status != 200 || sum != want {
				t.Fatalf("run %d again: %d %+v; want 200 %+v", run+2, status, sum, want)
			}
			// Each entry counted once: as the journal sent once is.
			rec := sameFired(t, ctx, base, "lab", "once")
			if run == 1 {
				t.Logf("counts %v", firedCounts(rec))
			}
		}
		checkExport(t, base, "lab", full)
	})

	t.Run("the cursor, for journalctl --after-cursor", func(t *testing.T) {
		if st, _ := getText(t, base+"/feeds/resume/cursor", "tok"); st != http.StatusNotFound {
			t.Errorf("the cursor of a feed never sent to: %d, want 404", st)
		}
		status, _ := curlJournal(t, base, "resume", "tok", strings.NewReader(joinLines(lines[:part])))
		st, c := getText(t, base+"/feeds/resume/cursor", "tok")
		if status != 200 || st != 200 || c != cursors[part-1]+"\n" {
			t.Fatalf("the cursor after %d entries: %d %q; want %s", part, st, c, cursors[part-1])
		}
		if st, _ := getText(t, base+"/feeds/resume/cursor", "wrong"); st != http.StatusUnauthorized {
			t.Errorf("the cursor with a wrong token: %d, want 401", st)
		}
		// What journalctl --after-cursor=C prints (testdata/fakejournalctl
		// starts after the cursor as journalctl does), piped to curl.
		fake := goBuild(t, "fakejournalctl", "./testdata/fakejournalctl")
		jc := exec.Command(fake, "--entries="+full, "--after-cursor="+strings.TrimSpace(c), "--rate=100000", "-o", "json")
		out, err := jc.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := jc.Start(); err != nil {
			t.Fatal(err)
		}
		status, sum := curlJournal(t, base, "resume", "tok", out)
		jc.Wait()
		if want := (feeds.JournalSummary{Received: n - part, Stored: n - part, LastCursor: cursors[n-1]}); status != 200 || sum != want {
			t.Fatalf("resumed after the cursor: %d %+v; want 200 %+v", status, sum, want)
		}
		checkExport(t, base, "resume", full)
	})

	t.Run("a stream outlives --read-timeout", func(t *testing.T) {
		pr, pw := io.Pipe()
		done := make(chan error, 1)
		var sum feeds.JournalSummary
		var status int
		go func() { // owned: ends when the pipe is closed below
			var err error
			status, sum, err = runCurl(base, "slow", "tok", pr)
			done <- err
		}()
		io.WriteString(pw, joinLines(lines[:10]))
		if !testwait.UntilDone(ctx, func() bool {
			st, c := getText(t, base+"/feeds/slow/cursor", "tok")
			return st == 200 && strings.TrimSpace(c) == cursors[9]
		}) {
			t.Fatal("the first lines were not stored")
		}
		// sleep: a quiet kubelet sends nothing for longer than the
		// server's read timeout, which is what the test measures.
		time.Sleep(readTimeout + time.Second)
		io.WriteString(pw, joinLines(lines[10:20]))
		pw.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if want := (feeds.JournalSummary{Received: 20, Stored: 20, LastCursor: cursors[19]}); status != 200 || sum != want {
			t.Fatalf("a stream quiet for %s: %d %+v; want 200 %+v", readTimeout+time.Second, status, sum, want)
		}
	})

	t.Run("a wrong token", func(t *testing.T) {
		status, sum := curlJournal(t, base, "lab", "wrong", strings.NewReader(joinLines(lines[:10])))
		if status != http.StatusUnauthorized || !strings.Contains(sum.Error, "missing or wrong token") {
			t.Fatalf("a wrong token: %d %+v; want 401 saying so", status, sum)
		}
	})

	t.Run("bad input is stored and shown raw", func(t *testing.T) {
		long := "I1202 08:55:52.592967   19254 kubelet.go:1] " + strings.Repeat("x", relay.MaxLineBytes+100<<10)
		bad := []string{
			`not a log line {"MESSAGE":`,
			`{"__CURSOR":"s=broken", "MESSAGE": 1`,
			`<script>alert(1)</script>`,
			long,
			lines[0],
		}
		status, sum := curlJournal(t, base, "bad", "tok", strings.NewReader(joinLines(bad)))
		if want := (feeds.JournalSummary{Received: 5, Stored: 5, Cut: 1, LastCursor: cursors[0]}); status != 200 || sum != want {
			t.Fatalf("bad input: %d %+v; want 200 %+v", status, sum, want)
		}
		shown := shownLines(t, ctx, "ws"+strings.TrimPrefix(base, "http")+"/feeds/bad/ws")
		for _, want := range bad[:3] {
			waitShown(t, ctx, shown, want)
		}
		resp, err := http.Get(base + "/feeds/bad/export")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := joinLines(append(append(bad[:3:3], long[:relay.MaxLineBytes]), lines[0]))
		if string(got) != want {
			t.Fatalf("the export of bad input (%d bytes) is not what was sent, the long line cut at %d bytes (%d bytes)", len(got), relay.MaxLineBytes, len(want))
		}
	})
}
