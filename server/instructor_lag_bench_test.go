package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/classes"
	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wake"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// BenchmarkInstructorLag is how long after a room's pane shows a journal
// line the instructor's live overview (GET /classes/{id}/events, what the
// class page draws) counts it: one line a loop, a case line each, through
// the room's relay socket. It reports the lag's median and 95th
// percentile (lag-p50-ms, lag-p95-ms) beside the pane's own time from
// the relay's send (pane-p50-ms). "ticked" is the stream as it was before
// it was woken by changes: it looks once a second (Config.Tick).
//
//	go test -run '^$' -bench InstructorLag -benchtime 40x ./server/
func BenchmarkInstructorLag(b *testing.B) {
	b.Run("woken", func(b *testing.B) { benchInstructorLag(b) })
	b.Run("ticked", func(b *testing.B) {
		benchInstructorLag(b, func(p *Plan) { p.Classes.Changed = new(wake.Signal) }) // told by no one
	})
}

func benchInstructorLag(b *testing.B, tune ...func(*Plan)) {
	s, ts := newRoomServer(b, "", nil, tune...)
	class, key := createClass(b, ts, url.Values{"budget": {"4"}})
	id, _, code := startClassRoom(b, ts, class)
	if code != 303 {
		b.Fatalf("start a room: %d", code)
	}
	token, ok := s.rooms.Store().Token(id)
	if !ok {
		b.Fatal("the room has no ingest token")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pane := dialFeed(b, ctx, ts, "room-"+id)
	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		b.Fatalf("relay: %v", err)
	}
	defer rl.CloseNow()
	r := fixture.Reading(b)
	c, ok := r.Function.CaseByKey("pleg")
	if !ok || len(c.Logs) == 0 {
		b.Fatal("the fixture's pleg case has no log site")
	}
	site := c.Logs[0]
	wstest.Send(b, ctx, rl, relay.Line{ID: "v", Raw: fmt.Sprintf(`I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion=%q`, r.Tag)})
	overviews := classEvents(b, ctx, ts, class, key, id)

	var lags, panes []time.Duration
	fired := 0
	for i := 0; b.Loop(); i++ {
		mark := fmt.Sprintf("lag-%d", i)
		sent := time.Now()
		wstest.Send(b, ctx, rl, relay.Line{ID: mark,
			Raw: fmt.Sprintf("I1130 01:03:%02d.000000    1234 %s:%d] %q pod=\"default/%s\"", i%60, path.Base(site.File), site.Line, site.Message, mark)})
		readUntil(b, ctx, pane, mark)
		shown := time.Now()
		fired++
		for n := range overviews {
			if n >= fired {
				break
			}
		}
		lags = append(lags, time.Since(shown))
		panes = append(panes, shown.Sub(sent))
	}
	b.ReportMetric(msAt(lags, 50), "lag-p50-ms")
	b.ReportMetric(msAt(lags, 95), "lag-p95-ms")
	b.ReportMetric(msAt(panes, 50), "pane-p50-ms")
}

// classEvents streams, from the instructor's overview events, how many
// lines of room's journal fired a case, one value per overview.
func classEvents(t testing.TB, ctx context.Context, ts *httptest.Server, class, key, room string) <-chan int {
	out := make(chan int, 64)
	go func() {
		defer close(out)
		for o := range overviewsOf(t, ctx, ts, class, key) {
			for _, row := range o.Rooms {
				if row.ID == room {
					n := 0
					for _, k := range row.Fired {
						n += k
					}
					out <- n
				}
			}
		}
	}()
	return out
}

// overviewsOf streams the instructor's overview events of class.
func overviewsOf(t testing.TB, ctx context.Context, ts *httptest.Server, class, key string) <-chan classes.Overview {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/classes/"+class+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("class events: %v %v", err, resp)
	}
	t.Cleanup(func() { resp.Body.Close() })
	out := make(chan classes.Overview, 64)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<22)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			var o classes.Overview
			if ok && json.Unmarshal([]byte(data), &o) == nil {
				out <- o
			}
		}
	}()
	return out
}

// readUntil reads a browser feed socket until a line containing mark.
func readUntil(b testing.TB, ctx context.Context, c *websocket.Conn, mark string) {
	for {
		_, msg, err := c.Read(ctx)
		if err != nil {
			b.Fatalf("pane: %v", err)
		}
		if strings.Contains(string(msg), mark+`\"`) { // pod=\"default/MARK\" in the line's JSON
			return
		}
	}
}

func msAt(d []time.Duration, pct int) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[(len(s)-1)*pct/100]) / float64(time.Millisecond)
}
