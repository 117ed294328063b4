package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
)

// TestExtractVolumeManager: --reading volume-manager prints the second
// reading of a checkout as JSON (the contract's field names) and as a
// table.
func TestExtractVolumeManager(t *testing.T) {
	dir := sourceTree(t)
	stdout, _, err := runExtractCmd(t, nil, "--reading", "volume-manager", "--source-dir", dir, "--tag", extractor.DefaultTag, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var r volume.Reading
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("output is not the volume manager's reading: %v", err)
	}
	var parts []string
	for _, p := range r.Parts {
		parts = append(parts, p.Key+":"+p.Direction)
	}
	want := []string{"unmountVolumes:remove-extra", "mountOrAttachVolumes:add-missing", "unmountDetachDevices:remove-extra",
		"cleanOrphanVolumes:remove-extra", "updateReconstructedFromNodeStatus:", "updateLastSyncTime:"}
	if r.Tag != extractor.DefaultTag || r.Entry.Func != "reconcile" || !slices.Equal(parts, want) || len(r.Sets) != 2 {
		t.Errorf("reading %s entry %s parts %v, %d sets; want %s reconcile %v", r.Tag, r.Entry.Func, parts, len(r.Sets), extractor.DefaultTag, want)
	}
	for _, s := range []string{`"entry": {`, `"direction": "remove-extra"`, `"writers": [`, `"log_sites": [`, `"through": "operationexecutor.ActualStateOfWorldMounterUpdater"`} {
		if !strings.Contains(stdout, s) {
			t.Errorf("JSON lacks %s", s)
		}
	}

	table, _, err := runExtractCmd(t, nil, "--reading", "volume-manager", "--source-dir", dir, "--tag", extractor.DefaultTag)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"entry (*reconciler).reconcile pkg/kubelet/volumemanager/reconciler/reconciler.go:33", "unmountVolumes", "remove-extra", "readyToUnmount", "ActualStateOfWorld (pkg/kubelet/volumemanager/cache/actual_state_of_world.go:48)", "(*operationGenerator).GenerateMountVolumeFunc", "goroutine pkg/kubelet/volumemanager/volume_manager.go:332 go vm.reconciler.Run(ctx, ctx.Done())"} {
		if !strings.Contains(table, s) {
			t.Errorf("table lacks %q:\n%s", s, table)
		}
	}
}
