// Command syncloop serves a reading of the Kubernetes kubelet's main loop,
// (*Kubelet).syncLoopIteration, beside a live kubelet journal.
//
// main only wires the process to run, so tests start the real program
// in-process with their own arguments, environment and streams.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args, os.Getenv, os.Stdin, os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "syncloop: %v\n", err)
		}
		os.Exit(exitCode(err))
	}
}

// stdio is what a subcommand may touch of its process.
type stdio struct {
	getenv func(string) string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

// command is one subcommand of syncloop.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, io stdio, args []string) error
}

func commands() []command {
	return []command{
		{"serve", "serve the reading site (and a live feed)", runServe},
		{"extract", "extract the Reading of a Kubernetes tag and print it", runExtract},
		{"diff", "say what changed in the loop between two tags, case by case (or one case's history)", runDiff},
		{"classify", "classify kubelet log lines read on stdin by their case", runClassify},
		{"relay", "relay a kubelet journal to a syncloop server", runRelay},
		{"health", "check a running server's /healthz (the container's HEALTHCHECK)", runHealth},
		{"loadtest", "load a server on loopback with feeds, readers and relays; print latency, loss, RSS, CPU", runLoadtest},
	}
}

// run is the whole program: args[0] is the program name, args[1] the subcommand.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) error {
	s := stdio{getenv: getenv, stdin: stdin, stdout: stdout, stderr: stderr}
	if len(args) < 2 || args[1] == "-h" || args[1] == "--help" || args[1] == "help" {
		usage(stdout)
		if len(args) < 2 {
			return errors.New("no subcommand given")
		}
		return nil
	}
	for _, c := range commands() {
		if c.name == args[1] {
			return c.run(ctx, s, args[2:])
		}
	}
	usage(stderr)
	return fmt.Errorf("unknown subcommand %q", args[1])
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "syncloop: read the kubelet's main loop beside its live journal\n\nUsage:\n  syncloop <command> [flags]\n\nCommands:\n")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nRun 'syncloop <command> --help' for a command's flags.\n")
}

// exitCode maps an error to the process's exit status: 2 for usage errors.
func exitCode(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// usageError marks a mistake in how the command was called.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// newFlagSet returns a flag set that reports errors to s.stderr instead of
// exiting. Parse it with parseFlags, which first takes each flag's default
// from SYNCLOOP_<NAME> in the environment (so the flags must be defined by
// then).
func newFlagSet(name string, s stdio) *flag.FlagSet {
	fs := flag.NewFlagSet("syncloop "+name, flag.ContinueOnError)
	fs.SetOutput(s.stderr)
	return fs
}

// setUsage makes fl's usage the command's help, its flags, and the exit
// statuses the commands that print data share.
func setUsage(fl *flag.FlagSet, help string) {
	fl.Usage = func() {
		fmt.Fprint(fl.Output(), help)
		fl.PrintDefaults()
		fmt.Fprint(fl.Output(), "\nExit status: 0 on success, 2 for a usage error, 1 for any other error.\n")
	}
}

// parseFlags parses args into fs after taking each flag's default from the
// environment variable SYNCLOOP_<NAME> (dashes become underscores), so every
// flag can be set either way; the command line wins.
func parseFlags(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		if v := getenv(name); v != "" && envErr == nil {
			if err := f.Value.Set(v); err != nil {
				envErr = usageError{fmt.Errorf("%s=%q: %v", name, v, err)}
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// envName is the environment variable that sets flag name.
func envName(name string) string {
	b := []byte("SYNCLOOP_")
	for _, c := range []byte(name) {
		switch {
		case c == '-':
			c = '_'
		case 'a' <= c && c <= 'z':
			c -= 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for item := range strings.SplitSeq(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
