package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// handleHealthz answers GET /healthz: 200 "ok" when the server can do its
// job, else 503 "not ready: " and why: the default tag's Reading (what /
// shows) has not loaded, rooms cannot be written under --data-dir, or
// JetStream, where feeds are stored, does not answer.
// syncloop health prints the reason.
func (s *Server) handleHealthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if why := s.notReady(); len(why) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "not ready: "+strings.Join(why, "; ")+"\n")
			return
		}
		io.WriteString(w, "ok\n")
	})
}

// handleLivez answers GET /livez: 200 "ok" whenever the process serves
// requests, whatever /healthz says. A liveness probe asks it: a default
// tag still fetched through a slow proxy, or JetStream electing a leader,
// is no reason to restart the process.
func (s *Server) handleLivez() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "ok\n")
	})
}

// notReady says what keeps the server from serving; nothing when ready.
func (s *Server) notReady() []string {
	var why []string
	if p := s.site.DefaultProblem(); p != "" {
		why = append(why, p)
	}
	if dir := s.cfg.DataDir; dir != "" {
		if err := probeWrite(dir); err != nil {
			why = append(why, fmt.Sprintf("cannot write rooms in %s: %v", dir, err))
		}
	}
	// Feeds are stored in JetStream: storage cannot be written when it
	// does not answer.
	if err := s.broker.Healthy(context.Background()); err != nil {
		why = append(why, fmt.Sprintf("cannot store feeds: %v", err))
	}
	if p := s.broker.StoreProblem(); p != "" {
		why = append(why, "cannot store notes or feeds: "+p)
	}
	return why
}

// probeWrite writes and removes a small file in dir, creating dir if need be.
func probeWrite(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".healthz-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.WriteString("ok\n"); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
