package annotations

// The renders of a room's notes, shared by every page at a tag: a change
// is rendered (Markdown, checks, anchoring) once, and so is its event.

import (
	"encoding/json"
	"sync"

	"github.com/syncloop/syncloop/extractor"
)

// rendered is note n of the room as a page at r's tag shows it, rendered
// once for every page and every snapshot that shows this version.
func (h *Handlers) rendered(r *extractor.Reading, room string, n Note, quiz bool) *rendered {
	return h.events.get(renderKey{tag: r.Tag, room: room, id: n.ID, rev: n.Rev, deleted: n.Deleted, quiz: quiz}, func() View {
		return h.viewAt(r, room, n, quiz)
	})
}

// event is the server-sent event of the change, made on first use.
func (e *rendered) event() []byte {
	e.eventOnce.Do(func() {
		b, err := json.Marshal(e.v)
		if err != nil {
			// A View is plain data; this cannot happen, but a page that
			// reloads is better than a page that misses a change.
			e.b = []byte("event: reload\ndata: {}\n\n")
			return
		}
		out := make([]byte, 0, len(b)+32)
		out = append(out, "event: note\ndata: "...)
		out = append(out, b...)
		e.b = append(out, "\n\n"...)
	})
	return e.b
}

// renderKey names one version of a note as seen at one tag: a revision is
// never reused, so the bytes of a key never change.
type renderKey struct {
	tag, room, id string
	rev           uint64
	deleted       bool
	quiz          bool // the view quiz mode gives (checkQuiz)
}

// renderCache keeps the last max events rendered. The pages of a room
// receive a change at the same moment: the first renders it, the others
// wait for and share its bytes.
type renderCache struct {
	max   int
	mu    sync.Mutex
	m     map[renderKey]*rendered
	order []renderKey // oldest first
}

type rendered struct {
	once      sync.Once
	v         View
	eventOnce sync.Once
	b         []byte
}

func newRenderCache(max int) *renderCache {
	return &renderCache{max: max, m: map[renderKey]*rendered{}}
}

// get returns key's entry, calling render the first time only.
func (c *renderCache) get(key renderKey, render func() View) *rendered {
	c.mu.Lock()
	e, ok := c.m[key]
	if !ok {
		e = &rendered{}
		c.m[key] = e
		c.order = append(c.order, key)
		if len(c.order) > c.max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
	}
	c.mu.Unlock()
	e.once.Do(func() { e.v = render() })
	return e
}
