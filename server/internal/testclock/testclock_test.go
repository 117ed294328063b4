package testclock

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	start := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	c := New(start)
	if got := c.Now(); !got.Equal(start) {
		t.Fatalf("Now = %v, want %v", got, start)
	}
	time.Sleep(time.Millisecond) // sleep: real time passes, and the test clock must not follow it
	if got := c.Now(); !got.Equal(start) {
		t.Errorf("the clock moved by itself: %v", got)
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() { c.Add(time.Minute); _ = c.Now() })
	}
	wg.Wait()
	if got, want := c.Now(), start.Add(10*time.Minute); !got.Equal(want) {
		t.Errorf("after ten moves of a minute: %v, want %v", got, want)
	}
}
