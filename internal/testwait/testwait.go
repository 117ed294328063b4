// Package testwait is the tests' one way to wait for something to happen:
// poll a condition until it holds, and fail the test, saying what did not
// happen, when it has not within the time given (or, with Until, tell the
// caller so). Tests wait for events this way instead of sleeping for a time
// that is long enough on a quiet machine and too short on a loaded one.
package testwait

import (
	"context"
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
	if !Until(timeout, cond) {
		t.Fatalf("%s: not within %v", what, timeout)
	}
}

// Until is For for a caller that decides itself what a timeout means (it
// reports more than For can say, or it gives up on purpose): it reports
// whether cond held within timeout, asking every 10 ms.
func Until(timeout time.Duration, cond func() bool) bool {
	return UntilEvery(timeout, Every, cond)
}

// UntilEvery is Until asking every every: for a condition that costs more
// to ask than a test should spend a hundred times a second (a journalctl
// run, a page's screenshot).
func UntilEvery(timeout, every time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// UntilDone is Until bounded by ctx instead of a timeout, for a test whose
// whole run has one deadline: it reports whether cond held before ctx was
// done, asking every 10 ms.
func UntilDone(ctx context.Context, cond func() bool) bool {
	tick := time.NewTicker(Every)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return cond()
		case <-tick.C:
		}
	}
	return true
}
