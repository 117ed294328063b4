package feeds

// The record of the volume reading's evidence, beside the record of what
// fired (fired.go) and built the same way, in deliverLocked from the stream
// alone: per part of the volume manager (its reconcile pass's phases, the
// populator), how many lines it logged, the first and the last, the pods;
// and the chains those lines make per volume and pod (classify.Chains):
// "this volume went desired → verifying → mounting → mounted". Its lines
// are labelled against the volume Reading at the feed's tag; when that
// Reading arrives after the first lines, or the tag changes, the record is
// classified anew from the stream, as the record of what fired is.
//
//	GET /feeds/{feed}/chains   the record (JSON below)
//
//	{"read_at":"v1.31.0","reading":true|false,
//	 "parts":{"mountOrAttachVolumes":{"count":3,"first":ENTRY,"last":ENTRY,"pods":["default/scratch-lab"]}},
//	 "chains":[{"id":N,"volume":"kubernetes.io/empty-dir/…-cache","spec":"cache","pod":"default/scratch-lab","uid":"…",
//	            "path":"desired → verifying → mounting → mounted",
//	            "steps":[{"step":"desired","part":"populator","literal":"…","count":9,"first":LINE,"last":LINE}]}]}
//	LINE: {"seq":N,"time":"…","text":"<the kubelet's line>"}
//
// A chain's id is the feed's line number of its first line: what a pin of
// the chain names (Service.Chain). Demo lines never count.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/syncloop/syncloop/extractor/volume"
	"github.com/syncloop/syncloop/server/classify"
	"github.com/syncloop/syncloop/server/relay"
)

// volRecheck is how often a feed without its tag's volume Reading asks
// for it again (Config.VolumeReading may read the disk cache).
const volRecheck = 2 * time.Second

// volRecord is a feed's record of the volume reading's lines, part of its
// record of what fired: the record's lock (firedLog.mu) guards it.
type volRecord struct {
	by     *classify.Volumes // what its lines were labelled with; nil: none yet
	parts  map[string]*firedCase
	chains classify.Chains
	// keep, in a record of the lines delivered while the record is
	// classified anew (firedRecord.refire), keeps their labels for merge.
	keep   bool
	events []volEvent
}

type volEvent struct {
	label classify.VolumeLabel
	line  classify.ChainLine
	at    firedAt
	pods  []string
	first firedLine
}

// add labels and records one delivered line.
func (v *volRecord) add(seq, msg uint64, line *classify.Line, raw string) {
	if v.by == nil {
		return
	}
	lb, ok := v.by.Label(line)
	if !ok {
		return
	}
	e := firedLine{seq: seq, time: line.Time, raw: raw, cursor: line.Cursor}
	if len(e.raw) > displayLimit {
		e.raw = cutUTF8(e.raw, displayLimit)
	}
	text := line.Display()
	if len(text) > displayLimit {
		text = cutUTF8(text, displayLimit)
	}
	ev := volEvent{label: lb, line: classify.ChainLine{Seq: seq, Time: line.Time, Text: text, Ref: msg},
		at: firedAt{seq, msg}, pods: line.Pods, first: e}
	v.apply(ev)
	if v.keep {
		ev.pods = slices.Clone(ev.pods)
		v.events = append(v.events, ev)
	}
}

// apply records a labelled line.
func (v *volRecord) apply(ev volEvent) {
	if v.parts == nil {
		v.parts = make(map[string]*firedCase)
	}
	c := v.parts[ev.label.Part]
	if c == nil {
		c = &firedCase{}
		v.parts[ev.label.Part] = c
	}
	c.note(ev.at, ev.first, ev.pods)
	v.chains.Add(ev.label, ev.line)
}

// merge applies the lines later recorded (all after v's).
func (v *volRecord) merge(later *volRecord) {
	for _, ev := range later.events {
		v.apply(ev)
	}
}

// volKey prefixes a part's key among the cases' in the places the prune
// reads first lines back from (firedRecord.dropBefore): no case key has a
// colon.
const volKey = "vol:"

// dropBefore forgets the lines before the feed's line seq, adding to
// refirst (made when nil), under volKey and its part, the place of the new
// first line of each part whose first line went.
func (v *volRecord) dropBefore(seq uint64, refirst map[string]firedAt) map[string]firedAt {
	refirst = dropCasesBefore(v.parts, seq, volKey, refirst)
	v.chains.DropBefore(seq)
	return refirst
}

// refreshVolumes gives the feed the labeller of its tag's volume Reading
// once there is one (asked at most every volRecheck). f.mu is held.
func (s *Service) refreshVolumesLocked(f *feed) {
	if s.cfg.VolumeReading == nil {
		return
	}
	if f.vols != nil && f.volsTag == f.tag {
		return
	}
	if f.volsTag == f.tag && time.Since(f.volsAsked) < volRecheck {
		return
	}
	f.volsTag, f.volsAsked = f.tag, time.Now()
	f.vols = nil
	if r := s.cfg.VolumeReading(f.tag); r != nil {
		f.vols = classify.NewVolumes(r)
	}
}

