package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// runHealth checks a running server's /healthz: the container's HEALTHCHECK,
// since the runtime image has no shell or curl.
func runHealth(ctx context.Context, s stdio, args []string) error {
	fs := newFlagSet("health", s)
	url := fs.String("url", "http://127.0.0.1:8080/healthz", "the server's health endpoint")
	timeout := fs.Duration("timeout", 3*time.Second, "give up after this long")
	if err := parseFlags(fs, args, s.getenv); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return usageError{fmt.Errorf("--url: %v", err)}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("health: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
	if resp.StatusCode != http.StatusOK {
		// The server says why it is not ready ("not ready: …"): pass it on.
		why := strings.TrimSpace(string(body))
		if why == "" {
			why = resp.Status
		}
		return fmt.Errorf("health: %s answered %d: %s", *url, resp.StatusCode, why)
	}
	fmt.Fprintln(s.stdout, "ok")
	return nil
}
