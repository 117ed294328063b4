package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/internal/testwait"
)

// lockedBuffer is a bytes.Buffer the server's logger and the test can share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// goEnv passes the Go toolchain's view of the module cache and proxy to the
// command, and nothing else of the environment.
func goEnv(extra map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := extra[k]; ok {
			return v
		}
		switch k {
		case "HOME", "GOPATH", "GOMODCACHE", "GOPROXY", "GOSUMDB", "GONOSUMDB", "GOPRIVATE", "GOFLAGS":
			return os.Getenv(k)
		}
		return ""
	}
}

// TestServe starts the real command on a loopback port, reads the default
// tag's page through it, then stops it as a signal would.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var stderr lockedBuffer
	done := make(chan error, 1)
	dataDir := t.TempDir()
	go func() {
		done <- run(ctx, []string{"syncloop", "serve", "--addr", "127.0.0.1:0", "--cache-dir", t.TempDir(), "--data-dir", dataDir},
			goEnv(nil), strings.NewReader(""), io.Discard, &stderr)
	}()
	base := "http://" + servingAt(t, &stderr, done, 10*time.Second) + "/"
	client := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/k8s/"+extractor.DefaultTag+"/" {
		t.Fatalf("GET /: %d Location %q", resp.StatusCode, loc)
	}
	// The default tag loads in the background: the page says so until
	// ready, and so do /healthz and syncloop health, which agree with it.
	health := func() error {
		return run(ctx, []string{"syncloop", "health", "--url", base + "healthz"}, goEnv(nil), strings.NewReader(""), io.Discard, io.Discard)
	}
	var status int
	var body []byte
	loaded := testwait.UntilEvery(2*time.Minute, 200*time.Millisecond, func() bool {
		healthErr := health()
		if healthErr != nil && !strings.Contains(healthErr.Error(), "503: not ready: the default tag "+extractor.DefaultTag) {
			t.Fatalf("syncloop health while loading: %v", healthErr)
		}
		resp, err := client.Get(base + "k8s/" + extractor.DefaultTag + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		status = resp.StatusCode
		if healthErr == nil && status != http.StatusOK {
			t.Fatalf("syncloop health said ok, then the default tag's page answered %d", status)
		}
		if status == http.StatusOK {
			if !strings.Contains(string(body), `id="case-pleg"`) {
				t.Fatalf("the page has no pleg case:\n%.2000s", body)
			}
			return true
		}
		if status != http.StatusAccepted {
			t.Fatalf("GET the default tag: %d\n%.2000s\n%s", status, body, stderr.String())
		}
		return false
	})
	if !loaded {
		t.Fatalf("GET the default tag: still %d after 2 minutes\n%.2000s\n%s", status, body, stderr.String())
	}
	if err := health(); err != nil {
		t.Errorf("syncloop health once the default tag is read: %v", err)
	}
	// A second server on the same data dir refuses, saying why.
	err = run(t.Context(), []string{"syncloop", "serve", "--addr", "127.0.0.1:0", "--cache-dir", t.TempDir(), "--data-dir", dataDir},
		goEnv(nil), strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "is in use by another syncloop serve") {
		t.Fatalf("a second serve on the same --data-dir: %v; want a refusal that says why", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve after cancel: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop within 10s of its context ending")
	}
	if !strings.Contains(stderr.String(), "shutting down") {
		t.Errorf("no shutdown logged:\n%s", stderr.String())
	}
}

func TestServeBadFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
		exit int
	}{
		{"invalid tag", []string{"--tag", "v1.2"}, nil, `invalid tag "v1.2"`, 2},
		{"old tag", []string{"--tag", "v1.19.0"}, nil, "v1.20.0", 2},
		{"stray argument", []string{"extra"}, nil, `unexpected argument "extra"`, 2},
		{"bad log level", []string{"--log-level", "loud"}, nil, "--log-level", 2},
		{"tag from the environment", nil, map[string]string{"SYNCLOOP_TAG": "nope"}, `invalid tag "nope"`, 2},
		{"address in use or invalid", []string{"--addr", "127.0.0.1:-1"}, nil, "serve:", 1},
		{"bad trusted proxy", []string{"--trusted-proxy", "10.0.0.0/8,nonsense"}, nil, `--trusted-proxy: trusted proxy "nonsense"`, 2},
		{"bad trusted proxy from the environment", nil, map[string]string{"SYNCLOOP_TRUSTED_PROXY": "10.0.0.0/99"}, `trusted proxy "10.0.0.0/99"`, 2},
		{"IPv6 prefix too long", []string{"--ipv6-prefix", "129"}, nil, "--ipv6-prefix: ipv6 prefix /129", 2},
		{"no rooms per client", []string{"--rooms-per-client", "0"}, nil, "--rooms-per-client", 2},
		{"bad nats sync", []string{"--nats-sync", "sometimes"}, nil, `--nats-sync "sometimes": want always or a positive duration`, 2},
		{"negative nats sync from the environment", nil, map[string]string{"SYNCLOOP_NATS_SYNC": "-1s"}, `--nats-sync "-1s"`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr lockedBuffer
			err := run(t.Context(), append([]string{"syncloop", "serve", "--cache-dir", t.TempDir(), "--data-dir", t.TempDir()}, tc.args...),
				goEnv(tc.env), strings.NewReader(""), io.Discard, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one containing %q", err, tc.want)
			}
			if got := exitCode(err); got != tc.exit {
				t.Errorf("exit %d, want %d", got, tc.exit)
			}
		})
	}
}

func TestServeHelp(t *testing.T) {
	var stderr lockedBuffer
	err := run(t.Context(), []string{"syncloop", "serve", "--help"}, goEnv(nil), strings.NewReader(""), io.Discard, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	for _, want := range []string{"-addr", "-tag", "-source-dir", "-cache-dir", "-token", "-journal-cmd", "-journal-file", "-trusted-proxy", "-rooms-per-client", "-sockets-per-client", "SYNCLOOP_"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("--help lacks %q", want)
		}
	}
}
