package classify

// volume.go labels the lines of the second reading, the volume manager's
// reconciler: a line of the reconciler, the populator or the operation
// generator gets the part (phase) it belongs to and the step of a volume's
// life it says ("desired", "mounting", "torn down", …), matched by the
// literal of a log site the volume extraction derived at the tag, never by
// file:line (which moves at almost every tag). A message a helper built
// (GenerateMsgDetailed(prefix, suffix): "<prefix> for volume %q
// (UniqueName: %q) pod %q (UID: %q) <suffix>") is matched by its literal
// prefix; a printf format by its text before the first verb; a structured
// message as is. The first reading's classification does not run this: a
// caller labels a Line it already classified, only when it wants volumes.

import (
	"encoding/json"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/syncloop/syncloop/extractor/volume"
)

// Parts a volume line may belong to besides the reconcile pass's phases.
const (
	// PartPopulator: the desired state's main writer, on its own goroutine.
	PartPopulator = "populator"
	// PartReconciler: a reconciler method no phase calls (Run, reconstruction).
	PartReconciler = "reconciler"
)

// Steps of a volume's chain, in the order a mount and its removal go.
const (
	StepDesired    = "desired"   // the populator added it to the desired state
	StepVerifying  = "verifying" // the reconciler started VerifyControllerAttachedVolume
	StepVerified   = "verified"  // the controller attached it
	StepAttaching  = "attaching" // the reconciler started AttachVolume
	StepAttached   = "attached"  // AttachVolume succeeded
	StepMounting   = "mounting"  // the reconciler started MountVolume
	StepDevice     = "device mounted"
	StepMounted    = "mounted"    // SetUp (or MapPodDevice) succeeded, on the operation's goroutine
	StepRemoving   = "removing"   // the populator removed it from the desired state
	StepUnmounting = "unmounting" // the reconciler started UnmountVolume
	StepTornDown   = "torn down"  // TearDown (or UnmapVolume) succeeded
	StepDevGone    = "device unmounted"
	StepDetached   = "detached" // the reconciler marked it detached (or DetachVolume succeeded)
	StepFailed     = "failed"   // an operation the reconciler started failed
)

// steps names the step each literal says. The literals are the log sites'
// own (stable from v1.24 to v1.38; v1.20's populator differs and is
// listed too); a literal the Reading at the tag does not have is never
// matched, since rules are built from the Reading's sites only.
var steps = map[string]string{
	"Added volume to desired state":                             StepDesired,
	"Added volume %q (volSpec=%q) for pod %q to desired state.": StepDesired,
	"Starting operationExecutor.VerifyControllerAttachedVolume": StepVerifying,
	"operationExecutor.VerifyControllerAttachedVolume started":  StepVerifying,
	"Controller attach succeeded":                               StepVerified,
	"Starting operationExecutor.AttachVolume":                   StepAttaching,
	"operationExecutor.AttachVolume started":                    StepAttaching,
	"AttachVolume.Attach succeeded":                             StepAttached,
	"Starting operationExecutor.MountVolume":                    StepMounting,
	"operationExecutor.MountVolume started":                     StepMounting,
	"MountVolume.MountDevice succeeded":                         StepDevice,
	"MountVolume.SetUp succeeded":                               StepMounted,
	"MapVolume.MapPodDevice succeeded":                          StepMounted,
	"Removing volume from desired state":                        StepRemoving,
	"Starting operationExecutor.UnmountVolume":                  StepUnmounting,
	"operationExecutor.UnmountVolume started":                   StepUnmounting,
	"UnmountVolume.TearDown succeeded for volume %q":            StepTornDown,
	"UnmapVolume succeeded for volume %q":                       StepTornDown,
	"UnmountDevice succeeded":                                   StepDevGone,
	"UnmapDevice succeeded":                                     StepDevGone,
	"Volume detached":                                           StepDetached,
	"DetachVolume.Detach succeeded":                             StepDetached,
	"operationExecutor.MountVolume failed":                      StepFailed,
	"operationExecutor.UnmountVolume failed":                    StepFailed,
	"operationExecutor.VerifyControllerAttachedVolume failed":   StepFailed,
	"operationExecutor.AttachVolume failed":                     StepFailed,
	"operationExecutor.UnmountDevice failed":                    StepFailed,
	"operationExecutor.DetachVolume failed":                     StepFailed,
}

// stepOf is the step a site's literal says, "" when none. A format's
// text after its first %q is ignored (it varies by tag); so is a failed
// literal's "(controllerAttachDetachEnabled %v)".
func stepOf(lit string) string {
	if s, ok := steps[lit]; ok {
		return s
	}
	if i := strings.Index(lit, "%q"); i >= 0 {
		if s, ok := steps[lit[:i+2]]; ok {
			return s
		}
	}
	if i := strings.Index(lit, " ("); i >= 0 {
		if s, ok := steps[lit[:i]]; ok {
			return s
		}
	}
	return ""
}

