package annotations

// Quiz mode (serve --quiz, a class that hides the site's notes): the
// checker says yes or no and nothing more, and each client gets a bounded
// number of verdicts a minute, so that a student cannot try candidates
// until the warning goes. Outside quiz mode the checks of model.go say
// more (the right line, what feeds the sender), to help a reader alone.

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/rooms"
)

// ChecksPerMinute is how many verdicts one client gets a minute in quiz
// mode (each symbol of a writer's answer, each file:line of a set's, is
// one; an answer checked before costs nothing again).
const ChecksPerMinute = 10

// checkQuiz is what quiz mode says about a note's text: for a writer,
// whether each symbol sends on the case's channel or not, or is not found
// at the tag; for a set, whether the file:line is where the type named
// beside it is declared. Never the right line, path or another symbol's
// place; nothing about which field holds which set.
func checkQuiz(r *extractor.Reading, id, text string) []Check {
	kind, key, _ := strings.Cut(id, ".")
	text = strings.TrimSpace(text)
	switch {
	case kind == "writer" && text != "":
		c, ok := r.Function.CaseByKey(key)
		if !ok {
			return []Check{{"warn", fmt.Sprintf("The select has no %s case at %s.", key, r.Tag)}}
		}
		var out []Check
		for _, s := range writerSymbols(text) {
			switch _, sends := siteFor(c.Writers, s); {
			case sends:
				out = append(out, Check{"ok", fmt.Sprintf("%s sends on this channel at %s.", s, r.Tag)})
			case exists(r, s) == no:
				out = append(out, Check{"warn", fmt.Sprintf("%s is not found at %s.", s, r.Tag)})
			default:
				out = append(out, Check{"warn", fmt.Sprintf("%s does not send on this channel at %s.", s, r.Tag)})
			}
		}
		return out
	case kind == "set" && text != "":
		return checkSetQuiz(r, text)
	case kind == "set":
		return []Check{{"empty", "Which set, declared where? Its type's name and file:line"}}
	}
	return CheckNote(r, id, text)
}

// elementType is what a hand-in says of case c's element type after its
// channel: nothing in quiz mode, where it is one of the exercise's
// questions.
func elementType(c extractor.Case, quiz bool) string {
	if quiz {
		return ""
	}
	return fmt.Sprintf(", element type `%s`", cmp.Or(c.Type, "(none)"))
}

// setHeading is a hand-in's heading for set name's answer: in quiz mode
// one that does not name it.
func setHeading(name string, quiz bool) string {
	switch {
	case !quiz:
		return name
	case name == setTypes[0]:
		return "One set"
	}
	return "The other set"
}

// setTypes are the two sets' type names, as the reader may write them.
var setTypes = []string{"DesiredStateOfWorld", "ActualStateOfWorld"}

// namedSet is the set type text names, "" for none.
func namedSet(text string) string {
	for _, n := range setTypes {
		if strings.Contains(strings.ToLower(text), strings.ToLower(n)) {
			return n
		}
	}
	return ""
}

// checkSetQuiz checks each file:line of a set's answer against where the
// type it names is declared: yes or no, in the reader's own words.
func checkSetQuiz(r *extractor.Reading, text string) []Check {
	ms := fileLineRE.FindAllStringSubmatch(text, -1)
	if len(ms) == 0 {
		return []Check{{"warn", "Give it as file:line, e.g. some_file.go:123, so it can be checked."}}
	}
	named := namedSet(text)
	if named == "" {
		return []Check{{"warn", "Name the set's type too: its name and its file:line are checked together."}}
	}
	var out []Check
	for _, m := range ms {
		line, _ := strconv.Atoi(m[2])
		if setDeclaredAt(r, named, m[1], line) {
			out = append(out, Check{"ok", fmt.Sprintf("%s is declared at %s at %s.", named, m[0], r.Tag)})
		} else {
			out = append(out, Check{"warn", fmt.Sprintf("%s is not declared at %s at %s.", named, m[0], r.Tag)})
		}
	}
	return out
}

// setDeclaredAt reports whether set type name is declared at file:line
// (file as the reader wrote it: the path from the module root, or its end).
func setDeclaredAt(r *extractor.Reading, name, file string, line int) bool {
	return slices.ContainsFunc(r.TwoSets, func(d extractor.SetDecl) bool {
		return d.Name == name && d.Line == line &&
			(d.File == file || strings.HasSuffix(d.File, "/"+strings.TrimPrefix(file, "/")))
	})
}

// writerSymbols are the symbols a writer's answer names, once each, as
// checkWriter reads them.
func writerSymbols(text string) []string {
	var out []string
	for _, m := range symbolRE.FindAllStringSubmatch(text, -1) {
		s := strings.TrimPrefix(m[1], "sym:")
		if !slices.Contains(out, s) && !strings.HasSuffix(s, ".go") {
			out = append(out, s)
		}
	}
	return out
}

