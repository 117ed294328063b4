package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"path"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/syncloop/syncloop/extractor"
)

const extractHelp = `Usage: syncloop extract [--reading sync-loop|volume-manager] [--tag TAG | --source-dir DIR] [--cache-dir DIR] [--format table|json]

Extract the Reading of a Kubernetes tag — (*Kubelet).syncLoopIteration with
its select cases, log sites and channel types, the pod_workers.go type
comments and the "two sets" — and print it. With --reading volume-manager,
the second reading instead: the volume manager's reconciler (the entry and
the gate that chooses it, its phases with their direction, the two sets'
writers and readers, its log sites), cached in CACHE-DIR/volume-manager/TAG/.

The source comes from, in order:
  --source-dir DIR      a Kubernetes checkout (no hash check; "source": "dir")
  the Reading cache     CACHE-DIR/readings/TAG/ (no network)
  the module cache      $GOMODCACHE/cache/download/k8s.io/kubernetes/@v/TAG.zip,
                        checked against its .ziphash (no network), or, with
                        no .ziphash, against the Go checksum database
  the module proxy      $GOPROXY/k8s.io/kubernetes/@v/TAG.zip, checked against
                        the Go checksum database ($GOSUMDB)
The default tag is also checked against a hash pinned in syncloop. The
Reading's "verified" says how its source was checked: sumdb, pinned+sumdb,
pinned, ziphash, or none (a checkout, or GOSUMDB=off/GONOSUMDB/GOPRIVATE).
GOPROXY, GOSUMDB, GONOSUMDB, GOPRIVATE, GOMODCACHE and GOPATH are read as
the go command reads them; GOPROXY=off allows only the caches, and "direct"
(version control) is not supported, so GOINSECURE has no effect.

Flags (each also settable as SYNCLOOP_<FLAG>, e.g. SYNCLOOP_TAG):
`

func runExtract(ctx context.Context, s stdio, args []string) error {
	fl := newFlagSet("extract", s)
	tag := fl.String("tag", extractor.DefaultTag, "Kubernetes release `TAG` to read, v1.20.0 or later")
	sourceDir := fl.String("source-dir", "", "read the Kubernetes checkout in `DIR` instead of fetching a tag")
	defaultCache, err := extractor.CacheDir(extractor.Options{})
	if err != nil {
		defaultCache = "none: give one"
	}
	cacheDir := fl.String("cache-dir", "", "cache Readings and checksum data in `DIR` (default "+defaultCache+")")
	format := fl.String("format", "table", "output `FORMAT`: table (one row per case) or json (the Reading)")
	verbose := fl.Bool("v", false, "log where the source comes from to stderr")
	reading := fl.String("reading", "sync-loop", "the `READING` to derive: sync-loop (syncLoopIteration) or volume-manager (the volume manager's reconciler)")
	setUsage(fl, extractHelp)
	if err := parseFlags(fl, args, s.getenv); err != nil {
		return err
	}
	if *format != "table" && *format != "json" {
		return usageError{fmt.Errorf("--format %q: want table or json", *format)}
	}
	if *reading != "sync-loop" && *reading != "volume-manager" {
		return usageError{fmt.Errorf("--reading %q: want sync-loop or volume-manager", *reading)}
	}
	opts := extractor.Options{
		SourceDir: *sourceDir,
		CacheDir:  *cacheDir,
		Getenv:    s.getenv,
	}
	// A tag given with --source-dir names the checkout; otherwise it is read
	// from the checkout's git metadata.
	if *sourceDir == "" || tagSet(fl, s.getenv) {
		opts.Tag = *tag
	}
	level := slog.LevelWarn // a Reading that cannot be cached, say
	if *verbose {
		level = slog.LevelInfo
	}
	opts.Logger = slog.New(slog.NewTextHandler(s.stderr, &slog.HandlerOptions{Level: level}))
	if *reading == "volume-manager" {
		return extractVolume(ctx, s, opts, *format)
	}
	r, err := extractor.Load(ctx, opts)
	if err != nil {
		return err
	}
	if *format == "json" {
		enc := json.NewEncoder(s.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r)
	}
	return printReadingTable(s, r)
}

// tagSet reports whether --tag was given on the command line or in the
// environment.
func tagSet(fl *flag.FlagSet, getenv func(string) string) bool {
	set := getenv(envName("tag")) != ""
	fl.Visit(func(f *flag.Flag) {
		if f.Name == "tag" {
			set = true
		}
	})
	return set
}

// writersCell names the functions that send on a case's channel (derived
// from the source), or the ticker that writes it; "-" when none was found.
func writersCell(c extractor.Case) string {
	var names []string
	for _, w := range c.Writers {
		n := extractor.ShortSymbol(w.Func)
		if strings.Contains(w.Note, "feature gate") {
			n += "*"
		}
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		for _, m := range c.Made {
			if strings.Contains(m.Note, "ticker") {
				names = append(names, fmt.Sprintf("ticker (%s:%d)", path.Base(m.File), m.Line))
			}
		}
	}
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ", ")
}

// printReadingTable prints a heading and one row per case; a case's further
// log messages go on rows of their own below it.
func printReadingTable(s stdio, r *extractor.Reading) error {
	f := r.Function
	fmt.Fprintf(s.stdout, "%s@%s (%s", r.Module, r.Tag, r.Source)
	if r.ModuleHash != "" {
		fmt.Fprintf(s.stdout, ", %s", r.ModuleHash)
	}
	if r.Verified != "" {
		fmt.Fprintf(s.stdout, ", verified: %s", r.Verified)
	}
	fmt.Fprintf(s.stdout, ")\n%s %s:%d-%d, %d cases\n%s\n\n", f.Name, f.File, f.Start, f.End, len(f.Cases), f.Upstream)
	tw := tabwriter.NewWriter(s.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tLINES\tTYPE\tWRITERS\tLOG MESSAGES")
	for _, c := range f.Cases {
		var msgs []string
		for _, l := range c.Logs {
			msgs = append(msgs, fmt.Sprintf("%q", l.Message))
		}
		first := "-"
		if len(msgs) > 0 {
			first = msgs[0]
		}
		fmt.Fprintf(tw, "%s\t%d-%d\t%s\t%s\t%s\n", c.Key, c.Start, c.End, c.Type, writersCell(c), first)
		for _, m := range msgs[min(1, len(msgs)):] {
			fmt.Fprintf(tw, "\t\t\t\t%s\n", m)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(s.stdout, "(WRITERS: the functions that send on the case's channel, from the source at the tag; * behind a feature gate.)")
	var sets []string
	for _, d := range r.TwoSets {
		sets = append(sets, fmt.Sprintf("%s (%s:%d)", d.Name, d.File, d.Line))
	}
	_, err := fmt.Fprintf(s.stdout, "\npod_workers.go: %d types; two sets: %s\n", len(r.PodWorkers.Types), strings.Join(sets, ", "))
	return err
}
