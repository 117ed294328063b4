// Package relay ships a kubelet journal to a syncloop server: it reads lines
// from a command (journalctl, possibly through ssh), a saved file or a
// reader, and sends them over a websocket to the server's ingest endpoint,
// keeping what the server has not acknowledged and resending it after a
// reconnect.
//
// Exactly-once delivery needs an identity the journal itself gives: with
// journald JSON input (journalctl -o json) each line's id is its __CURSOR,
// and a restarted journalctl resumes after the last cursor. Other input
// (klog text on stdin) gets ids from a per-process sequence: a resend after a
// reconnect is still deduplicated by the server, but a restarted relay cannot
// know what the server already has.
package relay

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Line is one journal line with the id the server deduplicates by, and
// when it was read: where its time went before the server had it.
type Line struct {
	ID  string `json:"id"`
	Raw string `json:"raw"`
	// Read is when the relay read the line (Unix microseconds; 0 when not
	// said), and Age how long journald held it before (microseconds from
	// the entry's __REALTIME_TIMESTAMP; 0 when the line is no journald
	// entry, or is history: older than MaxAge, as the first lines of
	// journalctl -f and every line of a replayed file are).
	Read int64 `json:"read,omitempty"`
	Age  int64 `json:"age,omitempty"`
	// Recv is when the server received the line (Unix microseconds): set
	// by the server, never on the wire.
	Recv   int64 `json:"-"`
	Cursor bool  `json:"-"` // ID is a journald cursor
}

// MaxAge is the oldest a journald entry may be, when the relay reads it,
// for its age to say how long journald took rather than that it is
// history.
const MaxAge = time.Minute

// MaxLineBytes is the longest line a source passes on whole; longer lines are
// cut there (the server cuts them further for display).
const MaxLineBytes = 512 << 10

// Emit receives each line a source reads; it blocks while the relay's
// buffer is full, which is how a source is slowed down rather than dropped.
type Emit func(Line) error

// Journal is what the relay needs from a journald JSON entry.
type Journal struct {
	Cursor   string
	Realtime time.Time // zero when absent
}

