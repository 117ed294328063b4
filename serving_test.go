package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
)

// servingRE is serve's "serving" log line (stderr is no terminal, so the
// log is JSON lines): the address it listens at.
var servingRE = regexp.MustCompile(`"url":"http://(127\.0\.0\.1:\d+)/"`)

// servingAt waits for the serve run writing stderr to say it is serving,
// and returns its address (127.0.0.1:PORT). It fails the test when the run
// returns first (what it returned is put back on done, for the test's own
// cleanup) or timeout passes.
func servingAt(t *testing.T, stderr *lockedBuffer, done chan error, timeout time.Duration) string {
	t.Helper()
	var addr string
	var early error
	returned := false
	ok := testwait.Until(timeout, func() bool {
		if m := servingRE.FindStringSubmatch(stderr.String()); m != nil {
			addr = m[1]
			return true
		}
		select {
		case early = <-done:
			done <- early
			returned = true
			return true
		default:
			return false
		}
	})
	switch {
	case returned:
		t.Fatalf("serve returned before serving: %v\n%s", early, stderr.String())
	case !ok:
		t.Fatalf("no 'serving' line in %v:\n%s", timeout, stderr.String())
	}
	return addr
}
