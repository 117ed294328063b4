package server

import (
	"os"
	"testing"

	"github.com/syncloop/syncloop/server/browsertest"
)

// TestMain stops the browser tests' one Chromium when the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	browsertest.Close()
	os.Exit(code)
}
