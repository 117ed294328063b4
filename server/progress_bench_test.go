package server

import (
	"net/url"
	"testing"
)

// BenchmarkClassProgress is what the grid asks for on each change of the
// overview (progress.json) beside the overview itself (rooms.json), for a
// class of 30 rooms, each with a worksheet of 10 items written (no
// journal: the lab checks' reads are TestClassLabChecksVerbosity's).
func BenchmarkClassProgress(b *testing.B) {
	_, ts := newRoomServer(b, "", nil)
	class, key := createClass(b, ts, url.Values{"budget": {"30"}})
	for range 30 {
		id, _, code := startClassRoom(b, ts, class)
		if code != 303 {
			b.Fatalf("start: %d", code)
		}
		putNote(b, ts, id, "sentence", "What is wanted is made so, again and again.")
		putNote(b, ts, id, "set.desired", "DesiredStateOfWorld, pkg/kubelet/volumemanager/cache/desired_state_of_world.go:45")
		putNote(b, ts, id, "set.actual", "ActualStateOfWorld, pkg/kubelet/volumemanager/cache/actual_state_of_world.go:50")
		for _, k := range []string{"config", "pleg", "sync", "liveness", "readiness", "mystery", "housekeeping"} {
			putNote(b, ts, id, "writer."+k, "pkg/kubelet/config.(*PodConfig).Updates")
		}
	}
	for _, p := range []string{"rooms.json", "progress.json", "grades.csv"} {
		b.Run(p, func(b *testing.B) {
			for b.Loop() {
				if code, body := instructorGet(b, ts, "/classes/"+class+"/"+p, key); code != 200 {
					b.Fatalf("%s: %d %s", p, code, body)
				}
			}
		})
	}
}
