package annotations

// Chain pins: a volume's chain (feeds/chains.go: "this volume went desired
// → verifying → mounting → mounted") kept as proof that the volume
// manager's reconciler ran, as a line pin is proof a case's handler ran.
// The pin names the chain by its feed and its first line's sequence
// number, the note "pin.<feed>-chain<N>"; its text is the server's, made
// from the chain's lines as the feed's stream holds them, never a
// browser's:
//
//	POST /rooms/{id}/pins {"chain":N}   pin the chain whose first line is line N
//
// A chain the room's journal does not hold (a made-up number, a line that
// begins no chain), a demo line, or a text that is not the chain's is
// refused: 422 with the reason. The worksheet hands chain pins in under
// "Volume chains", each read again from the stream as the hand-in is built.

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/syncloop/syncloop/server/feeds"
	"github.com/syncloop/syncloop/server/rooms"
)

// ChainFunc looks up a chain of a feed's journal by its first line
// (feeds.Service.Chain).
type ChainFunc func(ctx context.Context, feed string, id uint64) (feeds.StoredChain, error)

// ChainJournalFunc is ChainFunc bound to one request and one room's feed.
type ChainJournalFunc func(feed string, id uint64) (feeds.StoredChain, error)

// ChainJournal is chain bound to ctx, reading only the room's own feed
// (room "": any feed); nil when chain is.
func ChainJournal(ctx context.Context, chain ChainFunc, room string) ChainJournalFunc {
	if chain == nil {
		return nil
	}
	return func(feed string, id uint64) (feeds.StoredChain, error) {
		if room != "" && feed != rooms.FeedPrefix+room {
			return feeds.StoredChain{}, fmt.Errorf("feed %s: %w (its feed is %s)", feed, errOtherFeed, rooms.FeedPrefix+room)
		}
		return chain(ctx, feed, id)
	}
}

const chainMark = "-chain"

// ChainPinID is the note id of a pin of the feed's chain whose first line
// is id.
func ChainPinID(feed string, id uint64) string {
	return "pin." + feed + chainMark + strconv.FormatUint(id, 10)
}

// chainPinOf is the feed and first line a chain pin's id names.
func chainPinOf(id string) (feed string, first uint64, ok bool) {
	rest, ok := strings.CutPrefix(id, "pin.")
	i := strings.LastIndex(rest, chainMark)
	if !ok || i <= 0 {
		return "", 0, false
	}
	digits := rest[i+len(chainMark):]
	if digits == "" || strings.Trim(digits, "0123456789") != "" {
		return "", 0, false
	}
	n, err := strconv.ParseUint(digits, 10, 64)
	return rest[:i], n, err == nil && n > 0
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "(none)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// chainPinText is the note text of a pin of c: what the page shows of it.
func chainPinText(c feeds.StoredChain) string {
	ch := c.Chain
	lines := []string{
		"chain: " + ch.Path(),
		"volume: " + cmp.Or(ch.Volume, "(not named)") + " (" + cmp.Or(ch.Spec, "?") + ")",
		"pod: " + cmp.Or(ch.Pod, "(not named)") + ", uid " + cmp.Or(ch.UID, "(not said)"),
	}
	for _, s := range ch.Steps {
		lines = append(lines, fmt.Sprintf("step: %s at %s, in %s (%d line(s), line %d)", s.Step, stamp(s.First.Time), s.Part, s.Count, s.First.Seq))
	}
	version := cmp.Or(c.Kubelet, "(not known)")
	if c.Kubelet != "" && c.KubeletFrom != "" {
		version += " (from its " + c.KubeletFrom + ")"
	}
	lines = append(lines, "kubelet: "+version, fmt.Sprintf("feed: %s, from line %d", c.Feed, ch.ID))
	return strings.Join(lines, "\n")
}

// chainPinFor is the text of the chain pin of room naming feed's chain
// first, from the stream; given, when not empty, must be it. code and
// msg say why the pin is refused.
func (h *Handlers) chainPinFor(ctx context.Context, room, feed string, first uint64, given string) (text string, code int, msg string) {
	if h.cfg.Chain == nil {
		return "", http.StatusServiceUnavailable, "this server reads no journal: nothing can be pinned"
	}
	c, err := ChainJournal(ctx, h.cfg.Chain, room)(feed, first)
	var why string
	switch {
	case errors.Is(err, errOtherFeed), errors.Is(err, feeds.ErrNoLine):
		why = fmt.Sprintf("line %d is not in this room's journal (never stored, or evicted since): pin a chain the volume page shows", first)
	case errors.Is(err, feeds.ErrDemoLine):
		why = fmt.Sprintf("line %d is a demo line (a simulated kubelet): demo lines never count; attach a cluster's journal", first)
	case errors.Is(err, feeds.ErrNoChain):
		why = fmt.Sprintf("line %d begins no chain of a volume, so it proves no volume went through the reconciler: pin a chain the volume page shows", first)
	case err != nil:
		h.cfg.Logger.Warn("annotations: read a pinned chain", "feed", feed, "first", first, "err", err)
		return "", http.StatusServiceUnavailable, "could not read the room's journal now: try again in a moment"
	}
	if why != "" {
		return "", http.StatusUnprocessableEntity, "not pinned: " + why
	}
	text = chainPinText(c)
	if g := strings.TrimRight(given, "\r\n"); g != "" && g != text {
		return "", http.StatusUnprocessableEntity, fmt.Sprintf("not pinned: the text given is not chain %d as the journal stores it; send {\"chain\":%d} alone (POST /rooms/ID/pins) and the server writes it", first, first)
	}
	return text, 0, ""
}

// writeChains writes the worksheet's "Volume chains" section: every chain
// pin, read again from the journal (chains) and its lines printed as
// stored; a chain no longer stored says so.
func writeChains(b *bytes.Buffer, vs []View, chains ChainJournalFunc) {
	first := true
	for _, v := range vs {
		feed, id, ok := chainPinOf(v.ID)
		if !ok {
			continue
		}
		if first {
			fmt.Fprintf(b, "\n## Volume chains\n\nVolumes pinned as proof that the volume manager's reconciler ran, each read again from the journal as this hand-in was built, and printed as stored.\n\n")
			first = false
		}
		err := errors.New("the journal was not read")
		var c feeds.StoredChain
		if chains != nil {
			c, err = chains(feed, id)
		}
		if err != nil {
			fmt.Fprintf(b, "### A pin of the chain from line %d%s\n\nNot printed: it %s.\n\n", id, byline(v.Note), pinGone(err))
			continue
		}
		ch := c.Chain
		fmt.Fprintf(b, "### %s%s\n\n", Inline(ch.Path()), byline(v.Note))
		fmt.Fprintf(b, "Volume %s (%s) of pod %s, uid %s; from line %d of the journal (feed %s).\n\n", cmp.Or(Inline(ch.Volume), "(not named)"),
			cmp.Or(Inline(ch.Spec), "?"), cmp.Or(Inline(ch.Pod), "(not named)"), cmp.Or(Inline(ch.UID), "(not said)"), ch.ID, Inline(c.Feed))
		for _, s := range ch.Steps {
			fmt.Fprintf(b, "- %s at %s, in %s (%d line(s))\n", Inline(s.Step), stamp(s.First.Time), Inline(s.Part), s.Count)
		}
		var raw strings.Builder
		for _, l := range c.Lines {
			raw.WriteString(l.Raw)
			raw.WriteByte('\n')
		}
		fmt.Fprintf(b, "\n%s\n\n", fenced(strings.TrimSuffix(raw.String(), "\n"), "text"))
	}
}
