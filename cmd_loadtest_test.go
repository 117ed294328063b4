package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/syncloop/syncloop/content"
	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/extractortest"
)

func runLoadtestCmd(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errb lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err = run(ctx, append([]string{"syncloop", "loadtest"}, args...), func(string) string { return "" }, strings.NewReader(""), &out, &errb)
	return out.String(), errb.String(), err
}

func TestLoadtestBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--server", "http://10.1.2.3:8080", "--token", "x"}, "not on loopback"},
		{[]string{"--server", "http://example.com", "--token", "x"}, "not on loopback"},
		{[]string{"--server", "http://127.0.0.1:8080"}, "needs the server's --token"},
		{[]string{"--server", "http://127.0.0.1:8080", "--token", "x", "--in-process"}, "not both"},
		{[]string{"--pid", "1,x"}, "want process ids"},
		{[]string{"--replicas", "2"}, "give --nats"},
		{[]string{"--replicas", "0"}, "--replicas"},
		{[]string{"--nats", "nats://127.0.0.1:4222", "--in-process"}, "not with --server or --in-process"},
		{[]string{"--server", "http://127.0.0.1:8080,http://10.0.0.1:80", "--token", "x"}, "not on loopback"},
		{[]string{"--rooms", "0"}, "--rooms"},
		{[]string{"--rate", "0"}, "--rate"},
		{[]string{"--memprofile", "m.out"}, "--memprofile needs --in-process"},
		{[]string{"--blockprofile", "b.out"}, "need --in-process"},
		{[]string{"--mutexprofile", "m.out"}, "need --in-process"},
	} {
		_, _, err := runLoadtestCmd(t, tc.args...)
		var ue usageError
		if err == nil || !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("loadtest %q: %v, want a usage error saying %q", tc.args, err, tc.want)
		}
	}
}

// TestLoadtestInProcess runs the command on a small load, in-process (no
// binary to build), and checks its report. The default tag's Reading is
// loaded first, on a budget of its own, into the cache test binaries share
// (extractortest.LoadCacheDir), and the command copies it from there: its
// 60 s are then the load's, not a real extraction's under -race, which on a
// loaded machine took most of them.
func TestLoadtestInProcess(t *testing.T) {
	cache := extractortest.LoadCacheDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if _, err := extractor.Load(ctx, extractor.Options{Tag: extractor.DefaultTag, CacheDir: cache, Symbols: content.Symbols()}); err != nil {
		t.Fatalf("load %s for the server: %v", extractor.DefaultTag, err)
	}
	out, errOut, err := runLoadtestCmd(t, "--in-process", "--cache-dir", cache, "--rooms", "2", "--readers", "3", "--rate", "100", "--duration", "1s", "--drain", "5s")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, out, errOut)
	}
	t.Log("\n" + out)
	for _, want := range []string{
		"2 feeds × 3 readers, 100 klog lines/s",
		"200 lines sent, 200 acknowledged",
		"600 expected, 600 delivered, 0 skipped (server markers), 0 lost, 0 duplicated",
		"kept up:    6 of 6 readers",
		"latency:    ingest-send → browser-receive p50 ",
		"server:     RSS peak ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
}
