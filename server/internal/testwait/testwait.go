// Package testwait forwards to the module's one wait helper,
// github.com/syncloop/syncloop/internal/testwait, which moved to the module's
// root so that the root package's tests (e2e_*) can use it too. It stays for
// the tests that still import it here; new tests import the other.
package testwait

import (
	"testing"
	"time"

	"github.com/syncloop/syncloop/internal/testwait"
)

// Every is how often For asks its condition again.
const Every = testwait.Every

// For is testwait.For: it returns as soon as cond reports true, and fails the
// test saying what did not happen when timeout passes first.
func For(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, timeout, what, cond)
}
