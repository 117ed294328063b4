package annotations

// Pins: log lines a reader kept as proof that a case's handler ran
// (static/live.js, "Pin to my worksheet"). A pin names a stored line, its
// feed and sequence: the note "pin.<feed>-<seq>". Its text is the server's,
// made from the line as the feed's stream holds it (case, time, pod, node,
// kubelet version, journald cursor), never a browser's:
//
//	POST /rooms/{id}/pins {"seq":N}        pin line N of the room's journal
//	PUT  /rooms/{id}/notes/pin.{feed}-{N}  the same; a "text" given must be the line's
//
// A line the room's journal does not hold, a demo line, a line that fired
// no case, or a text that is not the line's is refused: 422 with the
// reason. The worksheet hands pins in under "Fired", each read again from
// the stream as the hand-in is built, printed as stored.

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/rooms"
)

// LineFunc looks up one stored line of a feed's journal (feeds.Service.Line).
type LineFunc func(ctx context.Context, feed string, seq uint64) (feeds.StoredLine, error)

// JournalFunc is LineFunc bound to one request: what a hand-in reads its
// pins with (Head.Journal).
type JournalFunc func(feed string, seq uint64) (feeds.StoredLine, error)

// errOtherFeed: a room's pin names another feed than the room's.
var errOtherFeed = errors.New("not a line of this room's journal")

// Journal is line bound to ctx, reading only the room's own feed (room
// "": any feed, for a reader's own notes); nil when line is.
func Journal(ctx context.Context, line LineFunc, room string) JournalFunc {
	if line == nil {
		return nil
	}
	return func(feed string, seq uint64) (feeds.StoredLine, error) {
		if room != "" && feed != rooms.FeedPrefix+room {
			return feeds.StoredLine{}, fmt.Errorf("feed %s: %w (its feed is %s)", feed, errOtherFeed, rooms.FeedPrefix+room)
		}
		return line(ctx, feed, seq)
	}
}

// PinID is the note id of a pin of the feed's line seq.
func PinID(feed string, seq uint64) string {
	return "pin." + feed + "-" + strconv.FormatUint(seq, 10)
}

