package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/syncloop/syncloop/server/redact"
)

// newLogger is the log of a long-running subcommand: text for a person at
// a terminal, JSON lines for whatever collects the logs otherwise (journald,
// a container runtime), unless format says which.
func newLogger(w io.Writer, level, format string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, usageError{fmt.Errorf("--log-level: %w", err)}
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: redactAttr}
	switch format {
	case "auto":
		if isTerminal(w) {
			return slog.New(slog.NewTextHandler(w, opts)), nil
		}
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageError{fmt.Errorf("--log-format %q: want auto, text or json", format)}
}

// redactAttr masks the secrets in every message and string or error
// attribute (room ids, keys, URL passwords; package redact), whichever
// part of the server wrote it: a log is read by more people than a room's
// link is given to.
func redactAttr(_ []string, a slog.Attr) slog.Attr {
	switch a.Value.Kind() {
	case slog.KindString:
		if s := a.Value.String(); redact.String(s) != s {
			a.Value = slog.StringValue(redact.String(s))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok {
			if s := err.Error(); redact.String(s) != s {
				a.Value = slog.StringValue(redact.String(s))
			}
		}
	}
	return a
}
