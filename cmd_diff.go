package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/diff"
)

const diffHelp = `Usage: syncloop diff --from TAG --to TAG [--format text|json] [--cache-dir DIR]
       syncloop diff --history KEY [--to TAG] [--format text|json]

Say what changed in (*Kubelet).syncLoopIteration between two Kubernetes
tags, case by case: each case key is added, removed, changed or same, with
the clause's code as a unified diff (white space ignored), its log calls
(message, verbosity, severity, logger style), its element type and calls;
then the function's doc comment and helpers, the pod_workers.go type
comments and the two-set sightings (moved, added, gone).

With --history KEY, follow one case through every minor release from
` + extractor.MinTag + ` to --to's minor (v1.20.0, v1.21.0, …): whether it is there and
what changed since the minor before.

Tags are fetched as syncloop extract fetches them (caches, then the module
proxy). The JSON field names are a contract: see the extractor/diff package.

Flags (each also settable as SYNCLOOP_<FLAG>):
`

func runDiff(ctx context.Context, s stdio, args []string) error {
	fl := newFlagSet("diff", s)
	from := fl.String("from", "", "the older `TAG`")
	to := fl.String("to", extractor.DefaultTag, "the newer `TAG`")
	history := fl.String("history", "", "follow the case `KEY` through every minor release up to --to")
	cacheDir := fl.String("cache-dir", "", "cache Readings and checksum data in `DIR` (default: as syncloop extract)")
	format := fl.String("format", "text", "output `FORMAT`: text or json")
	verbose := fl.Bool("v", false, "log where the source comes from to stderr")
	setUsage(fl, diffHelp)
	if err := parseFlags(fl, args, s.getenv); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usageError{fmt.Errorf("--format %q: want text or json", *format)}
	}
	if (*from == "") == (*history == "") {
		return usageError{fmt.Errorf("give --from TAG (to compare two tags) or --history KEY, one of them")}
	}
	for _, tag := range []string{*from, *to} {
		if tag == "" {
			continue
		}
		if err := extractor.CheckTag(tag); err != nil {
			return err // as extract says it, before any fetch
		}
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	logger := slog.New(slog.NewTextHandler(s.stderr, &slog.HandlerOptions{Level: level}))
	load := func(tag string) (*extractor.Reading, error) {
		return extractor.Load(ctx, extractor.Options{Tag: tag, CacheDir: *cacheDir, Getenv: s.getenv, Logger: logger})
	}

	if *history != "" {
		var rs []*extractor.Reading
		for _, tag := range diff.MinorTags(*to) {
			r, err := load(tag)
			if err != nil {
				return err
			}
			rs = append(rs, r)
		}
		h := diff.NewHistory(*history, rs)
		present := false
		for _, st := range h.Tags {
			present = present || st.Present
		}
		if !present {
			return fmt.Errorf("no case %q at any minor release from %s to %s; see syncloop extract for a tag's case keys", *history, extractor.MinTag, *to)
		}
		if *format == "json" {
			return writeJSON(s.stdout, h)
		}
		return printHistory(s.stdout, h)
	}

	a, err := load(*from)
	if err != nil {
		return err
	}
	b, err := load(*to)
	if err != nil {
		return err
	}
	d := diff.Compare(a, b)
	if *format == "json" {
		return writeJSON(s.stdout, d)
	}
	return printDiff(s.stdout, d)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// printDiff writes a summary table, then each case that differs.
func printDiff(w io.Writer, d *diff.Diff) error {
	fmt.Fprintf(w, "syncLoopIteration, %s → %s: %d added, %d removed, %d changed, %d same\n\n",
		d.From, d.To, d.Summary.Added, d.Summary.Removed, d.Summary.Changed, d.Summary.Same)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tSTATUS\tWHAT")
	for _, c := range d.Cases {
		what := strings.Join(c.Changed, ", ")
		switch c.Status {
		case diff.Added:
			what = c.To.Channel + " (" + c.To.Type + ")"
		case diff.Removed:
			what = c.From.Channel + " (" + c.From.Type + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", c.Key, c.Status, what)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, c := range d.Cases {
		if c.Status != diff.Same {
			printCase(w, c)
		}
	}
	fmt.Fprintf(w, "\n== doc comment: %s\n%s", d.Doc.Status, d.Doc.Diff)
	for _, h := range d.Helpers {
		if h.Status != diff.Same {
			fmt.Fprintf(w, "\n== helper %s: %s\n%s", h.Name, h.Status, h.Diff)
		}
	}
	fmt.Fprintf(w, "\n== pod_workers.go types:")
	n := 0
	for _, t := range d.PodWorkers {
		if t.Status != diff.Same {
			fmt.Fprintf(w, "\n%s %s %s\n%s", t.Name, t.Status, strings.Join(t.Changed, ", "), t.Doc)
			n++
		}
	}
	if n == 0 {
		fmt.Fprintf(w, " all %d the same\n", len(d.PodWorkers))
	}
	fmt.Fprintf(w, "\n== two sets:\n")
	for _, s := range d.TwoSets {
		where := ""
		switch {
		case s.From != nil && s.To != nil && s.Status != diff.Same:
			where = fmt.Sprintf("%s:%d → %s:%d", s.From.File, s.From.Line, s.To.File, s.To.Line)
		case s.To != nil:
			where = fmt.Sprintf("%s:%d", s.To.File, s.To.Line)
		default:
			where = fmt.Sprintf("%s:%d", s.From.File, s.From.Line)
		}
		fmt.Fprintf(w, "%-6s %s %s\n", s.Status, s.Name, where)
	}
	return nil
}

// printCase writes what changed in one case that differs.
func printCase(w io.Writer, c diff.Case) {
	fmt.Fprintf(w, "\n== %s: %s\n", c.Key, c.Status)
	if c.Channel != nil {
		fmt.Fprintf(w, "channel: %s → %s\n", c.Channel.From, c.Channel.To)
	}
	if c.Type != nil {
		fmt.Fprintf(w, "type: %s → %s\n", c.Type.From, c.Type.To)
	}
	if len(c.Calls.Added) > 0 {
		fmt.Fprintf(w, "calls added: %s\n", strings.Join(c.Calls.Added, ", "))
	}
	if len(c.Calls.Removed) > 0 {
		fmt.Fprintf(w, "calls removed: %s\n", strings.Join(c.Calls.Removed, ", "))
	}
	var logs []string
	for _, l := range c.Logs {
		switch l.Status {
		case diff.Added:
			logs = append(logs, "  + "+logLine(l.To))
		case diff.Removed:
			logs = append(logs, "  - "+logLine(l.From))
		case diff.Changed:
			logs = append(logs, "  ~ "+logLine(l.From)+"\n    → "+logLine(l.To)+"  ("+strings.Join(l.Changed, ", ")+")")
		}
	}
	if len(logs) > 0 {
		fmt.Fprintf(w, "log calls:\n%s\n", strings.Join(logs, "\n"))
	}
	if c.Code != "" {
		fmt.Fprintf(w, "code:\n%s", c.Code)
	}
}

// logLine is a log call as the kubelet's source spells its level.
func logLine(l *extractor.LogSite) string {
	level := l.Severity
	if l.Verbosity > 0 {
		level = fmt.Sprintf("V(%d)", l.Verbosity)
	}
	where := ""
	if l.Func != "" && l.Func != "syncLoopIteration" {
		where = " in " + l.Func
	}
	return fmt.Sprintf("%s %s %q%s", level, l.Style, l.Message, where)
}

func printHistory(w io.Writer, h *diff.History) error {
	fmt.Fprintf(w, "case %s, minor by minor:\n\n", h.Key)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TAG\tCASE\tSINCE THE MINOR BEFORE\tLOG STYLE\tTYPE")
	for _, st := range h.Tags {
		there := "-"
		if st.Present {
			there = fmt.Sprintf("L%d-%d", st.Start, st.End)
		}
		since := string(st.Status)
		if len(st.Changed) > 0 {
			since += " (" + strings.Join(st.Changed, ", ") + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", st.Tag, there, or(since, "-"), or(strings.Join(st.Styles, ", "), "-"), or(st.Type, "-"))
	}
	return tw.Flush()
}

func or(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
