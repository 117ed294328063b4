//go:build !unix

package extractor_test

import "time"

func processCPU() (time.Duration, bool) { return 0, false }
