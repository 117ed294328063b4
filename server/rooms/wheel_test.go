package rooms

import (
	"testing"
	"testing/synctest"
	"time"
)

const replicaHere = "-here"

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// here and there are readers present on this replica and on another.
func here(id string, key, wheel bool) who {
	return who{id: id + replicaHere, key: key, wheel: wheel, local: &roomReader{id: id + replicaHere}}
}

func there(id string, key, wheel bool) who { return who{id: id + "-there", key: key, wheel: wheel} }

func view(driver string, lent bool, times wheelTimes, present ...who) wheelView {
	return wheelView{driver: driver, lent: lent, present: present, replica: replicaHere, grace: 10 * time.Second, wheelTimes: &times}
}

func TestWheelAfterLeave(t *testing.T) {
	settled := wheelTimes{activated: t0.Add(-time.Minute)}
	for _, tc := range []struct {
		name      string
		v         wheelView
		left      who
		want      move
		wantAwait time.Time
	}{
		{"a reader who did not drive", view("r1-here", false, settled, here("r1", true, false)), here("r2", false, false), move{}, time.Time{}},
		{"the driver, a key holder here next", view("r1-here", false, settled, here("r2", false, false), here("r3", true, false)), here("r1", true, false),
			move{kind: handOver, from: "r1-here", to: "r3-here"}, time.Time{}},
		{"the driver, a key holder on another replica next", view("r1-here", false, settled, here("r2", false, false), there("r9", true, false)), here("r1", true, false),
			move{kind: handOver, from: "r1-here", to: "r9-there"}, time.Time{}},
		{"the driver, no key holder left", view("r1-here", false, settled, here("r2", false, false)), here("r1", true, false),
			move{kind: handOver, from: "r1-here"}, time.Time{}},
		{"the lent wheel's holder, another page of theirs here", view("r2-here", true, settled, here("r1", true, false), here("r3", false, true)), here("r2", false, true),
			move{kind: handOver, from: "r2-here", to: "r3-here"}, time.Time{}},
		{"the lent wheel's holder, alone: the wheel waits", view("r2-here", true, settled, here("r1", true, false)), here("r2", false, true),
			move{}, t0.Add(10 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.v.afterLeave(tc.left, t0)
			if got != tc.want {
				t.Errorf("afterLeave = %+v, want %+v", got, tc.want)
			}
			if !tc.v.await.Equal(tc.wantAwait) {
				t.Errorf("the wheel waits until %v, want %v", tc.v.await, tc.wantAwait)
			}
		})
	}
}

