package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRelayBadFlags(t *testing.T) {
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{args: []string{"--token", "t"}, want: "--server is required"},
		{args: []string{"--server", "http://127.0.0.1:1"}, want: "--token is required"},
		{args: []string{"--server", "http://127.0.0.1:1", "--token", "t", "--cmd", "x", "--file", "y"}, want: "not both"},
		{args: []string{"--server", "http://127.0.0.1:1", "--token", "t", "--speed", "-1"}, want: "--speed"},
		{args: []string{"--server", "http://127.0.0.1:1", "--token", "t", "extra"}, want: "unexpected argument"},
		{args: []string{"--server", "http://127.0.0.1:1"}, env: map[string]string{"SYNCLOOP_SPEED": "fast", "SYNCLOOP_TOKEN": "t"}, want: "SYNCLOOP_SPEED"},
	}
	for _, tt := range tests {
		var stdout, stderr bytes.Buffer
		getenv := func(k string) string { return tt.env[k] }
		err := run(context.Background(), append([]string{"syncloop", "relay"}, tt.args...), getenv, strings.NewReader(""), &stdout, &stderr)
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("relay %v: %v (exit %d); want a usage error about %q", tt.args, err, exitCode(err), tt.want)
		}
	}
}

func TestRelayBadServerURL(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"syncloop", "relay", "--server", "ftp://x", "--token", "t"},
		func(string) string { return "" }, strings.NewReader("a line\n"), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "scheme must be http or https") {
		t.Fatalf("relay to ftp://: %v", err)
	}
}

func TestRelayHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"syncloop", "relay", "--help"}, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	if exitCode(err) != 0 || !strings.Contains(stderr.String(), "--after-cursor") || !strings.Contains(stderr.String(), "-state") {
		t.Fatalf("relay --help: %v\n%s", err, stderr.String())
	}
}
