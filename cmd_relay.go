package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/syncloop/syncloop/server/relay"
)

const relayUsage = `Usage: syncloop relay --server URL[,URL…] --token T [--feed NAME] [--cmd "…" | --file F [--speed S] | stdin] [--state FILE]

Relay a kubelet journal to a syncloop server's feed, over a websocket.
Lines come from --cmd (run with sh -c and restarted when it exits), from
--file (a saved journal), or from stdin. Nothing is lost or duplicated when
the server restarts or the connection drops: the relay keeps what the server
has not acknowledged and sends it again. Given several servers (replicas of
one site on a NATS cluster), it goes on to the next when one is down.

Exactly-once needs journald's cursors: use journalctl -o json. With a
journalctl --cmd, the relay appends --after-cursor=<last cursor> --no-tail
when it restarts the command, and --state keeps the last acknowledged cursor
so a restarted relay resumes too. Other input (klog text) is deduplicated
across reconnects, but a restarted relay starts over from its source.

Examples:
  syncloop relay --server https://syncloop.example --feed lab --token "$T" \
      --cmd "ssh worker sudo journalctl -u kubelet -f -o json --all" --state lab.state
  syncloop relay --server http://127.0.0.1:8080 --token "$T" --file journal.json --speed 10
  journalctl -u kubelet -f | syncloop relay --server http://127.0.0.1:8080 --token "$T"

Every flag can also be set as SYNCLOOP_<FLAG> (e.g. SYNCLOOP_TOKEN).

Flags:
`

func runRelay(ctx context.Context, s stdio, args []string) error {
	fs := newFlagSet("relay", s)
	server := fs.String("server", "", "the syncloop server's base `URL` (http://host:port or https://host); several, comma-separated, are tried in turn")
	feed := fs.String("feed", "default", "the feed to send to")
	token := fs.String("token", "", "the ingest token given to syncloop serve --token")
	cmd := fs.String("cmd", "", "a command whose output is the journal, run with sh -c (e.g. \"journalctl -u kubelet -f -o json --all\")")
	file := fs.String("file", "", "a saved journal to replay instead")
	speed := fs.Float64("speed", 1, "with --file: replay at this multiple of the original pace; 0 sends as fast as possible")
	state := fs.String("state", "", "a file keeping the last acknowledged journal cursor, to resume after a restart")
	logLevel := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn or error")
	logFormat := fs.String("log-format", "auto", "log `FORMAT`: text, json, or auto (text on a terminal, JSON otherwise)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), relayUsage)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, s.getenv); err != nil {
		return err
	}
	switch {
	case *server == "":
		return usageError{errors.New("relay: --server is required (e.g. --server http://127.0.0.1:8080)")}
	case *token == "":
		return usageError{errors.New("relay: --token is required (the one syncloop serve was started with)")}
	case *cmd != "" && *file != "":
		return usageError{errors.New("relay: give --cmd or --file, not both")}
	case *speed < 0:
		return usageError{errors.New("relay: --speed must be 0 (as fast as possible) or more")}
	}
	log, err := newLogger(s.stderr, *logLevel, *logFormat)
	if err != nil {
		return err
	}

	var after string
	if *state != "" {
		st, err := relay.LoadState(*state)
		if err != nil {
			return err
		}
		if st.Cursor != "" && (st.Feed != *feed || st.Server != *server) {
			log.Warn("relay: the state file was written for another server or feed; resuming from its cursor anyway",
				"state_server", st.Server, "state_feed", st.Feed)
		}
		after = st.Cursor
	}

	var source func(ctx context.Context, emit relay.Emit) error
	switch {
	case *cmd != "":
		if relay.IsJournalctl(*cmd) && !strings.Contains(*cmd, "json") {
			log.Warn("relay: journalctl without -o json gives no cursors: a restarted relay cannot resume exactly where it stopped")
		}
		source = func(ctx context.Context, emit relay.Emit) error {
			return relay.RunCommand(ctx, *cmd, after, emit, log)
		}
	case *file != "":
		source = func(ctx context.Context, emit relay.Emit) error {
			return relay.ReplayFile(ctx, *file, *speed, after, emit)
		}
	default:
		source = func(ctx context.Context, emit relay.Emit) error {
			return relay.ReadLines(ctx, s.stdin, emit)
		}
	}
	c := &relay.Client{Server: *server, Feed: *feed, Token: *token, StateFile: *state, Logger: log}
	err = c.Run(ctx, source)
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("relay: %w", err)
	}
	fmt.Fprintf(s.stderr, "relay: %d lines acknowledged by %s (feed %s)\n", c.Acked(), *server, *feed)
	return nil
}
