package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestNetexec: the stand-in answers the real netexec's paths, and stops when
// its context ends (SIGTERM in a pod).
func TestNetexec(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	for path, want := range map[string]string{"/echo?msg=hi%3Cb%3E": "hi<b>", "/healthz": "ok", "/": "NOW: "} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(string(b), want) {
			t.Errorf("GET %s: %d %q, want 200 and %q", path, resp.StatusCode, b, want)
		}
	}
	if ct := func() string {
		resp, err := http.Get(base + "/echo?msg=x")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("Content-Type")
	}(); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/echo answers %q: an echoed message must never be read as HTML", ct)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("serve after its context ended: %v", err)
	}
}

func TestOnlyNetexec(t *testing.T) {
	for _, args := range [][]string{nil, {"pause"}, {"netexec", "--nope"}} {
		if err := run(args, io.Discard); err == nil {
			t.Errorf("run(%q) succeeded", args)
		}
	}
}
