// Package volume derives the second reading, the kubelet volume manager's
// reconciler, from the Kubernetes source at a tag: the function that runs
// the reconcile pass (and the feature gate that chooses it), the phases it
// runs in order with the direction of each, the two sets (the desired and
// the actual state of the world) with the call sites that write and read
// them, through the interfaces the actual state embeds, and the log sites
// of the reconciler, the populator and the operation generator, matched by
// literal. Everything is read from the syntax of the tree; nothing is
// hard-coded by name but the package paths and the two interface names.
package volume

import "github.com/syncloop/syncloop/extractor"

// Schema is the version of the Reading's JSON shape; bump it when a
// field's meaning changes or a derived field is added, so cached Readings
// are derived anew. Schema 2 added the entry's and the parts' Text and
// each part's Starts; Schema 3 the Goroutines; Schema 4 the Decls.
const Schema = 4

// Reading is the volume manager's reconciler at one tag, as
// /k8s/{tag}/volume-manager.json serves it.
type Reading struct {
	Schema     int       `json:"schema"`
	Tag        string    `json:"tag"`
	ModuleHash string    `json:"module_hash,omitempty"`
	Verified   string    `json:"verified,omitempty"`
	Entry      Entry     `json:"entry"`
	Parts      []Part    `json:"parts"`
	Sets       []Set     `json:"sets"`
	LogSites   []LogSite `json:"log_sites"`
	// Goroutines are the go statements of the volume manager that start
	// its parts: the reconciler's Run (which reaches the entry), the
	// populator's Run (the desired state's main writer).
	Goroutines []Goroutine `json:"goroutines"`
	// Decls is the definitions index (decls.go): the page's peeks and the
	// notes' sym: links. It is cached with the Reading but not served in
	// volume-manager.json (WithoutDecls).
	Decls map[string]*extractor.Decl `json:"decls,omitempty"`
}

// WithoutDecls is r without its definitions index, as the JSON serves it.
func (r *Reading) WithoutDecls() *Reading {
	c := *r
	c.Decls = nil
	return &c
}

// Goroutine is one go statement that runs a method of a module type.
type Goroutine struct {
	Runs     string `json:"runs"` // "pkg/kubelet/volumemanager/reconciler.(*reconciler).Run"
	File     string `json:"file"`
	Line     int    `json:"line"`
	Text     string `json:"text"` // "go vm.reconciler.Run(stopCh)"
	Upstream string `json:"upstream"`
}

// Entry is the method that runs one reconcile pass: the function
// wait.Until calls, reached from (*reconciler).Run.
type Entry struct {
	Func     string `json:"func"` // e.g. "reconcile", "reconcileNew"
	File     string `json:"file"`
	Line     int    `json:"line"`
	End      int    `json:"end"`
	Upstream string `json:"upstream"`
	// Path is the chain of methods from Run to the loop: ["Run", "runOld",
	// "reconciliationLoopFunc"], and then Func.
	Path []string `json:"path"`
	// Gate is the feature gate Run branches on, "" when it does not; Default
	// is that gate's default at the tag, PreRelease its stage ("Alpha",
	// "Beta", "GA"), GateFile:GateLine where the default is declared.
	Gate       string `json:"gate"`
	Default    *bool  `json:"default"`
	PreRelease string `json:"prerelease,omitempty"`
	GateFile   string `json:"gate_file,omitempty"`
	GateLine   int    `json:"gate_line,omitempty"`
	// Other is the function the gate's other value would run, "" when none.
	Other string `json:"other,omitempty"`
	// Interval is the period wait.Until is given, as written.
	Interval string `json:"interval"`
	// Text is the entry's source, lines Line..End.
	Text string `json:"text"`
}

// Directions of a part.
const (
	// RemoveExtra: the phase ranges over what exists (the actual state, or
	// what was found on disk) and tests the desired state: it removes what
	// the desired state lacks.
	RemoveExtra = "remove-extra"
	// AddMissing: the phase ranges over the desired state (or tests only
	// the actual state): it adds what the actual state lacks.
	AddMissing = "add-missing"
)