// VolumeLabel is what a volume line says.
type VolumeLabel struct {
	Part string `json:"part"` // a phase's key, PartPopulator or PartReconciler
	// Parts are every phase that starts the operation whose line it is,
	// when several do (cleanOrphanVolumes also starts UnmountVolume).
	Parts   []string `json:"-"`
	Step    string   `json:"step,omitempty"`
	Literal string   `json:"literal"`
	Func    string   `json:"func"` // the log site's function
	// Verbosity is the site's V level, or the values its variable takes
	// (MountVolume.SetUp succeeded: 1 or 4).
	Verbosity []int `json:"verbosity"`
	// What the line names: the volume's UniqueName, its spec name, the pod
	// (namespace/name, name, or its UID as the unmount's lines print it)
	// and the pod's UID.
	Volume string `json:"volume,omitempty"`
	Spec   string `json:"spec,omitempty"`
	Pod    string `json:"pod,omitempty"`
	UID    string `json:"uid,omitempty"`
}

// volRule is one log site's literal, as matched.
type volRule struct {
	match  string // the message's prefix (the whole message when exact)
	exact  bool   // a structured message without a helper: equal, not prefix
	kind   byte   // 'd' built by a helper (GenerateMsg…), 'f' printf, 's' structured
	label  VolumeLabel
	parts  []string
	format string // the printf format, for its values
}

// Volumes labels lines against one volume Reading. It is immutable and
// safe for concurrent use.
type Volumes struct {
	r     *volume.Reading
	first [256]bool        // the first bytes of the matches: most lines leave here
	rules map[string][]int // by the match's first keyLen bytes
	all   []volRule
}

// keyLen is how much of a message the rules are looked up by; every
// match is at least this long.
const keyLen = 8

// NewVolumes returns the labeller for r (nil: it labels nothing).
func NewVolumes(r *volume.Reading) *Volumes {
	v := &Volumes{r: r, rules: map[string][]int{}}
	if r == nil {
		return v
	}
	for _, ls := range r.LogSites {
		parts := partsOf(r, ls)
		if parts == nil || ls.Helper == "expr" {
			continue
		}
		rl := volRule{label: VolumeLabel{Part: parts[0], Parts: parts, Step: stepOf(ls.Literal),
			Literal: ls.Literal, Func: ls.Func, Verbosity: verbosities(ls)}, parts: parts}
		switch {
		case ls.Helper != "" && ls.Helper != "fmt.Sprintf" && ls.Helper != "fmt.Errorf":
			rl.kind, rl.match = 'd', printfPrefix(ls.Literal)
		case ls.Style == "printf" || strings.Contains(ls.Literal, "%"):
			rl.kind, rl.match, rl.format = 'f', printfPrefix(ls.Literal), ls.Literal
		default:
			rl.kind, rl.match, rl.exact = 's', ls.Literal, true
		}
		if len(rl.match) < keyLen || v.has(rl) { // "Volume " (a %v after it) would match half the rest
			continue
		}
		v.all = append(v.all, rl)
		k := rl.match[:keyLen]
		v.rules[k] = append(v.rules[k], len(v.all)-1)
		v.first[k[0]] = true
	}
	return v
}

// has says whether an equal rule is already there (a literal logged at
// several verbosities by one function is one rule).
func (v *Volumes) has(rl volRule) bool {
	for _, o := range v.all {
		if o.match == rl.match && o.exact == rl.exact && o.label.Part == rl.label.Part {
			return true
		}
	}
	return false
}

// Reading is the Reading v was built from (nil when none).
func (v *Volumes) Reading() *volume.Reading { return v.r }

func verbosities(ls volume.LogSite) []int {
	if ls.VerbosityVar != "" && len(ls.VerbosityValues) > 0 {
		return slices.Clone(ls.VerbosityValues)
	}
	return []int{ls.Verbosity}
}

// partsOf is the parts a log site belongs to: the populator's; the phase
// a reconciler method is (or that calls it, or starts from it); the phases
// that start the operation an operation generator's function builds. nil
// for a site of neither (volume_manager.go, the operation generator's
// helpers no phase's operation names).
func partsOf(r *volume.Reading, ls volume.LogSite) []string {
	method := ls.Func
	if i := strings.LastIndexByte(method, '.'); i >= 0 {
		method = method[i+1:]
	}
	switch dir := path.Dir(ls.File); {
	case path.Base(dir) == "populator":
		return []string{PartPopulator}
	case path.Base(dir) == "reconciler":
		for _, p := range r.Parts {
			if p.Key == method {
				return []string{p.Key}
			}
		}
		for _, p := range r.Parts {
			for _, s := range p.Starts {
				if s.In == method {
					return []string{p.Key}
				}
			}
		}
		for _, p := range r.Parts {
			if strings.Contains(p.Text, "."+method+"(") {
				return []string{p.Key}
			}
		}
		return []string{PartReconciler}
	case path.Base(ls.File) == "operation_generator.go":
		var out []string
		for _, p := range r.Parts {
			for _, s := range p.Starts {
				if slices.Contains(s.Generators, method) && !slices.Contains(out, p.Key) {
					out = append(out, p.Key)
				}
			}
		}
		return out
	}
	return nil
}

