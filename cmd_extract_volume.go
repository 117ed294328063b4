package main

// `syncloop extract --reading volume-manager`: the second reading, the
// volume manager's reconciler (extractor/volume), as JSON or a table.

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"text/tabwriter"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/extractor/volume"
)

func extractVolume(ctx context.Context, s stdio, opts extractor.Options, format string) error {
	r, err := volume.Load(ctx, opts)
	if err != nil {
		return err
	}
	if format == "json" {
		enc := json.NewEncoder(s.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(r.WithoutDecls())
	}
	return printVolumeTable(s, r)
}

// printVolumeTable prints the entry, one row per phase, and the sets'
// writers by function.
func printVolumeTable(s stdio, r *volume.Reading) error {
	e := r.Entry
	fmt.Fprintf(s.stdout, "%s@%s volume manager's reconciler", extractor.Module, r.Tag)
	if r.Verified != "" {
		fmt.Fprintf(s.stdout, " (verified: %s)", r.Verified)
	}
	fmt.Fprintf(s.stdout, "\nentry (*reconciler).%s %s:%d, every %s, reached %v\n", e.Func, e.File, e.Line, e.Interval, e.Path)
	for _, g := range r.Goroutines {
		fmt.Fprintf(s.stdout, "goroutine %s:%d %s\n", g.File, g.Line, g.Text)
	}
	if e.Gate != "" {
		def := "unknown"
		if e.Default != nil {
			def = fmt.Sprint(*e.Default)
		}
		fmt.Fprintf(s.stdout, "chosen by feature gate %s (default %s, %s; %s:%d); otherwise %s\n", e.Gate, def, e.PreRelease, e.GateFile, e.GateLine, e.Other)
	}
	fmt.Fprintln(s.stdout)
	tw := tabwriter.NewWriter(s.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PART\tAT\tDIRECTION\tRANGES OVER\tGUARD")
	for _, p := range r.Parts {
		fmt.Fprintf(tw, "%s\t%s:%d\t%s\t%s\t%s\n", p.Key, path.Base(p.File), p.Line, dash(p.Direction), dash(p.Ranges), dash(p.Guard))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, set := range r.Sets {
		fmt.Fprintf(s.stdout, "\n%s (%s:%d), written by %d functions:\n", set.Name, set.File, set.Line, len(set.Writers))
		for _, w := range set.Writers {
			var calls []string
			for _, c := range w.Calls {
				calls = append(calls, fmt.Sprintf("%s:%d", c.Method, c.Line))
			}
			fmt.Fprintf(s.stdout, "  %s  %v\n", w.Func, calls)
		}
	}
	_, err := fmt.Fprintf(s.stdout, "\n%d log sites in the reconciler, the populator, volume_manager.go and the operation generator\n", len(r.LogSites))
	return err
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
