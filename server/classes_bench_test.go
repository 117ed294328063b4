package server

import (
	"fmt"
	"net/url"
	"testing"
)

// BenchmarkClassOverview is the instructor's overview (rooms.json, what the
// live stream computes every second while it is open) of a class of 1 and
// of 30 rooms, each with a worksheet of 10 items written.
func BenchmarkClassOverview(b *testing.B) {
	for _, n := range []int{1, 30} {
		b.Run(fmt.Sprintf("rooms=%d", n), func(b *testing.B) {
			// A class of 30 rooms is made with the server's class token.
			_, ts := newRoomServer(b, "", func(c *Config) { c.ClassToken = "bench" })
			class, key := createClass(b, ts, url.Values{"budget": {"30"}, "class_token": {"bench"}})
			for range n {
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
			if o := overviewOf(b, ts, class, key); len(o.Rooms) != n || o.Rooms[0].Written != 10 {
				b.Fatalf("overview: %d rooms, %d written", len(o.Rooms), o.Rooms[0].Written)
			}
			b.ResetTimer()
			for b.Loop() {
				if code, _ := instructorGet(b, ts, "/classes/"+class+"/rooms.json", key); code != 200 {
					b.Fatal(code)
				}
			}
		})
	}
}
