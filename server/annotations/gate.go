package annotations

// The render slots readers' own notes share (POST /k8s/{tag}/notes and
// worksheet.md): a few renders at once in all, one at a time per client,
// and the slots handed to the clients waiting in turn, so that many
// clients sending costly notes make one more client wait its turn among
// them, not for ever. A request waits briefly for its turn; one that
// finds its client with a render under way and another waiting is
// refused at once.

import (
	"context"
	"slices"
	"sync"
	"time"
)

const (
	// renderWait is how long a request waits for a render slot.
	renderWait = 3 * time.Second
	// renderWaitersPerClient is how many of a client's requests may wait
	// while its render runs.
	renderWaitersPerClient = 1
)

// renderGate hands out render slots, one client at a time in turn.
type renderGate struct {
	mu      sync.Mutex
	free    int
	holding map[string]bool
	waiting map[string][]chan struct{} // by client, first come first
	turns   []string                   // the clients waiting and holding none, in turn
}

func newRenderGate(slots int) *renderGate {
	return &renderGate{free: slots, holding: map[string]bool{}, waiting: map[string][]chan struct{}{}}
}

// enter takes a render slot for client, waiting up to wait for its turn.
// It reports false when none came (waited reports whether it waited at
// all: false means the client already had its renders under way).
func (g *renderGate) enter(ctx context.Context, client string, wait time.Duration) (ok, waited bool) {
	g.mu.Lock()
	if !g.holding[client] && g.free > 0 && len(g.turns) == 0 {
		g.holding[client] = true
		g.free--
		g.mu.Unlock()
		return true, false
	}
	if len(g.waiting[client]) >= renderWaitersPerClient {
		g.mu.Unlock()
		return false, false
	}
	ch := make(chan struct{})
	g.waiting[client] = append(g.waiting[client], ch)
	if !g.holding[client] && !slices.Contains(g.turns, client) {
		g.turns = append(g.turns, client)
	}
	g.dispatchLocked()
	g.mu.Unlock()

	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ch:
		return true, true
	case <-t.C:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ws := g.waiting[client]
	i := slices.Index(ws, ch)
	if i < 0 {
		return true, true // handed a slot as the wait ended: it is ours
	}
	if ws = slices.Delete(ws, i, i+1); len(ws) == 0 {
		delete(g.waiting, client)
		g.turns = slices.DeleteFunc(g.turns, func(c string) bool { return c == client })
	} else {
		g.waiting[client] = ws
	}
	return false, true
}

// leave gives back client's slot, to the next client in turn.
func (g *renderGate) leave(client string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.holding, client)
	g.free++
	if len(g.waiting[client]) > 0 {
		g.turns = append(g.turns, client) // after the others waiting
	}
	g.dispatchLocked()
}

// dispatchLocked hands the free slots to the clients in turn; g.mu is
// held.
func (g *renderGate) dispatchLocked() {
	for g.free > 0 && len(g.turns) > 0 {
		client := g.turns[0]
		g.turns = g.turns[1:]
		ws := g.waiting[client]
		ch := ws[0]
		if ws = ws[1:]; len(ws) == 0 {
			delete(g.waiting, client)
		} else {
			g.waiting[client] = ws
		}
		g.holding[client] = true
		g.free--
		close(ch)
	}
}
