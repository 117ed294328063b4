package classify

// The kubelet's version, from its lines. A start-up line names it
// ("Kubelet version" kubeletVersion="v1.33.0"); a journal that began
// after it (a relay started late, journalctl's tail) still tells it by
// where its lines are logged: a tag's log sites are (caller file:line,
// message) pairs, and the line numbers of kubelet.go move from minor
// release to minor release, and often from patch to patch. Each line at a
// known log site leaves the tags that log that message at that caller:
// a few housekeeping lines, logged every two seconds at -v=4, pin the
// minor release.

import (
	"math/bits"
	"path"
	"strings"

	"golang.org/x/mod/semver"

	"github.com/syncloop/syncloop/extractor"
)

// VersionTag is the tag a kubelet version reads at: the version without
// its build metadata ("v1.31.0+k3s1" reads at v1.31.0), when that is a tag
// the site can serve, pre-releases included ("v1.38.0-beta.0"); "" when it
// is not. It is the one test of a version's shape: the browser gets its
// answer (the feed's status says version_tag), never a pattern of its own.
func VersionTag(v string) string {
	v, _, _ = strings.Cut(v, "+")
	if extractor.CheckTag(v) != nil {
		return ""
	}
	return v
}

// Sites indexes the log sites of several tags' Readings by caller and
// message. It is immutable and safe for concurrent use.
type Sites struct {
	tags []string // in semver order; a tag's bit is its index
	at   map[siteAt][]siteOf
}

type siteAt struct {
	file string // base name, as klog prints it
	line int
}

// siteOf is a message logged at a caller, and the tags that log it there.
type siteOf struct {
	message, style string
	tags           tagSet
}

// tagSet is a set of Sites.tags' indexes.
type tagSet []uint64

func newTagSet(n int) tagSet { return make(tagSet, (n+63)/64) }

func (s tagSet) add(i int)      { s[i/64] |= 1 << (i % 64) }
func (s tagSet) has(i int) bool { return s[i/64]&(1<<(i%64)) != 0 }
func (s tagSet) and(o tagSet) {
	for i := range s {
		s[i] &= o[i]
	}
}
func (s tagSet) or(o tagSet) {
	for i := range s {
		s[i] |= o[i]
	}
}
func (s tagSet) clone() tagSet       { return append(tagSet(nil), s...) }
func (s tagSet) equal(o tagSet) bool { return slicesEqual(s, o) }
func (s tagSet) count() int {
	n := 0
	for _, w := range s {
		n += bits.OnesCount64(w)
	}
	return n
}

func slicesEqual(a, b tagSet) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// NewSites indexes the log sites of rs (nil entries are skipped; a tag
// given twice counts once).
func NewSites(rs []*extractor.Reading) *Sites {
	byTag := map[string]*extractor.Reading{}
	for _, r := range rs {
		if r != nil && VersionTag(r.Tag) == r.Tag {
			byTag[r.Tag] = r
		}
	}
	s := &Sites{at: map[siteAt][]siteOf{}}
	for tag := range byTag {
		s.tags = append(s.tags, tag)
	}
	semver.Sort(s.tags)
	for i, tag := range s.tags {
		for _, c := range byTag[tag].Function.Cases {
			for _, ls := range c.Logs {
				k := siteAt{path.Base(ls.File), ls.Line}
				ss := s.at[k]
				j := 0
				for j < len(ss) && (ss[j].message != ls.Message || ss[j].style != ls.Style) {
					j++
				}
				if j == len(ss) {
					ss = append(ss, siteOf{ls.Message, ls.Style, newTagSet(len(s.tags))})
					s.at[k] = ss
				}
				ss[j].tags.add(i)
			}
		}
	}
	return s
}

// Tags are the tags indexed, in semver order.
func (s *Sites) Tags() []string { return s.tags }

// match is the set of tags that log line l's message at its caller; nil
// when l is at no log site of any tag indexed.
func (s *Sites) match(l *Line) tagSet {
	if l.Message == "" {
		return nil
	}
	base, n, ok := splitCaller(l.Caller)
	if !ok {
		return nil
	}
	var m tagSet
	for _, so := range s.at[siteAt{base, n}] {
		if !(site{message: so.message, style: so.style}).consistent(l.Message) {
			continue
		}
		if m == nil {
			m = newTagSet(len(s.tags))
		}
		m.or(so.tags)
	}
	return m
}

// Guess narrows the tags a journal's kubelet may run as its lines go by.
// It is not safe for concurrent use: one per journal.
type Guess struct {
	s     *Sites
	cand  tagSet
	seen  int // lines at a log site of some tag
	stray int // lines at a log site of none that would have emptied cand
}

// NewGuess starts a guess with every tag indexed a candidate.
func (s *Sites) NewGuess() *Guess {
	g := &Guess{s: s, cand: newTagSet(len(s.tags))}
	for i := range s.tags {
		g.cand.add(i)
	}
	return g
}

// Observe takes the next line of the journal into account, and reports
// whether it narrowed the candidates.
func (g *Guess) Observe(l *Line) bool {
	m := g.s.match(l)
	if m == nil {
		return false
	}
	g.seen++
	next := g.cand.clone()
	next.and(m)
	if next.count() == 0 {
		// No tag indexed logs every line seen so far as it was: the
		// kubelet runs a tag the site does not know. Say nothing.
		g.stray++
		g.cand = next
		return true
	}
	changed := !next.equal(g.cand)
	g.cand = next
	return changed
}

// Lines is how many lines at a known log site the guess has seen.
func (g *Guess) Lines() int { return g.seen }

// Candidates are the tags that log every line seen as it was, in semver
// order (all the tags indexed before any line at a log site).
func (g *Guess) Candidates() []string {
	var out []string
	for i, t := range g.s.tags {
		if g.cand.has(i) {
			out = append(out, t)
		}
	}
	return out
}

// minGuessLines is how many lines at log sites a guess wants before it
// names a tag: one line could come from a site that moved to a line
// another tag's message happens to sit at.
const minGuessLines = 3

// Tag is the guess: prefer, among the candidates, the tag given (the one
// a feed already reads at), else the oldest. ok is false until
// minGuessLines lines at log sites have been seen, or when no tag indexed
// fits every line.
func (g *Guess) Tag(prefer string) (tag string, ok bool) {
	c := g.Candidates()
	if g.seen < minGuessLines || len(c) == 0 || len(c) == len(g.s.tags) && len(c) > 1 {
		return "", false
	}
	for _, t := range c {
		if t == prefer {
			return t, true
		}
	}
	return c[0], true
}

// Reading is the Reading the stream classifies against (nil when none).
func (s *Stream) Reading() *extractor.Reading { return s.c.r }
