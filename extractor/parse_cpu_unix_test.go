//go:build unix

package extractor_test

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the test process has used:
// on a shared machine it measures Extract's cost better than the wall clock.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
