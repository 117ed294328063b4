package feeds

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
)

// cursorEntry is a journald JSON line with cursor number i.
func cursorEntry(i int) string {
	return fmt.Sprintf(`{"__CURSOR":"%s","MESSAGE":"entry %d","SYSLOG_IDENTIFIER":"kubelet"}`, cursorN(i), i)
}

func cursorN(i int) string { return fmt.Sprintf("s=feedfeed;i=%x;b=b0;m=1;t=1;x=1", i) }

// putJournal sends body to the feed's journal route; it answers the
// status and the summary.
func putJournal(ctx context.Context, ts string, feed, token string, body io.Reader) (int, JournalSummary, error) {
	req, _ := http.NewRequestWithContext(ctx, "PUT", ts+"/feeds/"+feed+"/journal", body)
	req.Header.Set("Authorization", "Bearer "+token)
	var sum JournalSummary
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, sum, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &sum); err != nil {
		sum.Error = string(b)
	}
	return resp.StatusCode, sum, nil
}

func cursorOf(t *testing.T, ts, feed string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", ts+"/feeds/"+feed+"/cursor", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// TestJournalServerCloseAnswers: a journal streaming when the server
// shuts down (SIGTERM) is answered with what was stored and what to do,
// and the shutdown does not wait for the body to end.
func TestJournalServerCloseAnswers(t *testing.T) {
	l, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pr, pw := io.Pipe()
	defer pw.Close()
	type answer struct {
		status int
		sum    JournalSummary
		err    error
	}
	got := make(chan answer, 1)
	go func() { // owned: ends once the server answers
		st, sum, err := putJournal(ctx, ts.URL, "lab", testToken, pr)
		got <- answer{st, sum, err}
	}()
	for i := 1; i <= 3; i++ {
		io.WriteString(pw, cursorEntry(i)+"\n")
	}
	want := cursorN(3)
	if !testwait.UntilDone(ctx, func() bool {
		st, c := cursorOf(t, ts.URL, "lab")
		return st == 200 && c == want
	}) {
		t.Fatal("the streamed entries were not stored")
	}
	closed := make(chan struct{})
	go func() { l.Close(); close(closed) }() // owned: the test waits for it
	a := <-got
	<-closed
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.status != http.StatusServiceUnavailable || a.sum.Received != 3 || a.sum.Stored != 3 || a.sum.LastCursor != want ||
		!strings.Contains(a.sum.Error, "shutting down: run the same command again") {
		t.Fatalf("answer at shutdown: %d %+v", a.status, a.sum)
	}
}

// TestJournalDropsStored: a journal sent again stores only what is new;
// ids of the same entry within one body count once.
func TestJournalDropsStored(t *testing.T) {
	_, ts := newLiveServer(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if st, _ := cursorOf(t, ts.URL, "lab"); st != http.StatusNotFound {
		t.Errorf("the cursor of a feed never sent to: %d", st)
	}
	body := func(from, to int) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			b.WriteString(cursorEntry(i) + "\n")
		}
		return b.String()
	}
	for _, tc := range []struct {
		body string
		want JournalSummary
	}{
		{body(1, 5), JournalSummary{Received: 5, Stored: 5, LastCursor: cursorN(5)}},
		{body(1, 8), JournalSummary{Received: 8, Stored: 3, Duplicates: 5, LastCursor: cursorN(8)}},
		// An entry twice in one body, and a line of text (stored, shown raw).
		{body(7, 9) + cursorEntry(9) + "\n" + "plain text\r\n\n", JournalSummary{Received: 5, Stored: 2, Duplicates: 3, LastCursor: cursorN(9)}},
	} {
		st, sum, err := putJournal(ctx, ts.URL, "lab", testToken, strings.NewReader(tc.body))
		if err != nil || st != 200 || sum != tc.want {
			t.Errorf("%d %+v %v; want 200 %+v", st, sum, err, tc.want)
		}
	}
	if st, c := cursorOf(t, ts.URL, "lab"); st != 200 || c != cursorN(9) {
		t.Errorf("the cursor: %d %q", st, c)
	}
	if got := exportLines(t, ctx, ts, "lab", 0); len(got) != 10 || got[9] != "plain text" {
		t.Errorf("stored %d lines: %q", len(got), got)
	}
	if st, sum, _ := putJournal(ctx, ts.URL, "lab", "wrong", strings.NewReader(body(1, 1))); st != http.StatusUnauthorized {
		t.Errorf("a wrong token: %d %+v", st, sum)
	}
}