// pinOf is the feed and sequence a pin's id names.
func pinOf(id string) (feed string, seq uint64, ok bool) {
	rest, ok := strings.CutPrefix(id, "pin.")
	i := strings.LastIndexByte(rest, '-')
	if !ok || i <= 0 {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(rest[i+1:], 10, 64)
	return rest[:i], seq, err == nil && seq > 0
}

// maxPinLine bounds the kubelet's line kept in a pin's note (the hand-in
// prints the entry whole, from the stream).
const maxPinLine = 4000

// pinText is the note text of a pin of l: what the page shows of it.
func pinText(l feeds.StoredLine) string {
	when := "(none)"
	if !l.Time.IsZero() {
		when = l.Time.UTC().Format(time.RFC3339Nano)
	}
	version := cmp.Or(l.Kubelet, "(not known)")
	if l.Kubelet != "" && l.KubeletFrom != "" {
		version += " (from its " + l.KubeletFrom + ")"
	}
	text := cmp.Or(l.Text, l.Raw)
	if len(text) > maxPinLine {
		text = strings.ToValidUTF8(text[:maxPinLine], "") + " [cut]"
	}
	return strings.Join([]string{
		"case: " + l.Case,
		"time: " + when,
		"pod: " + cmp.Or(strings.Join(l.Pods, ", "), "(none)"),
		"node: " + cmp.Or(l.Node, "(not said)"),
		"kubelet: " + version,
		"cursor: " + cmp.Or(l.Cursor, "(none)"),
		fmt.Sprintf("feed: %s, line %d", l.Feed, l.Seq),
		"line: " + text,
	}, "\n")
}

// pinFor is the text of the pin note id of room, from the stream; given
// is the text a request sent, which must be the line's (its note text,
// the entry as stored, or the kubelet's line) when not empty. code and
// msg say why the pin is refused.
func (h *Handlers) pinFor(ctx context.Context, room, id, given string) (text string, code int, msg string) {
	if feed, first, ok := chainPinOf(id); ok {
		return h.chainPinFor(ctx, room, feed, first, given)
	}
	feed, seq, ok := pinOf(id)
	if !ok {
		return "", http.StatusBadRequest, "a pin's id is pin.FEED-SEQ; or POST {\"seq\":N} to /rooms/ID/pins"
	}
	if h.cfg.Line == nil {
		return "", http.StatusServiceUnavailable, "this server reads no journal: nothing can be pinned"
	}
	l, err := Journal(ctx, h.cfg.Line, room)(feed, seq)
	var why string
	switch {
	case errors.Is(err, errOtherFeed), errors.Is(err, feeds.ErrNoLine):
		why = fmt.Sprintf("line %d is not in this room's journal (never stored, or evicted since): pin a line the live journal shows", seq)
	case errors.Is(err, feeds.ErrDemoLine):
		why = fmt.Sprintf("line %d is a demo line (a simulated kubelet): demo lines never count; attach a cluster's journal and pin its lines", seq)
	case errors.Is(err, feeds.ErrNoCase):
		why = fmt.Sprintf("line %d matches no case of the loop, so it proves no handler ran: pin a line the journal shows under a case", seq)
	case err != nil:
		h.cfg.Logger.Warn("annotations: read a pinned line", "feed", feed, "seq", seq, "err", err)
		return "", http.StatusServiceUnavailable, "could not read the room's journal now: try again in a moment"
	}
	if why != "" {
		return "", http.StatusUnprocessableEntity, "not pinned: " + why
	}
	text = pinText(l)
	if g := strings.TrimRight(given, "\r\n"); g != "" && g != text && g != l.Raw && g != l.Text {
		return "", http.StatusUnprocessableEntity, fmt.Sprintf("not pinned: the text given is not line %d as the journal stores it; send {\"seq\":%d} alone (POST /rooms/ID/pins) and the server quotes the line", seq, seq)
	}
	return text, 0, ""
}

// pinBody is what POST /rooms/{id}/pins takes: a note's write with the
// line's sequence number instead of an id.
type pinBody struct {
	Seq   uint64 `json:"seq"`
	Chain uint64 `json:"chain"` // or a volume's chain, by its first line (chainpin.go)
}

// Pin pins line seq of the room's journal: the note pin.room-ID-SEQ,
// written as Put writes any note, from the same body (author and colour
// included).
func (h *Handlers) Pin() http.Handler {
	put := h.Put()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		var b pinBody
		if err == nil {
			err = json.Unmarshal(body, &b)
		}
		if err != nil || (b.Seq == 0) == (b.Chain == 0) {
			jsonError(w, http.StatusBadRequest, `a pin is {"seq":N}, the sequence number of a line of the room's journal, or {"chain":N}, a volume's chain by its first line`)
			return
		}
		rctx := chi.RouteContext(r.Context())
		id := PinID(rooms.FeedPrefix+chi.URLParam(r, "id"), b.Seq)
		if b.Chain != 0 {
			id = ChainPinID(rooms.FeedPrefix+chi.URLParam(r, "id"), b.Chain)
		}
		rctx.URLParams.Add("note", id)
		r.Body = io.NopCloser(bytes.NewReader(body))
		put.ServeHTTP(w, r)
	})
}

// firedPin is a pin as a hand-in prints it: the line as the journal holds
// it when the hand-in is built, or why it is not printed.
type firedPin struct {
	v    View
	seq  uint64
	feed string
	line feeds.StoredLine
	err  error
}

