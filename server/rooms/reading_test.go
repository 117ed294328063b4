package rooms

import "testing"

// A room reads what it was made to read: the form's reading= is one of
// the two readings, and the driver's place on the second reading's page is
// a place a follower is sent to.
func TestRoomReading(t *testing.T) {
	for in, want := range map[string]string{"": "", "sync-loop": "", "syncloop": "", "volume-manager": ReadingVolume} {
		if got, ok := ParseReading(in); !ok || got != want {
			t.Errorf("ParseReading(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"plugin-manager", "Volume-Manager", "volume-manager "} {
		if _, ok := ParseReading(in); ok {
			t.Errorf("ParseReading(%q) took it", in)
		}
	}
	for _, p := range []position{{Page: PageVolume, Where: "part-unmountVolumes", Per: 500}, {Page: PagePodWorkers}, {Page: PageIndex}} {
		if !p.valid() {
			t.Errorf("%+v is not a place a driver may be", p)
		}
	}
	if (position{Page: "volume-manager.json"}).valid() {
		t.Errorf("a page that is none is a place a driver may be")
	}
}
