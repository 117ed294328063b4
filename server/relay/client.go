package relay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
)

// ErrUnauthorized is returned by Run when the server refuses the token:
// retrying would not help.
var ErrUnauthorized = errors.New("the server refused the token (401)")

// permanentError is a refusal that retrying would meet again.
type permanentError struct{ error }

func (e permanentError) Unwrap() error { return e.error }

// DefaultWindow is Client.Window's default: the lines a relay may have
// sent and not seen acknowledged, so the most it resends after reconnecting.
const DefaultWindow = 8192

// Client sends lines to one feed of a syncloop server. The zero values of
// the optional fields are sensible defaults.
type Client struct {
	// Server is the base URL (http://host:port or https://…), or several
	// separated by commas: replicas of one site. A relay that cannot reach
	// one, or loses it, goes on to the next.
	Server string
	Feed   string
	Token  string

	// StateFile, when set, keeps the last acknowledged journald cursor so a
	// restarted relay resumes after it (read it back with LoadState).
	StateFile string

	MaxLines int   // unacknowledged lines kept before the source is paused; 100,000
	MaxBytes int64 // and their bytes; 64 MiB
	Window   int   // lines sent ahead of the last ack; 8,192
	Batch    int   // lines per message (at most ~512 KiB of text each); 500

	MinBackoff, MaxBackoff time.Duration // reconnect backoff; 250 ms … 30 s
	HTTPClient             *http.Client
	Logger                 *slog.Logger

	servers []string // Server, split
	cur     int      // the one in use; only Run's goroutine touches it

	mu       sync.Mutex
	cond     *sync.Cond
	queue    []Line // unacknowledged, oldest first
	bytes    int64
	sent     int // queue[:sent] went out on the current connection
	done     bool
	srcErr   error
	acked    uint64
	cursor   string // last acknowledged cursor
	stateAt  time.Time
	stateErr error
}

// State is what a state file holds.
type State struct {
	Server string `json:"server"`
	Feed   string `json:"feed"`
	Cursor string `json:"cursor"` // last journald cursor the server acknowledged
}

// LoadState reads a state file; a missing file is an empty state.
func LoadState(name string) (State, error) {
	var s State
	b, err := os.ReadFile(name)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, fmt.Errorf("state file: %w", err)
	}
	if err := json.Unmarshal(b, &s); err != nil {
		return s, fmt.Errorf("state file %s: %w (delete it to start from the journal's tail)", name, err)
	}
	return s, nil
}

// writeState replaces the state file atomically: a crash leaves the old or
// the new one, never half of either.
func writeState(name string, s State) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(name), filepath.Base(name)+".tmp*")
	if err != nil {
		return fmt.Errorf("state file: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("state file: %w", err)
	}
	return nil
}

// Acked returns how many lines the server has acknowledged so far.
func (c *Client) Acked() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.acked
}

func (c *Client) defaults() {
	if c.MaxLines <= 0 {
		c.MaxLines = 100_000
	}
	if c.MaxBytes <= 0 {
		c.MaxBytes = 64 << 20
	}
	if c.Window <= 0 {
		c.Window = DefaultWindow
	}
	if c.Batch <= 0 {
		c.Batch = 500
	}
	if c.MinBackoff <= 0 {
		c.MinBackoff = 250 * time.Millisecond
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	c.cond = sync.NewCond(&c.mu)
	c.servers = c.servers[:0]
	for u := range strings.SplitSeq(c.Server, ",") {
		if u = strings.TrimSpace(u); u != "" {
			c.servers = append(c.servers, u)
		}
	}
	if len(c.servers) == 0 {
		c.servers = []string{""}
	}
}

// Run runs source in its own goroutine and sends what it emits until the
// source ends and the server has acknowledged every line (nil, or the
// source's error), or ctx ends, or the server refuses the token.
func (c *Client) Run(ctx context.Context, source func(ctx context.Context, emit Emit) error) error {
	c.defaults()
	for c.cur = range c.servers {
		if _, err := c.ingestURL(); err != nil {
			return err
		}
	}
	c.cur = 0
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.cond.Broadcast()
	})
	defer stop()

	srcDone := make(chan struct{})
	go func() { // owned: Run waits for it before returning
		defer close(srcDone)
		err := source(ctx, func(l Line) error { return c.push(ctx, l) })
		c.mu.Lock()
		c.done, c.srcErr = true, err
		c.cond.Broadcast()
		c.mu.Unlock()
	}()
	defer func() { cancel(); <-srcDone }()

	backoff := c.MinBackoff
	for {
		ackedBefore := c.Acked()
		finished, err := c.session(ctx)
		if finished {
			c.saveState(true)
			c.mu.Lock()
			defer c.mu.Unlock()
			if errors.Is(c.srcErr, context.Canceled) {
				return nil
			}
			return c.srcErr
		}
		var perm permanentError
		if errors.Is(err, ErrUnauthorized) || errors.As(err, &perm) {
			c.saveState(true)
			return err
		}
		if ctx.Err() != nil {
			c.saveState(true)
			return ctx.Err()
		}
		if c.Acked() > ackedBefore {
			backoff = c.MinBackoff
		}
		// The next replica at once; once each was tried, back off.
		c.cur = (c.cur + 1) % len(c.servers)
		if c.cur != 0 {
			c.Logger.Warn("relay: server lost; trying the next", "err", err, "next", c.servers[c.cur])
			continue
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		c.Logger.Warn("relay: connection lost; reconnecting", "err", err, "in", wait.Round(time.Millisecond), "unacked", c.unacked())
		if err := Sleep(ctx, wait); err != nil {
			c.saveState(true)
			return err
		}
		backoff = min(backoff*2, c.MaxBackoff)
	}
}

