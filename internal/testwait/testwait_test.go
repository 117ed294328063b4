package testwait

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Fatalf was given instead of
// ending the test; For's caller then returns from Fatalf as a real one
// would not, so For must not ask cond again after it.
type recorder struct {
	testing.TB
	failed string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
	panic(r) // as runtime.Goexit ends the goroutine of a real test
}

func run(t *testing.T, timeout time.Duration, cond func() bool) (failed string) {
	r := &recorder{TB: t}
	defer func() {
		if v := recover(); v != nil && v != r {
			panic(v)
		}
		failed = r.failed
	}()
	For(r, timeout, "the thing", cond)
	return ""
}

func TestForReturnsWhenTheConditionHolds(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	if msg := run(t, 10*time.Second, func() bool { return calls.Add(1) >= 3 }); msg != "" {
		t.Fatalf("For failed: %s", msg)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("cond was asked %d times, want 3 (For stops asking once it holds)", n)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("For took %v for a condition true on its third ask", d)
	}
}

func TestForAsksOnceWhenAlreadyTrue(t *testing.T) {
	calls := 0
	start := time.Now()
	if msg := run(t, time.Second, func() bool { calls++; return true }); msg != "" {
		t.Fatalf("For failed: %s", msg)
	}
	if calls != 1 {
		t.Errorf("cond was asked %d times, want 1", calls)
	}
	if d := time.Since(start); d >= Every {
		t.Errorf("For waited %v before returning on a condition already true", d)
	}
}

func TestForFailsSayingWhat(t *testing.T) {
	start := time.Now()
	msg := run(t, 50*time.Millisecond, func() bool { return false })
	if want := "the thing: not within 50ms"; msg != want {
		t.Errorf("Fatalf got %q, want %q", msg, want)
	}
	if d := time.Since(start); d < 50*time.Millisecond {
		t.Errorf("For gave up after %v, before its 50ms", d)
	}
}

func TestUntilSaysWhetherItHeld(t *testing.T) {
	var calls atomic.Int32
	if !Until(10*time.Second, func() bool { return calls.Add(1) >= 3 }) {
		t.Fatal("Until reported false for a condition true on its third ask")
	}
	start := time.Now()
	if Until(30*time.Millisecond, func() bool { return false }) {
		t.Fatal("Until reported true for a condition never true")
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("Until gave up after %v, before its 30ms", d)
	}
}

func TestUntilEveryAsksAtItsPace(t *testing.T) {
	var calls atomic.Int32
	start := time.Now()
	UntilEvery(250*time.Millisecond, 100*time.Millisecond, func() bool { calls.Add(1); return false })
	d := time.Since(start)
	// Asked at 0, 100, 200 and 300 ms (the first ask past the deadline),
	// fewer when the machine is slow to tick: at 10 ms it would have asked
	// ~25 times.
	if n := calls.Load(); n < 2 || n > 5 {
		t.Errorf("cond asked %d times in %v at a 100 ms pace, want 2 to 5", n, d)
	}
}

func TestUntilDoneEndsWithItsContext(t *testing.T) {
	var calls atomic.Int32
	if !UntilDone(t.Context(), func() bool { return calls.Add(1) >= 3 }) {
		t.Fatal("UntilDone reported false for a condition true on its third ask")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	if UntilDone(ctx, func() bool { return false }) {
		t.Fatal("UntilDone reported true for a condition never true")
	}
	if ctx.Err() == nil {
		t.Error("UntilDone returned before its context was done")
	}
}
