package testwait

import (
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
