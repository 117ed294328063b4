package wake

import (
	"testing"
	"testing/synctest"
)

func TestSignal(t *testing.T) {
	var s Signal
	a, b := s.C(), s.C()
	if a != b {
		t.Fatal("two waiters before a Notify got different channels")
	}
	select {
	case <-a:
		t.Fatal("closed before any Notify")
	default:
	}
	s.Notify()
	for _, c := range []<-chan struct{}{a, b} {
		select {
		case <-c:
		default:
			t.Fatal("a waiter was not woken by Notify")
		}
	}
	c := s.C()
	if c == a {
		t.Fatal("C after Notify gave the closed channel: it would never wait again")
	}
	select {
	case <-c:
		t.Fatal("a channel taken after Notify is already closed")
	default:
	}
	s.Notify()
	s.Notify() // no waiter: a no-op
}

func TestNilSignal(t *testing.T) {
	var s *Signal
	s.Notify()
	if s.C() != nil {
		t.Fatal("a nil Signal's channel must be nil (never ready in a select)")
	}
}

// A change made after the waiter took C and before it waited is not lost.
func TestSignalNoLostWakeup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Signal
		state := 0
		woke := make(chan int)
		go func() {
			c := s.C()
			seen := state
			<-c
			woke <- seen
		}()
		synctest.Wait() // the waiter holds c and blocks on it
		state = 1
		s.Notify()
		if seen := <-woke; seen != 0 {
			t.Fatalf("waiter read %d before waiting", seen)
		}
	})
}