// ParseJournal reads the cursor and time of a journald JSON export line; ok
// is false when raw is not one.
func ParseJournal(raw []byte) (j Journal, ok bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '{' || !bytes.Contains(raw, []byte(`"__CURSOR"`)) {
		return Journal{}, false
	}
	var e struct {
		Cursor   string `json:"__CURSOR"`
		Realtime string `json:"__REALTIME_TIMESTAMP"`
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Cursor == "" {
		return Journal{}, false
	}
	j.Cursor = e.Cursor
	if us, err := strconv.ParseInt(e.Realtime, 10, 64); err == nil {
		j.Realtime = time.UnixMicro(us)
	}
	return j, true
}

// ids hands out ids for lines without a cursor: unique across relay runs
// (a random prefix) and increasing within one.
type ids struct {
	prefix string
	n      uint64
}

func newIDs() *ids {
	return &ids{prefix: strconv.FormatUint(rand.Uint64()>>16, 36)}
}

func (g *ids) line(raw []byte) Line {
	if len(raw) > MaxLineBytes {
		raw = raw[:MaxLineBytes]
	}
	now := time.Now()
	if j, ok := ParseJournal(raw); ok {
		l := Line{ID: j.Cursor, Raw: string(raw), Cursor: true, Read: now.UnixMicro()}
		if age := now.Sub(j.Realtime); !j.Realtime.IsZero() && age >= 0 && age < MaxAge {
			l.Age = age.Microseconds()
		}
		return l
	}
	g.n++
	return Line{ID: g.prefix + "-" + strconv.FormatUint(g.n, 10), Raw: string(raw), Read: now.UnixMicro()}
}

// readLines calls fn for each line of r, without its line ending; lines
// longer than MaxLineBytes are cut there and the rest discarded.
func readLines(r io.Reader, fn func([]byte) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			if len(long) < MaxLineBytes {
				long = append(long, chunk...)
			}
			continue
		}
		if len(chunk) > 0 || long != nil {
			line := chunk
			if long != nil {
				line = append(long, chunk...)
				long = nil
			}
			line = bytes.TrimRight(line, "\r\n")
			if len(line) > 0 {
				if ferr := fn(line); ferr != nil {
					return ferr
				}
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// ReadLines emits every line of r until EOF.
func ReadLines(ctx context.Context, r io.Reader, emit Emit) error {
	g := newIDs()
	return readLines(r, func(b []byte) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		return emit(g.line(b))
	})
}

// klogHeader matches a klog text header's date and time: I1130 01:02:03.123456.
var klogHeader = regexp.MustCompile(`[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{6})`)

// lineTime is when a line was written, from journald's realtime stamp or a
// klog header (a klog header has no year: the current one is assumed).
func lineTime(raw []byte) (time.Time, bool) {
	if j, ok := ParseJournal(raw); ok && !j.Realtime.IsZero() {
		return j.Realtime, true
	}
	head := raw[:min(len(raw), 256)]
	m := klogHeader.FindSubmatch(head)
	if m == nil {
		return time.Time{}, false
	}
	n := make([]int, 6)
	for i := range n {
		n[i], _ = strconv.Atoi(string(m[i+1]))
	}
	return time.Date(time.Now().Year(), time.Month(n[0]), n[1], n[2], n[3], n[4], n[5]*1000, time.UTC), true
}

// ReplayFile emits the lines of a saved journal. With speed > 0 it keeps the
// lines' original spacing (from journald's __REALTIME_TIMESTAMP or the klog
// header) divided by speed; with speed 0 it sends as fast as the relay takes
// them. When after is a cursor found in the file, the lines up to and
// including it are skipped (a restarted relay resuming from its state file).
func ReplayFile(ctx context.Context, name string, speed float64, after string, emit Emit) error {
	skip := false
	if after != "" {
		found, err := fileHasCursor(name, after)
		if err != nil {
			return err
		}
		skip = found
	}
	f, err := os.Open(name)
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	g := newIDs()
	var first, start time.Time
	return readLines(f, func(b []byte) error {
		l := g.line(b)
		if skip {
			if l.Cursor && l.ID == after {
				skip = false
			}
			return nil
		}
		if speed > 0 {
			if t, ok := lineTime(b); ok {
				if first.IsZero() {
					first, start = t, time.Now()
				} else if d := time.Duration(float64(t.Sub(first)) / speed); d > 0 {
					if err := Sleep(ctx, time.Until(start.Add(d))); err != nil {
						return err
					}
				}
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		l.Read = time.Now().UnixMicro() // after the replay's own wait
		return emit(l)
	})
}

func fileHasCursor(name, cursor string) (bool, error) {
	f, err := os.Open(name)
	if err != nil {
		return false, fmt.Errorf("replay: %w", err)
	}
	defer f.Close()
	found := false
	want := []byte(cursor)
	err = readLines(f, func(b []byte) error {
		if bytes.Contains(b, want) {
			if j, ok := ParseJournal(b); ok && j.Cursor == cursor {
				found = true
				return io.EOF
			}
		}
		return nil
	})
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return found, err
}

// Sleep waits for d, or until ctx ends (returning its error).
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// IsJournalctl reports whether a command runs journalctl (perhaps through
// ssh or sudo), whose output can be resumed by cursor.
func IsJournalctl(cmd string) bool {
	for _, f := range strings.Fields(cmd) {
		if path.Base(f) == "journalctl" {
			return true
		}
	}
	return false
}

// safeCursor is what a journald cursor is made of ("s=…;i=…;b=…;m=…;t=…;x=…"):
// a cursor with anything else is not pasted into a shell command line.
var safeCursor = regexp.MustCompile(`^[A-Za-z0-9=;:_.+-]+$`)

// ResumeCommand returns cmd with journalctl told to start after cursor:
// "--after-cursor=<cursor> --no-tail" appended (with -f, journalctl would
// otherwise start with only the last 10 entries). Through ssh the remote
// shell parses the command line again, so the cursor is quoted twice. With
// no cursor (a first start), a following journalctl starts at "now" with
// no tail (firstStart). It returns cmd unchanged when it does not run
// journalctl.
func ResumeCommand(cmd, cursor string) (string, error) {
	if !IsJournalctl(cmd) {
		return cmd, nil
	}
	if cursor == "" {
		return firstStart(cmd), nil
	}
	if !safeCursor.MatchString(cursor) {
		return "", fmt.Errorf("journal cursor %q has characters unsafe for a shell; not resuming from it", cursor)
	}
	arg := "'--after-cursor=" + cursor + "'"
	if f := strings.Fields(cmd); len(f) > 0 && path.Base(f[0]) == "ssh" {
		arg = `"` + arg + `"`
	}
	return strings.TrimRight(cmd, " \t") + " " + arg + " --no-tail", nil
}

// firstStart returns a following journalctl command given no cursor with
// "--since=now --no-tail" appended, unless it says itself where to start:
// with -f alone, journalctl starts from a tail of 10 entries, and on
// systemd 252 one that starts before its unit has entries then drops
// most of the unit's first lines (331 of a kubelet's first 420 here; its
// version line among them). From "now", with no tail, nothing logged after
// the relay started is lost.
func firstStart(cmd string) string {
	follows := false
	for _, f := range strings.Fields(cmd) {
		f = strings.Trim(f, `'"`)
		switch {
		case f == "-f" || f == "--follow":
			follows = true
		case f == "--no-tail" || f == "-e" || f == "--pager-end" || f == "-b" || f == "--boot" ||
			strings.HasPrefix(f, "-n") || strings.HasPrefix(f, "--lines") ||
			strings.HasPrefix(f, "-S") || strings.HasPrefix(f, "--since") ||
			strings.HasPrefix(f, "-c") || strings.HasPrefix(f, "--cursor") ||
			strings.HasPrefix(f, "--after-cursor") || strings.HasPrefix(f, "--cursor-file"):
			return cmd
		case len(f) > 2 && f[0] == '-' && f[1] != '-' && strings.ContainsRune(f[1:], 'f'):
			follows = true // -fo json, -af …
		}
	}
	if !follows {
		return cmd
	}
	return strings.TrimRight(cmd, " \t") + " --since=now --no-tail"
}

// RunCommand runs cmd with sh -c and emits its output lines, restarting it
// with backoff whenever it exits, until ctx ends. When cmd runs journalctl,
// each restart resumes after the last cursor emitted (after, to begin with).
func RunCommand(ctx context.Context, cmd, after string, emit Emit, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cursor := after
	backoff := time.Second
	for {
		line, err := ResumeCommand(cmd, cursor)
		if err != nil {
			log.Warn("journal command: starting from the tail", "err", err)
			line = cmd
		}
		started := time.Now()
		err = runOnce(ctx, line, func(l Line) error {
			if l.Cursor {
				cursor = l.ID
			}
			return emit(l)
		}, log)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Since(started) > time.Minute {
			backoff = time.Second
		}
		wait := backoff/2 + rand.N(backoff/2+1)
		log.Warn("journal command exited; restarting", "cmd", line, "err", err, "in", wait.Round(time.Millisecond))
		if err := Sleep(ctx, wait); err != nil {
			return err
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

func runOnce(ctx context.Context, line string, emit Emit, log *slog.Logger) error {
	c := exec.CommandContext(ctx, "sh", "-c", line)
	// The command runs in a process group of its own, and stopping it stops
	// the whole group: sh may leave journalctl (or ssh) as a child that holds
	// stdout open, and reading would then never end.
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error {
		pgid := c.Process.Pid
		time.AfterFunc(3*time.Second, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		return syscall.Kill(-pgid, syscall.SIGTERM)
	}
	c.WaitDelay = 3 * time.Second
	stdout, err := c.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := c.StderrPipe()
	if err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return fmt.Errorf("start %q: %w", line, err)
	}
	done := make(chan struct{})
	go func() { // owned: ends when the command's stderr closes, before Wait returns
		defer close(done)
		_ = readLines(stderr, func(b []byte) error {
			log.Warn("journal command", "stderr", string(b))
			return nil
		})
	}()
	g := newIDs()
	readErr := readLines(stdout, func(b []byte) error { return emit(g.line(b)) })
	if readErr != nil {
		_ = c.Cancel()
	}
	<-done
	waitErr := c.Wait()
	if readErr != nil {
		return readErr
	}
	return waitErr
}
