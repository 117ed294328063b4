package volume

import (
	"github.com/syncloop/syncloop/extractor"

	"slices"
	"testing"
)

// TestDeclsResolveThroughFieldsAndEmbedding: the index holds the
// reconciler's methods with the calls in them resolved: a method of the
// receiver, a set's method through the field's interface, and a method
// the actual state has by embedding an operationexecutor interface, whose
// declaration lists the cache's implementation.
func TestDeclsResolveThroughFieldsAndEmbedding(t *testing.T) {
	r, err := Derive(fixture(), "v1.29.0")
	if err != nil {
		t.Fatal(err)
	}
	const rec = "pkg/kubelet/volumemanager/reconciler.(*reconciler)."
	d, ok := r.DeclOf(rec + "mountVolumes")
	if !ok {
		t.Fatalf("no declaration of mountVolumes among %d", len(r.Decls))
	}
	if d.Kind != "method" || d.File != "pkg/kubelet/volumemanager/reconciler/reconciler.go" || d.Start != 59 {
		t.Errorf("mountVolumes is %s %s:%d, want method reconciler.go:59", d.Kind, d.File, d.Start)
	}
	var syms []string
	for _, ref := range d.Refs {
		syms = append(syms, ref.Sym)
	}
	for _, want := range []string{
		"pkg/kubelet/volumemanager/cache.DesiredStateOfWorld.GetVolumesToMount",
		"pkg/kubelet/volumemanager/cache.ActualStateOfWorld.Has",
		"pkg/volume/util/operationexecutor.OperationExecutor.MountVolume",
	} {
		if !slices.Contains(syms, want) {
			t.Errorf("mountVolumes' refs %v lack %s", syms, want)
		}
	}
	if d, _ := r.DeclOf(rec + "reconcileNew"); d == nil || len(d.Refs) == 0 || !slices.ContainsFunc(d.Refs, func(x extractor.Ref) bool { return x.Sym == rec+"readyToUnmount" }) {
		t.Errorf("reconcileNew does not refer to readyToUnmount: %+v", d)
	}
	m, _ := r.DeclOf("pkg/volume/util/operationexecutor.ActualStateOfWorldMounterUpdater.MarkVolumeAsMounted")
	if m == nil || m.Kind != "interface method" || !slices.Equal(m.Impls, []string{"pkg/kubelet/volumemanager/cache.(*actualStateOfWorld).MarkVolumeAsMounted"}) {
		t.Errorf("the embedded interface's method: %+v, want the cache's implementation listed", m)
	}
	if r.WithoutDecls().Decls != nil || r.Decls == nil {
		t.Error("WithoutDecls must drop the index from a copy only")
	}
}