// Part is one phase the entry calls, in order.
type Part struct {
	Key      string `json:"key"`  // the method's name: "unmountVolumes"
	Func     string `json:"func"` // "(*reconciler).unmountVolumes"
	File     string `json:"file"`
	Line     int    `json:"line"` // the method's func line
	End      int    `json:"end"`
	CallLine int    `json:"call_line"` // where the entry calls it
	Upstream string `json:"upstream"`
	// Direction is RemoveExtra, AddMissing or "" when the phase ranges over
	// neither set and tests neither.
	Direction string `json:"direction"`
	// Ranges is the expression the phase's loop ranges over, as written;
	// RangesSet the set it belongs to ("ActualStateOfWorld", …), if any;
	// Tests the sets its loop queries.
	Ranges    string   `json:"ranges,omitempty"`
	RangesSet string   `json:"ranges_set,omitempty"`
	Tests     []string `json:"tests,omitempty"`
	// Guard is the condition of the if the call is under, as written;
	// ReadyToUnmount says that condition is readyToUnmount().
	Guard          string `json:"guard,omitempty"`
	ReadyToUnmount bool   `json:"ready_to_unmount"`
	// Starts are the operations the phase starts (hops.go).
	Starts []Start `json:"starts,omitempty"`
	// Text is the phase's source, lines Line..End.
	Text string `json:"text"`
}

// Start is one operation a phase starts: a call of the operation
// executor, followed into its implementation and the generator functions
// that builds the operation with, and the writes of the sets those make.
type Start struct {
	Call     string `json:"call"` // "MountVolume"
	File     string `json:"file"` // where it is called
	Line     int    `json:"line"`
	In       string `json:"in"`   // the reconciler method that calls it
	Impl     string `json:"impl"` // "pkg/volume/util/operationexecutor.(*operationExecutor).MountVolume"
	ImplFile string `json:"impl_file"`
	ImplLine int    `json:"impl_line"`
	// Generators are the generator's functions the implementation calls
	// ("GenerateMountVolumeFunc"); RunBy what runs the operation they make
	// ("oe.pendingOperations.Run": on a goroutine of its own).
	Generators []string `json:"generators"`
	RunBy      string   `json:"run_by,omitempty"`
	// Writes are the sets' mutating methods those functions (and the
	// generator's methods they call) call: "ActualStateOfWorld.MarkVolumeAsMounted".
	Writes []string `json:"writes"`
}

// Set is one of the two sets, its interface and who calls it.
type Set struct {
	Name     string `json:"name"` // "DesiredStateOfWorld" or "ActualStateOfWorld"
	File     string `json:"file"`
	Line     int    `json:"line"`
	Upstream string `json:"upstream"`
	// Impl is the type its constructor returns ("actualStateOfWorld");
	// Embeds the interfaces it embeds, package-qualified.
	Impl   string   `json:"impl"`
	Embeds []string `json:"embeds,omitempty"`
	// Mutating are the interface's methods whose implementation assigns to
	// the implementation's fields (directly, through a local alias of one,
	// by delete, or by calling a method that does); Methods all of them.
	Mutating []string `json:"mutating"`
	Methods  []string `json:"methods"`
	Writers  []Caller `json:"writers"`
	Readers  []Caller `json:"readers"`
}

// Caller is one function that calls a set's methods, with the calls.
type Caller struct {
	Func  string `json:"func"` // "pkg/volume/util/operationexecutor.(*operationGenerator).GenerateMountVolumeFunc"
	File  string `json:"file"`
	Line  int    `json:"line"` // the function's func line
	Calls []Call `json:"calls"`
}

// Call is one call of a set's method.
type Call struct {
	Method string `json:"method"`
	Line   int    `json:"line"`
	// Through is the type the receiver was found to have, package-qualified
	// by its last element: "operationexecutor.ActualStateOfWorldMounterUpdater"
	// for a write through an embedded interface.
	Through  string `json:"through"`
	Upstream string `json:"upstream"`
}

// LogSite is one logging call in the reconciler, the populator or the
// operation generator.
type LogSite struct {
	File string `json:"file"`
	Line int    `json:"line"`
	Func string `json:"func"`
	// Literal is the message as written: the string literal, the format, or
	// the literal prefix given to a helper (Helper) that builds the message.
	Literal string `json:"literal"`
	Helper  string `json:"helper,omitempty"` // "GenerateMsgDetailed", …; "expr" when Literal is an expression
	// Verbosity is n in V(n); VerbosityVar the variable it is held in when
	// it is not a literal ("verbosity").
	Verbosity       int    `json:"verbosity"`
	VerbosityVar    string `json:"verbosity_var,omitempty"`
	VerbosityValues []int  `json:"verbosity_values,omitempty"` // the literals assigned to VerbosityVar
	// Via is the variable the message was held in, when it was
	// (detailedMsg := volumeToMount.GenerateMsgDetailed(…)).
	Via      string `json:"via,omitempty"`
	Severity string `json:"severity"`
	Style    string `json:"style"`
}
