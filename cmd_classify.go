package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/syncloop/syncloop/extractor"
	"github.com/syncloop/syncloop/server/classify"
)

const classifyHelp = `Usage: syncloop classify [--tag TAG | --tag none | --source-dir DIR] [--format text|json] [--cache-dir DIR]

Read kubelet log lines on stdin and write one record per line, in order,
naming the case of (*Kubelet).syncLoopIteration's select that logged it:

  journalctl -u kubelet -f | syncloop classify
  ssh worker sudo journalctl -u kubelet -o json --all | syncloop classify --format json

Lines may be journald JSON (journalctl -o json), journald text (-o short,
short-precise, short-iso, short-full, short-unix, cat), bare klog text or
kubelet --logging-format=json, mixed. A line is matched exactly by its klog
caller (kubelet.go:2760) when the kubelet runs TAG, and by its message when
it runs another version: start-up lines reveal the kubelet's version, and a
mismatch is reported on stderr with the --tag to use. Lines that match no
case are kept, with no case.

Without --tag, the default tag is used; if its Reading cannot be loaded
(offline, no cache), lines are classified by message only, with a warning.
--tag none classifies by message only.

--format text (the default) writes "[case        ] line", the case coloured
when stdout is a terminal and NO_COLOR is unset. --format json writes one
JSON object per line: case (null for none), match, format, caller,
source_line, severity, verbosity (-1 when unknown), time, message, pods,
cursor, host, pid, raw, text, kubelet_version.

Flags (each also settable as SYNCLOOP_<FLAG>, e.g. SYNCLOOP_TAG):
`

// maxLine is the longest input line kept whole; the rest of a longer one
// is read and dropped (the record says how much was cut).
const maxLine = 64 << 20

func runClassify(ctx context.Context, s stdio, args []string) error {
	fl := newFlagSet("classify", s)
	tag := fl.String("tag", extractor.DefaultTag, "classify against Kubernetes release `TAG`, or \"none\" for by message only")
	sourceDir := fl.String("source-dir", "", "read the Kubernetes checkout in `DIR` instead of fetching a tag")
	cacheDir := fl.String("cache-dir", "", "cache Readings in `DIR` (default: the user cache directory)")
	format := fl.String("format", "text", "output `FORMAT`: text or json")
	setUsage(fl, classifyHelp)
	if err := parseFlags(fl, args, s.getenv); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return usageError{fmt.Errorf("--format %q: want text or json", *format)}
	}
	explicit := tagSet(fl, s.getenv) || *sourceDir != ""
	if *tag == "none" && *sourceDir != "" {
		return usageError{errors.New("--tag none and --source-dir exclude each other")}
	}
	var r *extractor.Reading
	if *tag != "none" {
		opts := extractor.Options{SourceDir: *sourceDir, CacheDir: *cacheDir, Getenv: s.getenv,
			Logger: slog.New(slog.NewTextHandler(s.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))}
		if *sourceDir == "" || tagSet(fl, s.getenv) {
			opts.Tag = *tag
		}
		var err error
		r, err = extractor.Load(ctx, opts)
		switch {
		case err != nil && explicit:
			return fmt.Errorf("classify: %w", err)
		case err != nil:
			fmt.Fprintf(s.stderr, "syncloop classify: no Reading of %s (%v); classifying by message only (--tag none to say so)\n", *tag, err)
			r = nil
		}
	}
	return classifyLines(ctx, s, classify.New(r), *format == "json")
}

// classifyLines reads s.stdin to its end and writes a record per line.
func classifyLines(ctx context.Context, s stdio, c *classify.Classifier, asJSON bool) error {
	in := bufio.NewReaderSize(s.stdin, 64<<10)
	out := bufio.NewWriterSize(s.stdout, 64<<10)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	color := !asJSON && isTerminal(s.stdout) && s.getenv("NO_COLOR") == ""
	stream := c.Stream()
	warned := map[string]bool{}
	var long []byte
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		line, dropped, err := readLine(in, &long)
		if len(line) > 0 || err == nil {
			var l classify.Line
			if asJSON {
				l = stream.Classify(line)
			} else {
				l = stream.ClassifyText(line) // no pods: the text does not show them
			}
			if dropped > 0 {
				l.Raw += fmt.Sprintf(" … [cut: %d more bytes not read]", dropped)
			}
			if v := l.Version; v != "" && !warned[v] && c.Reading() != nil && stream.Mismatch() {
				warned[v] = true
				fmt.Fprintf(s.stderr, "syncloop classify: kubelet is %s but classifying against %s; rerun with --tag %s\n", v, c.Reading().Tag, v)
			}
			if asJSON {
				if werr := enc.Encode(l); werr != nil {
					return werr
				}
			} else {
				writeText(out, &l, color)
			}
			// Flush before waiting for input, so `journalctl -f | syncloop
			// classify` shows each line as it comes, yet a file is written
			// in large blocks.
			if in.Buffered() == 0 {
				if werr := out.Flush(); werr != nil {
					return werr
				}
			}
		}
		if err == io.EOF {
			return out.Flush()
		}
		if err != nil {
			out.Flush()
			return fmt.Errorf("classify: read stdin: %w", err)
		}
	}
}

// readLine returns the next line without its newline ("\r\n" too). A line
// longer than the reader's buffer is gathered in *long, up to maxLine
// bytes; dropped counts what was read beyond. err is io.EOF at the end.
func readLine(in *bufio.Reader, long *[]byte) (line []byte, dropped int, err error) {
	line, err = in.ReadSlice('\n')
	if err != bufio.ErrBufferFull {
		line = bytes.TrimSuffix(line, []byte("\n"))
		return bytes.TrimSuffix(line, []byte("\r")), 0, err
	}
	buf := append((*long)[:0], line...)
	for err == bufio.ErrBufferFull {
		line, err = in.ReadSlice('\n')
		if err == nil {
			line = line[:len(line)-1]
		}
		take := min(max(maxLine-len(buf), 0), len(line))
		buf = append(buf, line[:take]...)
		dropped += len(line) - take
	}
	*long = buf
	if cap(buf) > 1<<20 {
		*long = nil // do not keep a huge buffer for the lines after
	}
	return bytes.TrimSuffix(buf, []byte("\r")), dropped, err
}

// writeText writes l as --format text does (classify.AppendText).
func writeText(w *bufio.Writer, l *classify.Line, color bool) {
	var buf [1024]byte
	w.Write(classify.AppendText(buf[:0], l, color))
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
