// Package demo simulates a kubelet: it emits log lines in the real klog text
// format at the real file:line of a Reading's log sites, so the live pane
// works without a cluster.
package demo

import (
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// Feed is a simulated kubelet journal. (stub)
type Feed struct{ r *extractor.Reading }

// New returns a demo feed for r.
func New(r *extractor.Reading, seed int64) *Feed { return &Feed{r: r} }

// Next returns the next raw line, stamped at now, and how long to wait
// before asking for the one after.
func (f *Feed) Next(now time.Time) ([]byte, time.Duration) { return nil, time.Second }