func TestWheelRescue(t *testing.T) {
	settled := wheelTimes{activated: t0.Add(-time.Minute)}
	waiting := wheelTimes{activated: t0.Add(-time.Minute), await: t0.Add(time.Second)}
	waited := wheelTimes{activated: t0.Add(-time.Minute), await: t0.Add(-time.Second)}
	justHeld := wheelTimes{activated: t0.Add(-100 * time.Millisecond)}
	missingLong := wheelTimes{activated: t0.Add(-time.Minute), missing: "r5-there", missingSince: t0.Add(-time.Second)}
	for _, tc := range []struct {
		name string
		v    wheelView
		want move
	}{
		{"the driver is present", view("r1-here", false, settled, here("r1", true, false), here("r2", true, false)), move{}},
		{"no one drives: the first key holder here", view("", false, settled, here("r1", false, false), here("r2", true, false), here("r3", true, false)),
			move{kind: handOver, to: "r2-here"}},
		{"no one drives, no key holder here: it waits", view("", false, settled, here("r1", false, false), there("r2", true, false)), move{}},
		{"the driver left this replica", view("r7-here", false, settled, here("r2", true, false)), move{kind: handOver, from: "r7-here", to: "r2-here"}},
		{"the driver on another replica not heard of yet", view("r5-there", false, settled, here("r2", true, false)), move{}},
		{"the driver on another replica, missing for a second", view("r5-there", false, missingLong, here("r2", true, false)),
			move{kind: handOver, from: "r5-there", to: "r2-here"}},
		{"the room just held here: presence has not settled", view("r5-there", false, justHeld, here("r2", true, false)), move{}},
		{"a lent wheel within its grace", view("r7-here", true, waiting, here("r2", true, false)), move{}},
		{"a lent wheel after its grace", view("r7-here", true, waited, here("r2", true, false)), move{kind: handOver, from: "r7-here", to: "r2-here"}},
		{"a lent wheel, its holder gone just now: the grace starts", view("r7-here", true, settled, here("r2", true, false)), move{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.v.rescue(t0); got != tc.want {
				t.Errorf("rescue = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWheelJoins(t *testing.T) {
	settled := wheelTimes{activated: t0.Add(-time.Minute)}
	waiting := wheelTimes{activated: t0.Add(-time.Minute), await: t0.Add(time.Second)}
	for _, tc := range []struct {
		name string
		got  func(v *wheelView) move
		v    wheelView
		want move
	}{
		{"a key, no one drives", func(v *wheelView) move { return v.keyJoin("r2-here", t0) }, view("", false, settled, here("r2", true, false)),
			move{kind: handOver, to: "r2-here"}},
		{"a key, someone drives", func(v *wheelView) move { return v.keyJoin("r2-here", t0) }, view("r1-here", false, settled, here("r1", true, false), here("r2", true, false)),
			move{}},
		{"a key, the lent wheel waits for its holder", func(v *wheelView) move { return v.keyJoin("r2-here", t0) }, view("r7-here", true, waiting, here("r2", true, false)),
			move{}},
		{"a ticket, its holder gone", func(v *wheelView) move { return v.ticketJoin("r2-here") }, view("r7-here", true, waiting, here("r2", false, true)),
			move{kind: takeLent, from: "r7-here", to: "r2-here"}},
		{"a ticket, an older page of the holder drives", func(v *wheelView) move { return v.ticketJoin("r2-here") }, view("r1-here", true, settled, here("r1", false, true), here("r2", false, true)),
			move{kind: takeLent, from: "r1-here", to: "r2-here"}},
		{"a ticket, someone else drives", func(v *wheelView) move { return v.ticketJoin("r2-here") }, view("r1-here", true, settled, here("r1", true, false), here("r2", false, true)),
			move{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.got(&tc.v); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestWheelHand(t *testing.T) {
	v := view("r1-here", false, wheelTimes{}, here("r1", true, false), here("r2", false, false), there("r3", true, false))
	for _, tc := range []struct {
		me, to  string
		want    move
		refused string
	}{
		{"r1-here", "r2-here", move{kind: handOver, from: "r1-here", to: "r2-here", lend: true}, ""},
		{"r1-here", "r3-there", move{kind: handOver, from: "r1-here", to: "r3-there"}, ""},
		{"r2-here", "r1-here", move{}, "only the driver can hand the wheel"},
		{"r1-here", "r9-here", move{}, `no reader "r9-here" in this room`},
	} {
		got, _, err := v.hand(tc.me, tc.to)
		if got != tc.want || (err == nil) != (tc.refused == "") || (err != nil && err.Error() != tc.refused) {
			t.Errorf("%s hands to %s: %+v, %v; want %+v, %q", tc.me, tc.to, got, err, tc.want, tc.refused)
		}
	}
}

// TestWheelGoneSettles: a driver this replica has not heard of counts as
// gone only once presenceSettle passed, on the clock (synctest's).
func TestWheelGoneSettles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		times := wheelTimes{activated: time.Now()}
		v := view("r5-there", false, times, here("r2", true, false))
		v.wheelTimes = &times
		if v.gone(time.Now()) {
			t.Fatal("a driver not heard of yet is gone at once")
		}
		time.Sleep(presenceSettle - time.Millisecond) // sleep: on synctest's clock, just short of presenceSettle
		if v.gone(time.Now()) {
			t.Fatal("gone before presenceSettle")
		}
		time.Sleep(time.Millisecond) // sleep: on synctest's clock, presenceSettle reached
		if !v.gone(time.Now()) {
			t.Fatal("not gone after presenceSettle")
		}
		if got := v.rescue(time.Now()); got != (move{kind: handOver, from: "r5-there", to: "r2-here"}) {
			t.Errorf("rescue after presenceSettle = %+v", got)
		}
	})
}

// TestPresenceTTL: another replica's readers count until it was silent for
// the TTL; a goodbye forgets them at once.
func TestPresenceTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPresence(time.Second)
		ann := []wireReader{{readerJSON: readerJSON{ID: "r1-b", Name: "Ann"}}}
		bob := []wireReader{{readerJSON: readerJSON{ID: "r1-a", Name: "Bob"}}}
		if !p.hear("b", ann, time.Now()) || !p.hear("a", bob, time.Now()) || p.hear("a", bob, time.Now()) {
			t.Fatal("hear: a replica is new only the first time")
		}
		if got := p.readers(time.Now()); len(got) != 2 || got[0].Name != "Bob" || got[1].Name != "Ann" {
			t.Fatalf("readers = %+v, want Bob (replica a) then Ann (replica b)", got)
		}
		time.Sleep(600 * time.Millisecond) // sleep: on synctest's clock
		p.hear("a", bob, time.Now())
		time.Sleep(500 * time.Millisecond) // sleep: on synctest's clock, b silent for 1.1 s, a for 0.5 s
		if got := p.readers(time.Now()); len(got) != 1 || got[0].Name != "Bob" {
			t.Fatalf("after b's TTL: readers = %+v, want Bob alone", got)
		}
		p.forget(time.Now())
		if _, ok := p.reps["b"]; ok {
			t.Error("forget kept a replica silent past the TTL")
		}
		p.bye("a")
		if !p.empty() {
			t.Error("a goodbye did not forget the replica")
		}
	})
}
