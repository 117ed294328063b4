// Package testwait is the tests' one way to wait for something to happen:
// poll a condition until it holds, and fail the test, saying what did not
// happen, when it has not within the time given. Tests wait for events this
// way instead of sleeping for a time that is long enough on a quiet machine
// and too short on a loaded one.
package testwait

import (
	"testing"
	"time"
)

// Every is how often For asks its condition again.
const Every = 10 * time.Millisecond

// For returns as soon as cond reports true, asking every 10 ms; when timeout
// passes first it fails the test with t.Fatalf("%s: not within %v", what,
// timeout). The last ask is at or after the deadline, so a condition that
// holds by then passes. Call it from the test's own goroutine (it may call
// t.Fatalf).
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		<-tick.C
	}
}
