package volume

// Each rule of the derivation on a small tree of its own: the gate's
// default by the tag's minor, the entry through a gate and a returned
// closure, the mutating rule, writers through an embedded interface, the
// direction of a phase, and log literals through helpers and variables.

import (
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

const fixtureReconciler = `package reconciler

import (
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/features"
	"k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"
	"k8s.io/kubernetes/pkg/volume/util/operationexecutor"
)

type reconciler struct {
	desiredStateOfWorld cache.DesiredStateOfWorld
	actualStateOfWorld  cache.ActualStateOfWorld
	operationExecutor   operationexecutor.OperationExecutor
	orphans             []string
}

func (rc *reconciler) Run(stopCh <-chan struct{}) {
	if utilfeature.DefaultFeatureGate.Enabled(features.NewBody) {
		rc.runNew(stopCh)
		return
	}
	rc.runOld(stopCh)
}

func (rc *reconciler) runOld(stopCh <-chan struct{}) { wait.Until(rc.loopFunc(), 0, stopCh) }

func (rc *reconciler) loopFunc() func() {
	return func() { rc.reconcile() }
}

func (rc *reconciler) runNew(stopCh <-chan struct{}) { wait.Until(rc.reconcileNew, 0, stopCh) }

func (rc *reconciler) reconcile() { rc.mountVolumes() }

func (rc *reconciler) readyToUnmount() bool { return true }

func (rc *reconciler) reconcileNew() {
	ready := rc.readyToUnmount()
	if ready {
		rc.unmountVolumes()
	}
	rc.mountVolumes()
	if ready {
		rc.cleanOrphans()
	}
	rc.bookkeeping()
}

func (rc *reconciler) unmountVolumes() {
	for _, v := range rc.actualStateOfWorld.GetMounted() {
		if !rc.desiredStateOfWorld.Wants(v) {
			klog.V(5).Info(v.GenerateMsgDetailed("Starting operationExecutor.UnmountVolume", ""))
		}
	}
}

func (rc *reconciler) mountVolumes() {
	for _, v := range rc.desiredStateOfWorld.GetVolumesToMount() {
		if !rc.actualStateOfWorld.Has(v) {
			rc.operationExecutor.MountVolume(rc.actualStateOfWorld)
		}
	}
}

func (rc *reconciler) cleanOrphans() {
	for _, o := range rc.orphans {
		if rc.desiredStateOfWorld.Wants(o) {
			continue
		}
	}
}

func (rc *reconciler) bookkeeping() { rc.orphans = nil }

type Reconciler interface{ Run(stopCh <-chan struct{}) }

func NewReconciler() Reconciler { return &reconciler{} }
`

const fixtureVolumeManager = `package volumemanager

import "k8s.io/kubernetes/pkg/kubelet/volumemanager/reconciler"

type volumeManager struct{ reconciler reconciler.Reconciler }

func (vm *volumeManager) Run(stopCh <-chan struct{}) {
	go vm.reconciler.Run(stopCh)
}
`

const fixtureCache = `package cache

import "k8s.io/kubernetes/pkg/volume/util/operationexecutor"

type DesiredStateOfWorld interface {
	Add(name string)
	Wants(name string) bool
	GetVolumesToMount() []string
}

type ActualStateOfWorld interface {
	operationexecutor.ActualStateOfWorldMounterUpdater
	Has(name string) bool
	GetMounted() []string
	Forget(name string)
	Fail(name string)
	AddVolumeToReport(name string)
}

func NewDesiredStateOfWorld() DesiredStateOfWorld { return &desiredStateOfWorld{} }

type desiredStateOfWorld struct{ volumes map[string]*vol }

type vol struct{ pods map[string]bool }

// Add writes through a local read out of the receiver's map.
func (d *desiredStateOfWorld) Add(name string) {
	v, ok := d.volumes[name]
	if ok {
		v.pods[name] = true
	}
}
func (d *desiredStateOfWorld) Wants(name string) bool { _, ok := d.volumes[name]; return ok }
func (d *desiredStateOfWorld) GetVolumesToMount() []string {
	out := []string{}
	for n := range d.volumes {
		out = append(out, n)
	}
	return out
}

func NewActualStateOfWorld() ActualStateOfWorld { return &actualStateOfWorld{} }

type actualStateOfWorld struct {
	mounted map[string]bool
	failed  sets.Set[string]
}

func (a *actualStateOfWorld) MarkVolumeAsMounted(name string) error { return a.add(name) }
func (a *actualStateOfWorld) add(name string) error           { a.mounted[name] = true; return nil }
func (a *actualStateOfWorld) CheckVolume(name string) bool     { return a.mounted[name] }
func (a *actualStateOfWorld) Has(name string) bool             { return a.mounted[name] }
func (a *actualStateOfWorld) GetMounted() []string             { return nil }
func (a *actualStateOfWorld) Forget(name string)               { delete(a.mounted, name) }
func (a *actualStateOfWorld) Fail(name string)                 { a.failed.Insert(name) }
func (a *actualStateOfWorld) AddVolumeToReport(name string)    {}
`

const fixtureOperationExecutor = `package operationexecutor

import "k8s.io/klog/v2"

type ActualStateOfWorldMounterUpdater interface {
	MarkVolumeAsMounted(name string) error
	CheckVolume(name string) bool
}

type operationGenerator struct{}

func (og *operationGenerator) GenerateMountVolumeFunc(actualStateOfWorld ActualStateOfWorldMounterUpdater) func() {
	return func() {
		actualStateOfWorld.CheckVolume("v")
		detailedMsg := volumeToMount.GenerateMsgDetailed("MountVolume.SetUp succeeded", "")
		verbosity := klog.Level(1)
		if remount {
			verbosity = klog.Level(4)
		}
		klog.V(verbosity).InfoS(detailedMsg, "pod", "p")
		actualStateOfWorld.MarkVolumeAsMounted("v")
	}
}
`

const fixtureExecutor = `package operationexecutor

type OperationExecutor interface {
	MountVolume(asw ActualStateOfWorldMounterUpdater) error
}

func NewOperationExecutor(g OperationGenerator) OperationExecutor {
	return &operationExecutor{operationGenerator: g}
}

type operationExecutor struct {
	operationGenerator OperationGenerator
	pendingOperations  pending
}

func (oe *operationExecutor) MountVolume(asw ActualStateOfWorldMounterUpdater) error {
	op := oe.operationGenerator.GenerateMountVolumeFunc(asw)
	return oe.pendingOperations.Run(op)
}

type OperationGenerator interface {
	GenerateMountVolumeFunc(asw ActualStateOfWorldMounterUpdater) func()
}

func NewOperationGenerator() OperationGenerator { return &operationGenerator{} }
`

const fixtureFeatures = `package features

var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	NewBody: {
		{Version: version.MustParse("1.27"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.29"), Default: true, PreRelease: featuregate.Beta},
	},
}
`

const fixturePopulator = `package populator

import "k8s.io/kubernetes/pkg/kubelet/volumemanager/cache"

type populator struct{ dsw cache.DesiredStateOfWorld }

func (p *populator) populate() {
	asw := cache.NewActualStateOfWorld()
	p.dsw.Add("v")
	asw.Forget("v")
	var dsw cache.DesiredStateOfWorld
	dsw.Wants("v")
}
`

func fixture() fstest.MapFS {
	return fstest.MapFS{
		"pkg/kubelet/volumemanager/reconciler/reconciler.go":       {Data: []byte(fixtureReconciler)},
		"pkg/kubelet/volumemanager/cache/cache.go":                 {Data: []byte(fixtureCache)},
		"pkg/kubelet/volumemanager/volume_manager.go":              {Data: []byte(fixtureVolumeManager)},
		"pkg/kubelet/volumemanager/populator/populator.go":         {Data: []byte(fixturePopulator)},
		"pkg/volume/util/operationexecutor/operation_generator.go": {Data: []byte(fixtureOperationExecutor)},
		"pkg/volume/util/operationexecutor/operation_executor.go":  {Data: []byte(fixtureExecutor)},
		"pkg/features/kube_features.go":                            {Data: []byte(fixtureFeatures)},
	}
}

// TestEntryFollowsGateDefaultAtTheMinor: the same tree runs the old body
// at v1.28 (the 1.27 spec, off) and the new one at v1.29 (on).
func TestEntryFollowsGateDefaultAtTheMinor(t *testing.T) {
	for _, c := range []struct {
		tag, entry, other string
		def               bool
		path              []string
	}{
		{"v1.28.3", "reconcile", "runNew", false, []string{"Run", "runOld", "loopFunc"}},
		{"v1.29.0", "reconcileNew", "runOld", true, []string{"Run", "runNew"}},
	} {
		r, err := Derive(fixture(), c.tag)
		if err != nil {
			t.Fatal(err)
		}
		e := r.Entry
		if e.Func != c.entry || e.Gate != "NewBody" || e.Default == nil || *e.Default != c.def || e.Other != c.other || !slices.Equal(e.Path, c.path) {
			t.Errorf("%s: entry %+v (default %v), want %s through %v, other %s, default %v", c.tag, e, e.Default, c.entry, c.path, c.other, c.def)
		}
	}
}

// TestPartsDirectionAndGuard: direction from what each phase ranges over
// and tests; readyToUnmount told through the variable it is held in.
func TestPartsDirectionAndGuard(t *testing.T) {
	r, err := Derive(fixture(), "v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range r.Parts {
		got = append(got, p.Key+":"+orDash(p.Direction)+":"+map[bool]string{true: "ready", false: "always"}[p.ReadyToUnmount])
	}
	want := []string{"unmountVolumes:remove-extra:ready", "mountVolumes:add-missing:always", "cleanOrphans:remove-extra:ready", "bookkeeping:-:always"}
	if !slices.Equal(got, want) {
		t.Errorf("parts %v, want %v", got, want)
	}
}

// TestMutatingByAssignment: Add writes through a local alias, Forget
// deletes, Fail inserts into a set it holds, MarkVolumeAsMounted calls a
// method that assigns; Wants, Has, CheckVolume and the empty
// AddVolumeToReport only read, whatever their names.
func TestMutatingByAssignment(t *testing.T) {
	r, err := Derive(fixture(), "v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	dsw, asw := r.Sets[0], r.Sets[1]
	if !slices.Equal(dsw.Mutating, []string{"Add"}) {
		t.Errorf("desired state's mutating methods %v, want [Add]", dsw.Mutating)
	}
	if !slices.Equal(asw.Mutating, []string{"Fail", "Forget", "MarkVolumeAsMounted"}) {
		t.Errorf("actual state's mutating methods %v, want [Fail Forget MarkVolumeAsMounted]", asw.Mutating)
	}
	if !slices.Equal(asw.Embeds, []string{"operationexecutor.ActualStateOfWorldMounterUpdater"}) {
		t.Errorf("embeds %v", asw.Embeds)
	}
}

// TestWritersThroughEmbeddedInterface: the operation generator's closure
// writes the actual state through the interface it embeds, a parameter;
// the populator through a field and a variable made by the constructor.
func TestWritersThroughEmbeddedInterface(t *testing.T) {
	r, err := Derive(fixture(), "v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	asw := r.Sets[1]
	got := callers(asw.Writers)
	want := []string{
		"pkg/kubelet/volumemanager/populator.(*populator).populate Forget@10 cache.ActualStateOfWorld",
		"pkg/volume/util/operationexecutor.(*operationGenerator).GenerateMountVolumeFunc MarkVolumeAsMounted@21 operationexecutor.ActualStateOfWorldMounterUpdater",
	}
	if !slices.Equal(got, want) {
		t.Errorf("actual state's writers\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := callers(asw.Readers); !slices.Contains(got, "pkg/volume/util/operationexecutor.(*operationGenerator).GenerateMountVolumeFunc CheckVolume@14 operationexecutor.ActualStateOfWorldMounterUpdater") {
		t.Errorf("CheckVolume through the embedded interface is not a reader: %v", got)
	}
	dsw := r.Sets[0]
	if got := callers(dsw.Writers); !slices.Contains(got, "pkg/kubelet/volumemanager/populator.(*populator).populate Add@9 cache.DesiredStateOfWorld") {
		t.Errorf("desired state's writers %v lack the populator's Add", got)
	}
	if got := callers(dsw.Readers); !slices.Contains(got, "pkg/kubelet/volumemanager/populator.(*populator).populate Wants@12 cache.DesiredStateOfWorld") {
		t.Errorf("desired state's readers %v lack the var-typed Wants", got)
	}
}

func callers(cs []Caller) []string {
	var out []string
	for _, c := range cs {
		for _, call := range c.Calls {
			out = append(out, c.Func+" "+call.Method+"@"+itoa(call.Line)+" "+call.Through)
		}
	}
	return out
}

// TestLogLiteralThroughHelperAndVariable: the message built by
// GenerateMsgDetailed and held in detailedMsg is matched by its literal;
// the verbosity held in a variable is told by its values.
func TestLogLiteralThroughHelperAndVariable(t *testing.T) {
	r, err := Derive(fixture(), "v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	var setup, unmount *LogSite
	for i, ls := range r.LogSites {
		switch ls.Literal {
		case "MountVolume.SetUp succeeded":
			setup = &r.LogSites[i]
		case "Starting operationExecutor.UnmountVolume":
			unmount = &r.LogSites[i]
		}
	}
	if setup == nil || setup.Helper != "GenerateMsgDetailed" || setup.Via != "detailedMsg" || setup.VerbosityVar != "verbosity" || !slices.Equal(setup.VerbosityValues, []int{1, 4}) {
		t.Errorf("SetUp succeeded site %+v in %+v", setup, r.LogSites)
	}
	if unmount == nil || unmount.Verbosity != 5 || unmount.Helper != "GenerateMsgDetailed" || unmount.Func != "(*reconciler).unmountVolumes" {
		t.Errorf("UnmountVolume site %+v", unmount)
	}
}

// TestStartsFollowTheExecutor: the phase's call of the operation executor
// is followed into its implementation (the type its constructor returns)
// and into the generator function, whose writes it lists, and what runs it.
func TestStartsFollowTheExecutor(t *testing.T) {
	r, err := Derive(fixture(), "v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	var mount *Part
	for i := range r.Parts {
		if r.Parts[i].Key == "mountVolumes" {
			mount = &r.Parts[i]
		}
	}
	if mount == nil || len(mount.Starts) != 1 {
		t.Fatalf("mountVolumes starts %+v", mount)
	}
	s := mount.Starts[0]
	if s.Call != "MountVolume" || s.Impl != "pkg/volume/util/operationexecutor.(*operationExecutor).MountVolume" ||
		!slices.Equal(s.Generators, []string{"GenerateMountVolumeFunc"}) || s.RunBy != "oe.pendingOperations.Run" ||
		!slices.Equal(s.Writes, []string{"ActualStateOfWorld.MarkVolumeAsMounted"}) || s.In != "mountVolumes" {
		t.Errorf("start %+v", s)
	}
}

// TestGoroutinesResolveTheInterface: the volume manager's go statement on
// a field of the reconciler's interface type is told to run
// (*reconciler).Run, the implementation NewReconciler returns.
func TestGoroutinesResolveTheInterface(t *testing.T) {
	r, err := Derive(fixture(), "v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Goroutines) != 1 || r.Goroutines[0].Runs != "pkg/kubelet/volumemanager/reconciler.(*reconciler).Run" ||
		r.Goroutines[0].Text != "go vm.reconciler.Run(stopCh)" || r.Goroutines[0].Line != 8 {
		t.Errorf("goroutines %+v", r.Goroutines)
	}
}
