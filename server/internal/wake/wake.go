// Package wake tells waiters that something changed, without saying what:
// a waiter takes C before it reads the state it shows, then waits on it
// (with its own timer beside it), so a change between the read and the
// wait is never missed. Notify costs a lock and nothing more while no one
// waits, so writers on hot paths (every stored journal line) can call it.
package wake

import "sync"

// Signal is a broadcast without a payload. Its zero value is ready; a nil
// *Signal never fires and ignores Notify, so a part built without one
// works unchanged.
type Signal struct {
	mu sync.Mutex
	ch chan struct{} // nil while no one waits
}

// C is closed at the next Notify after this call.
func (s *Signal) C() <-chan struct{} {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify wakes everyone waiting on a channel C gave out.
func (s *Signal) Notify() {
	if s == nil {
		return
	}
	s.mu.Lock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
	s.mu.Unlock()
}
