package loadtest

import (
	"bytes"
	"context"
	"fmt"
	"math/bits"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// reader is one browser-like client of a feed. It parses only what it
// needs of each message (the load marker, a skipped count) so that 500 of
// them cost the machine less than the server they measure.
type reader struct {
	run   string
	total int64
	conn  *websocket.Conn

	mu       sync.Mutex
	seen     []uint64 // bit per line number
	distinct int64
	messages int64 // websocket messages received
	skipped  int64
	dups     int64
	dropped  bool // the connection ended before the run did
	lat      hist
	// recent is the last lines received, by the feed's sequence number, so
	// that lines taken back ({"rewind":N}) are not counted when they come
	// again; recentAt is where the next goes.
	recent   [1024]shown
	recentAt int
}

// shown is a line received: the feed's number of it, and the run's.
type shown struct{ feed, line int64 }

// dial connects as the site's own page would (its Origin) and waits for the
// hello, which the server sends once the subscription exists: no line sent
// after dial returns can be missed.
func (r *reader) dial(ctx context.Context, client *http.Client, server, feed string) error {
	u := "ws" + server[len("http"):] + "/feeds/" + url.PathEscape(feed) + "/ws"
	dctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{
		HTTPClient: client,
		HTTPHeader: http.Header{"Origin": {server}},
	})
	if err != nil {
		if resp != nil {
			return fmt.Errorf("loadtest: browser websocket %s: %s: %w", u, resp.Status, err)
		}
		return fmt.Errorf("loadtest: browser websocket %s: %w", u, err)
	}
	conn.SetReadLimit(16 << 20)
	_, b, err := conn.Read(dctx)
	if err != nil || !bytes.HasPrefix(b, []byte(`{"hello":`)) {
		conn.CloseNow()
		return fmt.Errorf("loadtest: %s: no hello from the server (%v)", u, err)
	}
	r.conn = conn
	return nil
}

func (r *reader) read(ctx context.Context) {
	defer r.conn.CloseNow()
	// Reads take no context of their own (one per read costs the websocket
	// library allocations that would be counted against the server on a
	// shared machine); ctx's end closes the connection instead.
	stop := context.AfterFunc(ctx, func() { r.conn.CloseNow() })
	defer stop()
	marker := []byte("lt=" + r.run + ":")
	var buf bytes.Buffer
	for {
		_, rd, err := r.conn.Reader(context.Background())
		if err == nil {
			buf.Reset()
			_, err = buf.ReadFrom(rd)
		}
		if err != nil {
			if ctx.Err() == nil {
				r.mu.Lock()
				r.dropped = true
				r.mu.Unlock()
			}
			return
		}
		now := time.Now().UnixNano()
		r.mu.Lock()
		r.messages++
		for part := range bytes.SplitSeq(buf.Bytes(), []byte{'\n'}) {
			r.take(part, marker, now)
		}
		r.mu.Unlock()
	}
}

// take records one message of a frame. r.mu is held.
func (r *reader) take(part, marker []byte, now int64) {
	switch {
	case bytes.HasPrefix(part, []byte(`{"seq":`)):
		feedSeq, _ := digits(part[len(`{"seq":`):])
		i := bytes.Index(part, marker)
		if i < 0 {
			return // not this run's line
		}
		rest := part[i+len(marker):]
		seq, rest := digits(rest)
		if len(rest) == 0 || rest[0] != ':' || seq < 1 || seq > r.total {
			return
		}
		sent, _ := digits(rest[1:])
		w, bit := (seq-1)/64, uint64(1)<<((seq-1)%64)
		if r.seen[w]&bit != 0 {
			r.dups++
			return
		}
		r.seen[w] |= bit
		r.distinct++
		r.recent[r.recentAt] = shown{feedSeq, seq}
		r.recentAt = (r.recentAt + 1) % len(r.recent)
		if d := now - sent; d >= 0 {
			r.lat.add(time.Duration(d))
		}
	case bytes.HasPrefix(part, []byte(`{"rewind":`)):
		from, _ := digits(part[len(`{"rewind":`):])
		for i, s := range r.recent {
			if s.line > 0 && s.feed >= from {
				w, bit := (s.line-1)/64, uint64(1)<<((s.line-1)%64)
				r.seen[w] &^= bit
				r.distinct--
				r.recent[i] = shown{}
			}
		}
	case bytes.HasPrefix(part, []byte(`{"skipped":`)):
		n, _ := digits(part[len(`{"skipped":`):])
		r.skipped += n
	}
}

func (r *reader) complete() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.dropped || r.distinct+r.skipped >= r.total
}

// digits parses a decimal number at the start of b and returns the rest.
func digits(b []byte) (int64, []byte) {
	var n int64
	i := 0
	for ; i < len(b) && '0' <= b[i] && b[i] <= '9'; i++ {
		n = n*10 + int64(b[i]-'0')
	}
	return n, b[i:]
}

// hist is a latency histogram in microseconds with 32 buckets per power of
// two (about 3% resolution) and the exact maximum.
type hist struct {
	counts [histBuckets]int64
	n      int64
	max    time.Duration
}

const histBuckets = 64 + 40*32

func histIndex(us uint64) int {
	if us < 64 {
		return int(us)
	}
	s := bits.Len64(us) - 6 // us>>s is in [32, 64)
	return min(64+(s-1)*32+int(us>>s-32), histBuckets-1)
}

// histValue is the middle of bucket i, in microseconds.
func histValue(i int) uint64 {
	if i < 64 {
		return uint64(i)
	}
	k := i - 64
	s := k/32 + 1
	m := uint64(k%32 + 32)
	return m<<s + (1<<s)/2
}

func (h *hist) add(d time.Duration) {
	h.counts[histIndex(uint64(d/time.Microsecond))]++
	h.n++
	h.max = max(h.max, d)
}

func (h *hist) merge(o *hist) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.max = max(h.max, o.max)
}

// quantile returns the q-quantile (0 < q ≤ 1), never more than the maximum.
func (h *hist) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	want := int64(q*float64(h.n) + 0.5)
	want = max(want, 1)
	var c int64
	for i, n := range h.counts {
		c += n
		if c >= want {
			return min(time.Duration(histValue(i))*time.Microsecond, h.max)
		}
	}
	return h.max
}
