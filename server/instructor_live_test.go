package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/syncloop/syncloop/server/internal/fixture"
	"github.com/syncloop/syncloop/server/internal/wstest"
	"github.com/syncloop/syncloop/server/relay"
)

// The instructor's live overview is woken by what it shows, not by its
// tick: with the tick an hour, a relayed case line and a note written in
// a room of the class each reach the stream.
func TestClassEventsWoken(t *testing.T) {
	s, ts := newRoomServer(t, "", nil, func(p *Plan) { p.Classes.Tick = time.Hour })
	class, key := createClass(t, ts, url.Values{"budget": {"4"}})
	id, _, code := startClassRoom(t, ts, class)
	if code != 303 {
		t.Fatalf("start a room: %d", code)
	}
	token, ok := s.rooms.Store().Token(id)
	if !ok {
		t.Fatal("the room has no ingest token")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	counts := classEvents(t, ctx, ts, class, key, id)
	if n := <-counts; n != 0 {
		t.Fatalf("a new room's first overview counts %d fired lines", n)
	}
	rl, _, err := websocket.Dial(ctx, wstest.URL(ts, "/feeds/room-"+id+"/ingest"), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + token}}})
	if err != nil {
		t.Fatalf("relay: %v", err)
	}
	defer rl.CloseNow()
	r := fixture.Reading(t)
	c, _ := r.Function.CaseByKey("pleg")
	site := c.Logs[0]
	wstest.Send(t, ctx, rl,
		relay.Line{ID: "v", Raw: fmt.Sprintf(`I1130 01:02:03.000000    1234 server.go:1] "Kubelet version" kubeletVersion=%q`, r.Tag)},
		relay.Line{ID: "1", Raw: fmt.Sprintf(`I1130 01:02:04.000000    1234 %s:%d] %q pod="default/probe-me"`, path.Base(site.File), site.Line, site.Message)})
	deadline := time.After(30 * time.Second) // the tick is an hour: only a wake-up gets here
	for n := 0; n < 1; {
		select {
		case n = <-counts:
		case <-deadline:
			t.Fatal("the relayed pleg line never reached the instructor's stream")
		}
	}
	notes := overviewsOf(t, ctx, ts, class, key)
	<-notes
	putNote(t, ts, id, "sentence", "What is wanted is made so, again and again.")
	deadline = time.After(30 * time.Second)
	for {
		select {
		case o := <-notes:
			for _, row := range o.Rooms {
				if row.ID == id && row.Written > 0 {
					return
				}
			}
		case <-deadline:
			t.Fatal("a note written in the room never reached the instructor's stream")
		}
	}
}
