package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/syncloop/syncloop/server/browsertest"
)

// binDir holds the binaries the end-to-end tests build (goBuild), once per
// test binary.
var binDir string

func TestMain(m *testing.M) {
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
