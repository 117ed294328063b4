package rooms

// The room websocket's I/O (protocol.go says what is said on it): the
// upgrade, one reader loop that decodes and rate-limits, and the socket's
// one writer (clients.Writer), which sends what the room queued for it.

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/clients"
	"github.com/syncloop/syncloop/server/httperr"
)

// Socket is GET /rooms/{id}/ws.
func (rs *Service) Socket() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		room, ok := rs.socketRoom(w, r)
		if !ok {
			return
		}
		client := rs.client(r)
		if !rs.sockets.Acquire(w, client) {
			return
		}
		defer rs.sockets.Release(client)
		if !rs.enter() {
			httperr.Text(w, httperr.New(http.StatusServiceUnavailable, "server shutting down"))
			return
		}
		defer rs.wg.Done()
		who := rs.identify(w, r, room)
		// The default options refuse an Origin other than this host.
		conn, err := websocket.Accept(w, r, nil)
		if err != nil {
			rs.log.Info("rooms: websocket refused", "err", err)
			return
		}
		defer conn.CloseNow()
		conn.SetReadLimit(msgLimit)
		stop := context.AfterFunc(rs.ctx, func() { conn.Close(CloseShutdown, "server shutting down") })
		defer stop()
		rs.serveReader(r.Context(), conn, room, who, client)
	})
}

// socketRoom is the room a socket's URL names, or false when it answered
// why there is none.
func (rs *Service) socketRoom(w http.ResponseWriter, r *http.Request) (Room, bool) {
	id := chi.URLParam(r, "id")
	room, err := Room{}, ErrNotFound
	if ValidID(id) {
		room, err = rs.store.Get(id)
	}
	// An expired room's socket is upgraded only to be closed with
	// CloseGone: a page cannot read the status of a refused upgrade, and
	// would retry for ever. A plain GET gets the page.
	if errors.Is(err, ErrExpired) && isWebsocket(r) {
		refuseSocket(w, r, CloseGone, "this room expired")
		return room, false
	}
	if err != nil {
		rs.roomOr404(w, r, id) // the page that says why
		return room, false
	}
	return room, true
}

// serveReader is one reader's connection to room, from joining to leaving.
// who is the reader (identify); client is who the reader is in every per-client limit (ServiceConfig.Identify).
func (rs *Service) serveReader(ctx context.Context, conn *websocket.Conn, room Room, who identity, client string) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := newWriter(ctx, conn)
	defer out.Stop()
	rl, me := rs.join(room, out, who)
	if me == nil {
		out.Stop()
		writeFrame(ctx, conn, errMsg("this room is full: %d readers at most (serve --max-readers)", rs.maxReaders))
		conn.Close(CloseFull, "room full")
		return
	}
	me.client = client // read only by this reader's own messages, which follow
	if err := rs.store.MarkJoined(room.ID); err != nil {
		rs.log.Warn("rooms: marking joined", "room", room.ID[:6]+"…", "err", err)
	}
	defer rs.leave(rl, me)
	defer rs.sockets.KeepAlive(conn)()
	go closeWhenDone(ctx, cancel, conn, me)
	rs.readLoop(ctx, conn, rl, me)
}

// closeWhenDone closes me's socket with the code that says why, when its
// room expired or its writer stopped (too slow: messages piled up; or a
// write failed).
func closeWhenDone(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, me *roomReader) {
	select {
	case <-ctx.Done():
	case <-me.expired:
		me.out.Stop()
		conn.Close(CloseGone, "this room expired")
	case <-me.out.Done():
		if errors.Is(me.out.Err(), clients.ErrTooSlow) {
			conn.Close(CloseTooSlow, "too slow: messages piled up")
		}
		cancel()
	}
}

// readLoop reads me's messages until the connection ends: rate-limited,
// decoded, the join first.
func (rs *Service) readLoop(ctx context.Context, conn *websocket.Conn, rl *roomLive, me *roomReader) {
	bucket := NewBucket(rs.msgRate, msgBurst, time.Now())
	joined := false
	for {
		_, data, err := conn.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) && ce.Code == websocket.StatusMessageTooBig {
				rs.log.Info("rooms: message too big", "room", rl.id[:6]+"…")
			}
			return
		}
		if !bucket.Allow(time.Now()) {
			me.push(errMsg("too many messages: at most %v a second; this one was dropped", rs.msgRate))
			continue
		}
		var m roomIn
		if err := json.Unmarshal(data, &m); err != nil {
			me.push(errMsg("not a room message: %v", err))
			continue
		}
		if !joined && m.T != inJoin {
			me.push(errMsg(`send {"t":"join"} first`))
			continue
		}
		joined = true
		rs.message(rl, me, m)
	}
}

// isWebsocket reports whether r asks for a websocket.
func isWebsocket(r *http.Request) bool {
	return strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// refuseSocket upgrades r only to close it with a permanent refusal's
// code: a page can read a close code, not the status of a refused upgrade.
func refuseSocket(w http.ResponseWriter, r *http.Request, code websocket.StatusCode, reason string) {
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	conn.Close(code, reason)
}

// writeFrame writes one text message, giving up after 10 s (the full
// room's last word: the reader has no writer).
func writeFrame(ctx context.Context, conn *websocket.Conn, b []byte) error {
	ctx, cancel := context.WithTimeout(ctx, clients.DefaultWriteTimeout)
	defer cancel()
	return conn.Write(ctx, websocket.MessageText, b)
}