// writeFired writes the worksheet's "Fired" section: every pin, read
// again from the journal (journal) and printed as stored, in a fence
// longer than any run of backticks in it, by case, then time; a pin whose
// line is no longer stored says so, and prints no copy.
func writeFired(b *bytes.Buffer, vs []View, journal JournalFunc) {
	pins := firedPins(vs, journal)
	if len(pins) == 0 {
		return
	}
	fmt.Fprintf(b, "\n## Fired\n\n%s\n\n", firedIntro)
	for _, p := range pins {
		fmt.Fprintf(b, "### %s\n\n%s\n\n", p.heading(Inline), p.place(Inline))
		if p.err == nil {
			fmt.Fprintf(b, "%s\n\n", fenced(p.line.Raw, "text"))
		}
	}
}

// firedIntro says what the Fired section is.
const firedIntro = "Log lines pinned as proof that a case's handler ran, each read again from the journal as this hand-in was built, and printed as stored."

// firedPins is every pin of vs, its line read again with journal, by
// case, then time; the pins whose line is not printed last.
func firedPins(vs []View, journal JournalFunc) []firedPin {
	var pins []firedPin
	for _, v := range vs {
		if _, _, chain := chainPinOf(v.ID); Kind(v.ID) != "pin" || chain {
			continue // a chain pin is handed in under Volume chains (chainpin.go)
		}
		p := firedPin{v: v, err: errors.New("the id names no line")}
		if feed, seq, ok := pinOf(v.ID); ok {
			p.feed, p.seq, p.err = feed, seq, errors.New("the journal was not read")
			if journal != nil {
				p.line, p.err = journal(feed, seq)
			}
		}
		pins = append(pins, p)
	}
	slices.SortStableFunc(pins, func(a, b firedPin) int {
		return cmp.Or(cmp.Compare(boolInt(a.err != nil), boolInt(b.err != nil)), strings.Compare(a.line.Case, b.line.Case),
			a.line.Time.Compare(b.line.Time), cmp.Compare(a.seq, b.seq))
	})
	return pins
}

// heading is the pin's heading: its case and time, and who pinned it;
// esc writes what was typed or logged.
func (p firedPin) heading(esc func(string) string) string {
	if p.err != nil {
		return fmt.Sprintf("A pin of line %d%s", p.seq, bylineAs(p.v.Note, esc))
	}
	when := "(no time)"
	if !p.line.Time.IsZero() {
		when = p.line.Time.UTC().Format(time.RFC3339Nano)
	}
	return fmt.Sprintf("%s at %s%s", p.line.Case, when, bylineAs(p.v.Note, esc))
}

// place says where the pin's line is in the journal, or why it is not
// printed.
func (p firedPin) place(esc func(string) string) string {
	if p.err != nil {
		return fmt.Sprintf("Not printed: line %d of the journal (feed %s) %s.", p.seq, esc(p.feed), pinGone(p.err))
	}
	l := p.line
	version := cmp.Or(l.Kubelet, "not known")
	if l.Kubelet != "" && l.KubeletFrom != "" {
		version += " (from its " + l.KubeletFrom + ")"
	}
	return fmt.Sprintf("Line %d of the journal, cursor %s; pod %s; node %s; kubelet %s.", l.Seq,
		cmp.Or(esc(l.Cursor), "(none)"), cmp.Or(esc(strings.Join(l.Pods, ", ")), "(none)"), cmp.Or(esc(l.Node), "(not said)"), esc(version))
}

// pinGone says why a pin's line is not printed.
func pinGone(err error) string {
	switch {
	case errors.Is(err, feeds.ErrNoLine):
		return "is no longer stored: the journal's stream has evicted it since it was pinned, so no copy is printed"
	case errors.Is(err, feeds.ErrDemoLine):
		return "is a demo line (a simulated kubelet), which never counts"
	case errors.Is(err, feeds.ErrNoCase):
		return "matches no case of the loop"
	case errors.Is(err, errOtherFeed):
		return "is not a line of this room's journal"
	case errors.Is(err, feeds.ErrNoChain):
		return "begins no chain of a volume"
	}
	return "could not be read as this hand-in was built (" + err.Error() + "): download it again in a moment"
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
