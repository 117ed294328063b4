// Package extractor turns a Kubernetes source tree at one tag into a Reading:
// the kubelet's syncLoopIteration with its select cases and log sites, the
// type comments of pod_workers.go, and the "two sets" (desired and actual
// state of the world). It knows Go source and the module proxy, nothing of HTTP.
// It is built on the packages beside it: module (where the source comes from,
// verified), index (the syntactic index), flow (the flow engine that derives
// a channel's writers) and defs (the definitions the page opens in place).
// The second reading, the volume manager's reconciler, is extractor/volume.
package extractor

import "github.com/syncloop/syncloop/extractor/module"

// Schema is the version of the Reading's JSON shape. Field names are a public
// contract: fields may be added, never renamed. Bump Schema when the meaning
// of an existing field changes, so cached Readings are extracted anew.
//
// Schema 2 added Verified: a Reading cached before it cannot say how its
// source was checked (a module-cache zip without a .ziphash was not).
// Schema 3 added each case's Made, Writers, Upstream and Goroutine, derived
// from the source (writers.go).
const Schema = 3

// Reading is everything syncloop shows about one tag. It is what the extractor
// returns, what the cache stores, what /k8s/{tag}/reading.json serves and what
// the templates render.
type Reading struct {
	Schema     int        `json:"schema"`
	Module     string     `json:"module"`
	Tag        string     `json:"tag"`
	ModuleHash string     `json:"module_hash,omitempty"` // "h1:…" of the module zip; empty for a source dir
	Source     string     `json:"source"`                // "proxy", "modcache" or "dir"
	Verified   string     `json:"verified"`              // how the source was checked: one of the Verified* values
	Function   Function   `json:"function"`
	PodWorkers PodWorkers `json:"pod_workers"`
	TwoSets    []SetDecl  `json:"two_sets"`
	// Symbols locates the declarations that notes link to by name (the
	// Options.Symbols asked for), keyed by the name as written.
	Symbols map[string]Symbol `json:"symbols,omitempty"`
	// Defs is the definitions index the page opens in place (package defs). It
	// is cached in a file of its own and not part of reading.json; nil
	// when the Reading was read from the cache (see CachedDefs).
	Defs *Defs `json:"-"`
}

// How a Reading's source was checked (Reading.Verified). Every zip is
// hashed (ModuleHash); these say what its hash was found equal to.
const (
	// VerifiedSumDB: the hash the Go checksum database ($GOSUMDB) lists for
	// the tag.
	VerifiedSumDB = module.VerifiedSumDB
	// VerifiedPinnedSumDB: DefaultTagHash, pinned in syncloop, and the hash
	// the checksum database lists (DefaultTag downloaded through the proxy).
	VerifiedPinnedSumDB = module.VerifiedPinnedSumDB
	// VerifiedPinned: DefaultTagHash, with no checksum database lookup
	// (DefaultTag from the module cache, or downloaded with GOSUMDB=off).
	VerifiedPinned = module.VerifiedPinned
	// VerifiedZiphash: the hash in the module cache's .ziphash beside the
	// zip, which the go command writes once it has checked the zip against
	// go.sum or the checksum database.
	VerifiedZiphash = module.VerifiedZiphash
	// VerifiedNone: not checked. Either a source directory (Source "dir"),
	// which has no hash, or a zip for which GOSUMDB=off, GONOSUMDB or
	// GOPRIVATE turned the checksum database off, as the go command allows.
	VerifiedNone = module.VerifiedNone
)

// Symbol is one declaration located at the tag. Found is false when the name
// does not resolve there (renamed, moved or not yet written).
type Symbol struct {
	Found    bool   `json:"found"`
	File     string `json:"file,omitempty"`
	Line     int    `json:"line,omitempty"`
	Upstream string `json:"upstream,omitempty"`
}