// Label labels a classified line; ok is false when it is no line of the
// volume reading's parts.
func (v *Volumes) Label(l *Line) (VolumeLabel, bool) {
	msg := l.Message
	if len(msg) < keyLen || !v.first[msg[0]] {
		return VolumeLabel{}, false
	}
	var rl *volRule // the longest literal the message starts with
	for _, i := range v.rules[msg[:keyLen]] {
		r := &v.all[i]
		if r.exact && msg != r.match || !r.exact && !strings.HasPrefix(msg, r.match) {
			continue
		}
		if r.kind == 'd' && !strings.HasPrefix(msg[len(r.match):], " for volume ") {
			continue
		}
		if l.Verbosity >= 0 && l.Severity == "info" && !slices.Contains(r.label.Verbosity, l.Verbosity) {
			continue // kubelet JSON says its V: another site's line
		}
		if rl == nil || len(r.match) > len(rl.match) {
			rl = r
		}
	}
	if rl == nil {
		return VolumeLabel{}, false
	}
	out := rl.label
	out.Parts, out.Verbosity = slices.Clone(rl.parts), slices.Clone(rl.label.Verbosity)
	switch rl.kind {
	case 'd':
		detailed(msg[len(rl.match):], &out)
	case 'f':
		printed(rl.format, msg, &out)
	case 's':
		v.structuredFields(l, &out)
	}
	if out.Part == PartPopulator && out.Spec == "" {
		out.Spec, out.Volume = out.Volume, "" // the populator names volumes by spec
	}
	if out.Pod == "" && len(l.Pods) > 0 {
		out.Pod = l.Pods[0]
	}
	return out, true
}

// detailed reads what GenerateMsgDetailed put after the prefix:
// ` for volume "spec" (UniqueName: "u") pod "name" (UID: "uid") …` or
// ` … (UniqueName: "u") on node "n" …`, values as %q printed them.
func detailed(s string, out *VolumeLabel) {
	s = strings.TrimPrefix(s, " for volume ")
	spec, s, ok := quoted(s)
	if !ok {
		return
	}
	out.Spec = spec
	if rest, ok := strings.CutPrefix(s, " (UniqueName: "); ok {
		if out.Volume, s, ok = quoted(rest); !ok {
			return
		}
		s = strings.TrimPrefix(s, ")")
	}
	if rest, ok := strings.CutPrefix(s, " pod "); ok {
		if out.Pod, s, ok = quoted(rest); !ok {
			return
		}
		if rest, ok := strings.CutPrefix(s, " (UID: "); ok {
			out.UID, _, _ = quoted(rest)
		}
	}
}

// quoted reads the Go-quoted string s starts with, and returns the rest.
func quoted(s string) (string, string, bool) {
	q, err := strconv.QuotedPrefix(s)
	if err != nil {
		return "", s, false
	}
	u, err := strconv.Unquote(q)
	if err != nil {
		return "", s, false
	}
	u, _ = cleanText(u, 1024)
	return u, s[len(q):], true
}

// printed reads the values a printf format's %q verbs printed in msg, and
// names each by the word before it: "volume" (the UniqueName, as
// TearDown's "for volume %q" prints VolumeName), "OuterVolumeSpecName:",
// "pod", "UID:". It stops at the first verb other than %q.
func printed(format, msg string, out *VolumeLabel) {
	f, m := format, msg
	for {
		i := strings.IndexByte(f, '%')
		if i < 0 || i+1 >= len(f) || f[i+1] != 'q' || !strings.HasPrefix(m, f[:i]) {
			return
		}
		word := f[:i]
		if j := strings.LastIndexByte(strings.TrimRight(word, " "), ' '); j >= 0 {
			word = word[j+1:]
		}
		word = strings.Trim(word, " (=")
		val, rest, ok := quoted(m[i:])
		if !ok {
			return
		}
		switch word {
		case "volume":
			out.Volume = val
		case "OuterVolumeSpecName:", "(OuterVolumeSpecName:":
			out.Spec = val
		case "pod":
			out.Pod = val
		case "UID:", "(UID:":
			out.UID = val
		}
		f, m = f[i+2:], rest
	}
}

// structuredFields reads a structured line's key=value pairs the
// populator gives: volumeName (the spec's name), podUID.
func (v *Volumes) structuredFields(l *Line, out *VolumeLabel) {
	text := l.Display()
	if h, body, ok := parseKlog(text); ok && h.caller != "" {
		if _, kvs, ok := structured(body); ok {
			out.Spec = clip(kvString(kvs, "volumeName"))
			out.UID = clip(kvString(kvs, "podUID"))
		}
		return
	}
	if strings.HasPrefix(text, "{") { // kubelet JSON: only the populator's few lines come here
		var kv struct {
			VolumeName string `json:"volumeName"`
			PodUID     string `json:"podUID"`
		}
		if json.Unmarshal([]byte(text), &kv) == nil {
			out.Spec, out.UID = clip(kv.VolumeName), clip(kv.PodUID)
		}
	}
}

func clip(s string) string {
	s, _ = cleanText(s, 1024)
	return s
}
