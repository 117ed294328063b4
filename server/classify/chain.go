package classify

// chain.go joins the labelled lines of the volume reading into chains: one
// per volume (its UniqueName) and pod (its UID), the steps in the order
// they first came: "desired → verifying → mounting → mounted", and on
// delete "removing → unmounting → torn down → detached". The lines come
// from three goroutines (the populator, the reconciler, the operation's
// own) and name the volume three ways: the populator by the pod's
// namespace/name and the volume's spec name, the reconciler's mount by
// spec name, UniqueName, pod name and UID, its unmount by UniqueName and
// UID (as "pod"), "Volume detached" by UniqueName alone. A chain is opened
// by the first line and adopted by the first that names it whole.

import (
	"slices"
	"strings"
	"time"
)

// MaxChains bounds the chains a Chains keeps (the oldest go first).
const MaxChains = 512

// ChainLine is one line of a chain: the feed's line number, as the caller
// gave it, its time and its text (the kubelet's own line).
type ChainLine struct {
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	Text string    `json:"text"`
	// Ref is the caller's own reference for where the line is kept (the
	// stream message holding it), never served.
	Ref uint64 `json:"-"`
}

// ChainStep is one step of a chain: the lines that say it, the first and
// the last (the populator says "desired" again at every pass: the desired
// state is asserted, not sent once).
type ChainStep struct {
	Step    string    `json:"step"`
	Part    string    `json:"part"`
	Literal string    `json:"literal"`
	Count   int       `json:"count"`
	First   ChainLine `json:"first"`
	Last    ChainLine `json:"last"`
}

// Chain is one volume of one pod, as its lines told it.
type Chain struct {
	// ID is the feed's line number of the chain's first line: what a pin
	// of the chain names.
	ID     uint64      `json:"id"`
	Volume string      `json:"volume"` // UniqueName, "" until a line names it
	Spec   string      `json:"spec"`   // the pod's name for it ("cache")
	Pod    string      `json:"pod"`    // namespace/name when a line said it, else name
	UID    string      `json:"uid"`
	Steps  []ChainStep `json:"steps"`
}

// Path is the chain's steps in order: "desired → verifying → mounted".
func (c *Chain) Path() string {
	s := make([]string, len(c.Steps))
	for i, st := range c.Steps {
		s[i] = st.Step
	}
	return strings.Join(s, " → ")
}

// Has says whether the chain has the step.
func (c *Chain) Has(step string) bool {
	return slices.ContainsFunc(c.Steps, func(s ChainStep) bool { return s.Step == step })
}

// removal says the chain has begun its removal: a "desired" after it is
// another pod's (a manifest restored), not this one's.
func (c *Chain) removal() bool {
	return c.Has(StepRemoving) || c.Has(StepUnmounting) || c.Has(StepTornDown) || c.Has(StepDetached)
}

// Chains joins labelled lines into chains, in the order given. It is not
// safe for concurrent use; its owner locks it.
type Chains struct {
	list []*Chain
}

// Add adds one labelled line (one with a Step; others are ignored).
func (cs *Chains) Add(lb VolumeLabel, ln ChainLine) {
	if lb.Step == "" {
		return
	}
	c := cs.find(lb)
	if c == nil {
		if lb.Volume == "" && lb.Spec == "" {
			return // names no volume: nothing to join it to
		}
		if len(cs.list) >= MaxChains {
			cs.list = slices.Delete(cs.list, 0, 1)
		}
		c = &Chain{ID: ln.Seq}
		cs.list = append(cs.list, c)
	}
	c.Volume = orSet(c.Volume, lb.Volume)
	c.Spec = orSet(c.Spec, lb.Spec)
	c.UID = orSet(c.UID, lb.UID)
	if lb.Pod != "" && lb.Pod != c.UID && (c.Pod == "" || strings.Contains(lb.Pod, "/")) {
		c.Pod = lb.Pod // namespace/name over name; never the UID the unmount prints as pod
	}
	part := lb.Part
	if len(lb.Parts) > 1 && len(c.Steps) > 0 {
		// An operation several phases start: the one that started it here.
		if prev := c.Steps[len(c.Steps)-1].Part; slices.Contains(lb.Parts, prev) {
			part = prev
		}
	}
	for i := range c.Steps {
		if s := &c.Steps[i]; s.Step == lb.Step {
			s.Count++
			s.Last = ln
			return
		}
	}
	c.Steps = append(c.Steps, ChainStep{Step: lb.Step, Part: part, Literal: lb.Literal, Count: 1, First: ln, Last: ln})
}

func orSet(have, got string) string {
	if have == "" {
		return got
	}
	return have
}

// find is the chain lb's line belongs to, latest first; nil for a new one.
func (cs *Chains) find(lb VolumeLabel) *Chain {
	name := podName(lb.Pod)
	for i := len(cs.list) - 1; i >= 0; i-- {
		c := cs.list[i]
		if c.Has(StepDetached) && lb.Step != StepDetached {
			continue // over: the device is gone
		}
		if lb.Step == StepDesired && c.removal() {
			continue
		}
		switch {
		case lb.Volume != "" && c.Volume == lb.Volume:
			if lb.UID == "" || c.UID == "" || c.UID == lb.UID {
				return c
			}
		case lb.Volume != "" && c.Volume == "":
			// Opened by the populator: adopted by the first line naming
			// its spec and pod.
			// (v1.20's populator names the pod by its UID.)
			if c.Spec == lb.Spec && (c.UID != "" && c.UID == lb.UID || name != "" && podName(c.Pod) == name || c.Pod == lb.UID) {
				return c
			}
		case lb.Volume == "" && c.Spec == lb.Spec:
			if lb.UID != "" && c.UID == lb.UID || lb.UID == "" && name != "" && (podName(c.Pod) == name || c.UID == lb.Pod) {
				return c
			}
		}
	}
	return nil
}

// podName is the name of "namespace/name", or the text as it is.
func podName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// List is a copy of the chains, oldest first.
func (cs *Chains) List() []Chain {
	out := make([]Chain, len(cs.list))
	for i, c := range cs.list {
		out[i] = *c
		out[i].Steps = slices.Clone(c.Steps)
	}
	return out
}

// Get is the chain whose first line is id.
func (cs *Chains) Get(id uint64) (Chain, bool) {
	for _, c := range cs.list {
		if c.ID == id {
			cc := *c
			cc.Steps = slices.Clone(c.Steps)
			return cc, true
		}
	}
	return Chain{}, false
}

// DropBefore forgets the chains whose first line is before seq (no longer
// stored), and the steps whose lines all are; a step whose first line
// went keeps its last.
func (cs *Chains) DropBefore(seq uint64) {
	cs.list = slices.DeleteFunc(cs.list, func(c *Chain) bool {
		c.Steps = slices.DeleteFunc(c.Steps, func(s ChainStep) bool { return s.Last.Seq < seq })
		for i := range c.Steps {
			if s := &c.Steps[i]; s.First.Seq < seq {
				s.First = s.Last
			}
		}
		return len(c.Steps) == 0 || c.ID < seq
	})
}