// Function is (*Kubelet).syncLoopIteration at the tag.
type Function struct {
	Name       string   `json:"name"`
	File       string   `json:"file"` // slash path relative to the module root
	FileSHA256 string   `json:"file_sha256"`
	DocStart   int      `json:"doc_start"` // first line of the doc comment (== Start when there is none)
	Start      int      `json:"start"`     // line of the func keyword
	End        int      `json:"end"`       // line of the closing brace
	Upstream   string   `json:"upstream"`
	Doc        string   `json:"doc"`  // the doc comment's text, comment markers removed
	Text       string   `json:"text"` // exact source of lines DocStart..End
	Cases      []Case   `json:"cases"`
	Helpers    []Helper `json:"helpers"`
}

// Case is one communication clause of the function's top-level select.
type Case struct {
	Key     string    `json:"key"`     // stable across tags: config, pleg, sync, housekeeping, liveness, …
	Comm    string    `json:"comm"`    // e.g. "u, open := <-configCh"
	Channel string    `json:"channel"` // e.g. "configCh", "kl.livenessManager.Updates()"
	Type    string    `json:"type"`    // element type as Go source, e.g. "kubetypes.PodUpdate"
	Start   int       `json:"start"`   // line of the case keyword
	End     int       `json:"end"`     // end line of the clause's last statement
	Logs    []LogSite `json:"logs"`
	Calls   []string  `json:"calls"`

	// Who writes the channel, derived from the source at the tag
	// (writers.go). Made: where the channel is made (a make(chan …), or the
	// ticker of a ticker-driven case). Writers: every send on it in
	// non-test code. Upstream: one level of what feeds the
	// writers (the sends on the channels a fan-in forwards, or the calls of
	// the sending function). Goroutine: the go statements that run the
	// writers, when they can be told.
	Made      []Site `json:"made"`
	Writers   []Site `json:"writers"`
	Upstream  []Site `json:"upstream"`
	Goroutine []Site `json:"goroutine"`
}

// LogSite is one logging call the case can reach: in the clause itself or in
// a same-file helper the clause calls.
type LogSite struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Func      string `json:"func"`
	Message   string `json:"message"`   // the message or format string, unquoted
	Verbosity int    `json:"verbosity"` // the V(n) level, 0 when none
	Severity  string `json:"severity"`  // "info", "warning", "error" or "fatal"
	Style     string `json:"style"`     // "printf", "structured" or "contextual"
}

// Helper is a package-level function in the same file that a case calls
// (handleProbeSync), shown beside the function.
type Helper struct {
	Name     string   `json:"name"`
	DocStart int      `json:"doc_start"`
	Start    int      `json:"start"`
	End      int      `json:"end"`
	Upstream string   `json:"upstream"`
	Text     string   `json:"text"`
	Cases    []string `json:"cases"` // keys of the cases that call it
}

// PodWorkers is the top-level type declarations of pkg/kubelet/pod_workers.go.
type PodWorkers struct {
	File       string     `json:"file"`
	FileSHA256 string     `json:"file_sha256"`
	Types      []TypeDecl `json:"types"`
}

// TypeDecl is one top-level type with its doc comment verbatim.
type TypeDecl struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"` // struct, interface, func, map, slice, ident, …
	Line     int    `json:"line"`
	End      int    `json:"end"`
	DocStart int    `json:"doc_start"`
	DocEnd   int    `json:"doc_end"`
	Doc      string `json:"doc"`
	Upstream string `json:"upstream"`
}

// SetDecl is one declaration of a type named DesiredStateOfWorld or
// ActualStateOfWorld under pkg/.
type SetDecl struct {
	Name     string `json:"name"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	Kind     string `json:"kind"`
	Doc      string `json:"doc"`
	Upstream string `json:"upstream"`
}

// CaseByKey returns the case with the key, if the function has it.
func (f *Function) CaseByKey(key string) (*Case, bool) {
	for i := range f.Cases {
		if f.Cases[i].Key == key {
			return &f.Cases[i], true
		}
	}
	return nil, false
}
