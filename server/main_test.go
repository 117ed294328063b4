package server

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/syncloop/syncloop/server/browsertest"
)

// serverParallel is how many parallel tests run at once here unless
// -parallel says otherwise. The browser tests that call t.Parallel spend
// most of their time waiting (a demo feed's lines to arrive, a pane to hold
// still for a second or two, a page to load in the shared Chromium), so
// more of them than there are cores overlap well; the tests that assert
// what a page sees within a time do not call t.Parallel and run alone.
const serverParallel = 4

// TestMain raises -parallel to serverParallel unless the flag is set, and
// stops the browser tests' one Chromium when the tests are done.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", fmt.Sprint(serverParallel))
	}
	code := m.Run()
	browsertest.Close()
	os.Exit(code)
}