func (c *Client) unacked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.queue)
}

// push appends a line, waiting while the buffer is full: backpressure on
// the source instead of loss.
func (c *Client) push(ctx context.Context, l Line) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.queue) > 0 && (len(c.queue) >= c.MaxLines || c.bytes >= c.MaxBytes) {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.cond.Wait()
	}
	c.queue = append(c.queue, l)
	c.bytes += int64(len(l.Raw) + len(l.ID))
	c.cond.Broadcast()
	return ctx.Err()
}

// ingestURL is the feed's ingest endpoint as a websocket URL.
func (c *Client) ingestURL() (string, error) {
	server := c.servers[c.cur]
	u, err := url.Parse(server)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("server URL %q: want http://host:port or https://host", server)
	}
	switch u.Scheme {
	case "http", "ws":
		u.Scheme = "ws"
	case "https", "wss":
		u.Scheme = "wss"
	default:
		return "", fmt.Errorf("server URL %q: scheme must be http or https", server)
	}
	u.Path = strings.TrimRight(u.Path, "/") + "/feeds/" + url.PathEscape(c.Feed) + "/ingest"
	return u.String(), nil
}

type ackMsg struct {
	Ack string `json:"ack"`
}

// session is one connection: it sends the unacknowledged lines, then new
// ones as they come, and reads acks. finished reports that the source ended
// and everything was acknowledged.
func (c *Client) session(ctx context.Context) (finished bool, err error) {
	conn, u, err := c.dial(ctx)
	if err != nil {
		return false, err
	}
	defer conn.CloseNow()
	conn.SetReadLimit(64 << 10)
	c.Logger.Info("relay: connected", "url", u, "unacked", c.unacked())

	sctx, scancel := context.WithCancel(ctx)
	defer scancel()
	c.mu.Lock()
	c.sent = 0 // everything unacknowledged goes again
	c.mu.Unlock()
	wake := context.AfterFunc(sctx, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.cond.Broadcast()
	})
	defer wake()

	readErr := make(chan error, 1)
	go func() { // owned: ends when conn closes, which the deferred CloseNow ensures
		readErr <- c.readAcks(sctx, conn)
		scancel()
	}()
	defer func() { scancel(); conn.CloseNow(); <-readErr }()

	go ping(sctx, conn, scancel) // owned: ends with sctx

	var msg []byte // the message buffer, reused
	for {
		batch, fin := c.nextBatch(sctx)
		if fin {
			conn.Close(websocket.StatusNormalClosure, "journal ended")
			return true, nil
		}
		if batch == nil {
			select {
			case err := <-readErr:
				readErr <- err
				return false, err
			default:
			}
			return false, sctx.Err()
		}
		msg = AppendBatch(msg[:0], batch)
		wctx, wcancel := context.WithTimeout(sctx, 30*time.Second)
		err = conn.Write(wctx, websocket.MessageText, msg)
		wcancel()
		if err != nil {
			return false, fmt.Errorf("send: %w", err)
		}
	}
}

