package main

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/syncloop/syncloop/server/browsertest"
)

// binDir holds the binaries the end-to-end tests build (goBuild), once per
// test binary.
var binDir string

// e2eParallel is how many parallel tests run at once here unless -parallel
// says otherwise: the end-to-end tests that call t.Parallel mostly wait on
// the processes they started (journals replayed at a set rate, a network
// held down for 30 s), so more of them than there are cores overlap well.
const e2eParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		flag.Set("test.parallel", fmt.Sprint(e2eParallel))
	}
	dir, err := os.MkdirTemp("", "syncloop-e2e-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	browsertest.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}