// ChainsRecord is what GET /feeds/{feed}/chains answers.
type ChainsRecord struct {
	ReadAt string `json:"read_at"`
	// Reading says the volume Reading at ReadAt is loaded: without it no
	// line is labelled yet (open /k8s/{tag}/volume-manager once).
	Reading bool                 `json:"reading"`
	Parts   map[string]FiredCase `json:"parts"`
	Chains  []ChainView          `json:"chains"`
}

// ChainView is one chain as served: the chain and its path.
type ChainView struct {
	classify.Chain
	Path string `json:"path"`
}

// chainsLocked is the feed's record as served. f.mu and f.fired.mu are
// held.
func (f *feed) chainsLocked() ChainsRecord {
	v := &f.fired.vol
	out := ChainsRecord{ReadAt: f.tag, Reading: f.vols != nil, Parts: make(map[string]FiredCase, len(v.parts)), Chains: []ChainView{}}
	for key, c := range v.parts {
		out.Parts[key] = FiredCase{Count: len(c.at), First: c.first.entry(), Last: c.last.entry(), Pods: append([]string{}, c.pods...)}
	}
	for _, c := range v.chains.List() {
		out.Chains = append(out.Chains, ChainView{Chain: c, Path: c.Path()})
	}
	return out
}

// HandleChains answers GET /feeds/{feed}/chains: the feed's record of the
// volume reading's parts and chains.
func (s *Service) HandleChains() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A room's feed is made by its owner's say (before its first line,
		// the record is empty), as every feed route's is (owner.go).
		if !s.admit(w, r, false, false) {
			return
		}
		f := s.storedFeedOr404(w, r)
		if f == nil {
			return
		}
		f.mu.Lock()
		f.refreshClassifier(s.reading)
		s.refreshVolumesLocked(f)
		f.refirePerhapsLocked()
		f.fired.mu.Lock()
		rec := f.chainsLocked()
		f.fired.mu.Unlock()
		f.mu.Unlock()
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(rec)
	})
}

// ErrNoChain: the line is the journal's but begins no chain of the volume
// reading (a made-up id, or a line of another kind).
var ErrNoChain = errors.New("a line that begins no chain of a volume: it proves no volume went through the reconciler")

// StoredChain is one chain of a feed's journal, its lines as the stream
// holds them.
type StoredChain struct {
	Feed  string
	Chain classify.Chain
	// Lines are the first and last line of each step, read from the
	// stream, in the order of their sequence numbers.
	Lines                []StoredLine
	Kubelet, KubeletFrom string
}

// Chain looks up the chain whose first line is the named feed's line id,
// and reads its steps' lines back from the stream. It returns ErrNoLine,
// ErrDemoLine or ErrNoChain (wrapped) for an id that names no chain.
func (s *Service) Chain(ctx context.Context, name string, id uint64) (StoredChain, error) {
	f, err := s.existingFeed(name)
	switch {
	case err != nil:
		return StoredChain{}, err
	case f == nil || id == 0:
		return StoredChain{}, fmt.Errorf("line %d of feed %s: %w", id, name, ErrNoLine)
	}
	select {
	case <-f.ready:
	case <-ctx.Done():
		return StoredChain{}, ctx.Err()
	case <-time.After(followWithin):
		return StoredChain{}, fmt.Errorf("feed %s: its stored lines are still being read; retry later", name)
	}
	f.mu.Lock()
	s.refreshVolumesLocked(f)
	f.fired.mu.Lock()
	c, found := f.fired.vol.chains.Get(id)
	f.fired.mu.Unlock()
	version, from := f.kubelet.version, f.kubelet.from
	f.mu.Unlock()
	if !found {
		err := f.whyNotFired(ctx, id)
		if errors.Is(err, ErrNoCase) {
			return StoredChain{}, fmt.Errorf("line %d of feed %s: %w", id, name, ErrNoChain)
		}
		return StoredChain{}, err
	}
	var at []firedAt
	for _, st := range c.Steps {
		at = append(at, firedAt{st.First.Seq, st.First.Ref})
		if st.Last.Seq != st.First.Seq {
			at = append(at, firedAt{st.Last.Seq, st.Last.Ref})
		}
	}
	slices.SortFunc(at, func(a, b firedAt) int { return cmp.Compare(a.seq, b.seq) })
	out := StoredChain{Feed: f.name, Chain: c, Kubelet: version, KubeletFrom: from}
	cls := classify.New(nil)
	err = f.readLines(ctx, at, func(seq uint64, in relay.Line) error {
		line := cls.ClassifyString(in.Raw)
		out.Lines = append(out.Lines, StoredLine{Feed: f.name, Seq: seq, Raw: in.Raw, Time: line.Time,
			Cursor: line.Cursor, Pods: line.Pods, Node: line.Host, Text: line.Display(), Kubelet: version, KubeletFrom: from})
		return nil
	})
	if err != nil {
		return StoredChain{}, err
	}
	if len(out.Lines) == 0 || out.Lines[0].Seq != id {
		return StoredChain{}, fmt.Errorf("line %d of feed %s: %w", id, name, ErrNoLine) // evicted since
	}
	return out, nil
}

// VolumeReadingFunc returns the volume Reading at a tag once it is loaded
// (nil before): what a feed's volume lines are labelled against.
type VolumeReadingFunc func(tag string) *volume.Reading
