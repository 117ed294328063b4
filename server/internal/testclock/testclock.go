// Package testclock is a time a test sets: the Now of a part's
// configuration (rooms.Config.Now) that the test moves on, instead of
// sleeping until a TTL has passed. A rule that reads its clock from its
// configuration is then tested at any age in no time, and cannot fail for
// a machine that was slow between two steps.
package testclock

import (
	"sync"
	"time"
)

// Clock is a time that stands still until Add moves it. It is safe for use
// by several goroutines: the server's handlers read it while the test
// moves it.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a clock standing at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass the method value as a configuration's Now.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Add moves the clock on by d.
func (c *Clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
