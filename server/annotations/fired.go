package annotations

// Pins: log lines a reader kept as proof that a case's handler ran
// (static/live.js, "Pin to my worksheet"). A pin is a note, id
// "pin.<feed>-<seq>", whose text is the line verbatim with what places it:
// case, time, pod, node, kubelet version, journald cursor. The worksheet
// hands them in under "Fired", in the order they were logged.

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// pinField is the value of a "name: value" line of a pin's text.
func pinField(text, name string) string {
	for line := range strings.Lines(text) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), name+": "); ok {
			return v
		}
	}
	return ""
}

// writeFired writes the worksheet's "Fired" section: every pin, verbatim
// in a fenced block (log lines are untrusted text: a fence inside one is
// defused), by case, then time.
func writeFired(b *bytes.Buffer, vs []View) {
	var pins []View
	for _, v := range vs {
		if Kind(v.ID) == "pin" && strings.TrimSpace(v.Text) != "" {
			pins = append(pins, v)
		}
	}
	if len(pins) == 0 {
		return
	}
	slices.SortStableFunc(pins, func(a, b View) int {
		return cmp.Or(strings.Compare(pinField(a.Text, "case"), pinField(b.Text, "case")),
			strings.Compare(pinField(a.Text, "time"), pinField(b.Text, "time")))
	})
	fmt.Fprintf(b, "\n## Fired\n\nLog lines pinned as proof that a case's handler ran, verbatim.\n\n")
	for _, v := range pins {
		fmt.Fprintf(b, "### %s at %s%s\n\n", cmp.Or(pinField(v.Text, "case"), "(none)"), cmp.Or(pinField(v.Text, "time"), "(none)"), byline(v.Note))
		fmt.Fprintf(b, "```text\n%s\n```\n\n", strings.ReplaceAll(strings.TrimRight(v.Text, "\n"), "```", "ʼʼʼ"))
	}
}