// dial opens the ingest socket, and says why not: a refused token
// (ErrUnauthorized), a refusal retrying will not change (permanentError),
// or a failure worth another try.
func (c *Client) dial(ctx context.Context) (conn *websocket.Conn, url string, err error) {
	u, err := c.ingestURL()
	if err != nil {
		return nil, "", err
	}
	dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
	defer dcancel()
	conn, resp, err := websocket.Dial(dctx, u, &websocket.DialOptions{
		HTTPClient: c.HTTPClient,
		HTTPHeader: http.Header{"Authorization": {"Bearer " + c.Token}},
	})
	switch {
	case err == nil:
		return conn, u, nil
	case resp != nil && resp.StatusCode == http.StatusUnauthorized:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, u, fmt.Errorf("%w: %s", ErrUnauthorized, strings.TrimSpace(string(body)))
	case resp != nil && resp.StatusCode != http.StatusSwitchingProtocols:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		err := fmt.Errorf("connect %s: %s: %s", u, resp.Status, strings.TrimSpace(string(body)))
		if resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode != http.StatusRequestTimeout {
			err = permanentError{err} // a wrong feed name, ingest disabled: retrying will not help
		}
		return nil, u, err
	}
	return nil, u, fmt.Errorf("connect %s: %w", u, err)
}

// ping pings the server every 20 s until ctx ends; one not answered within
// 15 s ends the session (cancel).
func ping(ctx context.Context, conn *websocket.Conn, cancel context.CancelFunc) {
	t := time.NewTicker(20 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			pctx, pcancel := context.WithTimeout(ctx, 15*time.Second)
			err := conn.Ping(pctx)
			pcancel()
			if err != nil {
				cancel()
				return
			}
		}
	}
}

// nextBatch waits for lines to send within the window; it returns nil when
// sctx ends, and fin when the source is done and all is acknowledged.
func (c *Client) nextBatch(sctx context.Context) (batch []Line, fin bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		if sctx.Err() != nil {
			return nil, false
		}
		if c.done && len(c.queue) == 0 {
			return nil, true
		}
		if c.sent < len(c.queue) && c.sent < c.Window {
			break
		}
		c.cond.Wait()
	}
	end := min(len(c.queue), c.sent+c.Batch, c.sent+c.Window)
	size := 0
	for i := c.sent; i < end; i++ {
		size += len(c.queue[i].Raw) + len(c.queue[i].ID) + 32
		if size > 512<<10 && i > c.sent {
			end = i
			break
		}
	}
	batch = append([]Line(nil), c.queue[c.sent:end]...)
	c.sent = end
	return batch, false
}

func (c *Client) readAcks(ctx context.Context, conn *websocket.Conn) error {
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			if s := websocket.CloseStatus(err); s != -1 {
				return fmt.Errorf("server closed the connection: %v", err)
			}
			return err
		}
		var m ackMsg
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("bad message from server: %w", err)
		}
		if m.Ack == "" {
			continue
		}
		c.ack(m.Ack)
	}
}

// ack drops every line up to and including id.
func (c *Client) ack(id string) {
	c.mu.Lock()
	n := -1
	for i := 0; i < c.sent; i++ {
		if c.queue[i].ID == id {
			n = i + 1
			break
		}
	}
	if n < 0 {
		c.mu.Unlock()
		c.Logger.Warn("relay: ack for an id not in flight", "id", id)
		return
	}
	for _, l := range c.queue[:n] {
		c.bytes -= int64(len(l.Raw) + len(l.ID))
		if l.Cursor {
			c.cursor = l.ID
		}
	}
	clear(c.queue[:n])
	c.queue = c.queue[n:]
	c.sent -= n
	c.acked += uint64(n)
	c.cond.Broadcast()
	c.mu.Unlock()
	c.saveState(false)
}

// saveState writes the last acknowledged cursor, at most every 200 ms
// unless forced.
func (c *Client) saveState(force bool) {
	if c.StateFile == "" {
		return
	}
	c.mu.Lock()
	cursor := c.cursor
	due := force || time.Since(c.stateAt) >= 200*time.Millisecond
	if due {
		c.stateAt = time.Now()
	}
	c.mu.Unlock()
	if !due || cursor == "" {
		return
	}
	if err := writeState(c.StateFile, State{Server: c.Server, Feed: c.Feed, Cursor: cursor}); err != nil {
		c.mu.Lock()
		first := c.stateErr == nil
		c.stateErr = err
		c.mu.Unlock()
		if first {
			c.Logger.Error("relay: cannot keep the cursor", "err", err)
		}
	}
}