// verdicts are the things quiz mode would judge in n at r's tag, each
// once: a writer's symbols, a set's type with each file:line, an answer
// of the second reading's worksheet as a whole. Only the notes a
// worksheet asks for are judged (Expected, VolumeExpected's kinds).
func verdicts(r *extractor.Reading, n Note) []string {
	switch Kind(n.ID) {
	case "vm", "vmphase":
		// The second reading's checks say yes or no of a whole answer:
		// each different answer is one verdict.
		if t := strings.ToLower(strings.Join(strings.Fields(n.Text), " ")); r != nil && t != "" && ValidID(n.ID) {
			return []string{r.Tag + " " + n.ID + " " + t}
		}
		return nil
	}
	if r == nil || !slices.Contains(Expected(r), n.ID) {
		return nil
	}
	var out []string
	switch Kind(n.ID) {
	case "writer":
		out = writerSymbols(n.Text)
	case "set":
		named := strings.ToLower(namedSet(n.Text))
		if named == "" {
			return nil
		}
		for _, m := range fileLineRE.FindAllString(n.Text, -1) {
			out = append(out, named+" "+m)
		}
	}
	for i := range out {
		out[i] = r.Tag + " " + n.ID + " " + out[i]
	}
	return out
}

// checkBudget bounds the verdicts each client is given in quiz mode: a
// token bucket per client (ChecksPerMinute, at once and a minute after),
// and the verdicts it was given lately, which cost nothing again (a page
// sends all its notes each time one changes).
type checkBudget struct {
	lim  *rooms.KeyLimiter
	seed maphash.Seed

	mu   sync.Mutex
	seen map[string][]uint64 // client → hashes of the verdicts given, oldest first
}

// Bounds of what checkBudget remembers: 2 KB a client at most.
const (
	seenPerClient = 256
	seenClients   = 10000
)

func newCheckBudget(perMinute int) *checkBudget {
	return &checkBudget{lim: rooms.NewKeyLimiter(float64(perMinute)/60, float64(perMinute), seenClients),
		seed: maphash.MakeSeed(), seen: map[string][]uint64{}}
}

// spend takes from client's budget one check per verdict in notes not
// given to it lately, and reports how many it wanted and whether it had
// them; when it had not, nothing is taken or remembered.
func (b *checkBudget) spend(client string, r *extractor.Reading, notes []Note, now time.Time) (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	seen := b.seen[client]
	var fresh []uint64
	for _, n := range notes {
		for _, v := range verdicts(r, n) {
			if h := maphash.String(b.seed, v); !slices.Contains(seen, h) && !slices.Contains(fresh, h) {
				fresh = append(fresh, h)
			}
		}
	}
	if len(fresh) == 0 {
		return 0, true
	}
	if !b.lim.AllowN(client, now, len(fresh)) {
		return len(fresh), false
	}
	if len(b.seen) >= seenClients && seen == nil {
		clear(b.seen) // a stream of addresses: forget them all, at worst a page's checks are paid again
	}
	seen = append(seen, fresh...)
	if len(seen) > seenPerClient {
		seen = slices.Clone(seen[len(seen)-seenPerClient:])
	}
	b.seen[client] = seen
	return len(fresh), true
}

// quiz reports whether r, for room ("" for a reader's own notes), is
// answered in quiz mode (HTTPConfig.Quiz).
func (h *Handlers) quiz(r *http.Request, room string) bool {
	return h.cfg.Quiz != nil && h.cfg.Quiz(r, room)
}

// spendChecks takes the verdicts of notes from r's client's budget when r
// is in quiz mode; when the client has not enough, it answers 429 itself
// and reports false.
func (h *Handlers) spendChecks(w http.ResponseWriter, r *http.Request, room string, reading *extractor.Reading, notes []Note) bool {
	if reading == nil || !h.quiz(r, room) {
		return true
	}
	n, ok := h.checks.spend(h.cfg.Identify(r), reading, notes, time.Now())
	if ok {
		return true
	}
	w.Header().Set("Retry-After", strconv.Itoa(60/ChecksPerMinute))
	msg := fmt.Sprintf("Quiz mode checks at most %d answers a minute (each symbol, each file:line is one), so that answers are found in the source, not by trying them: your text is kept, and checked in a moment.", ChecksPerMinute)
	if n > ChecksPerMinute {
		msg = fmt.Sprintf("Quiz mode checks at most %d answers a minute (each symbol, each file:line is one), and this asks for %d at once: name fewer in one answer.", ChecksPerMinute, n)
	}
	jsonError(w, http.StatusTooManyRequests, msg)
	return false
}
