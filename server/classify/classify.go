// Package classify turns one kubelet log line, in any format the live pane
// reads, into a classified Line: its case of the select, caller, pods, time.
// It knows log formats and the Reading, nothing of sockets.
package classify

import (
	"time"

	"github.com/syncloop/syncloop/extractor"
)

// Line is one classified log line. (stub: the classify work replaces this file)
type Line struct {
	Case      string    `json:"case"` // "" when no case; JSON null then
	Format    string    `json:"format"`
	Caller    string    `json:"caller"`
	Severity  string    `json:"severity"`
	Verbosity int       `json:"verbosity"`
	Time      time.Time `json:"time"`
	Message   string    `json:"message"`
	Pods      []string  `json:"pods"`
	Cursor    string    `json:"cursor,omitempty"`
	Host      string    `json:"host,omitempty"`
	PID       int       `json:"pid,omitempty"`
	Raw       string    `json:"raw"`
	Version   string    `json:"kubelet_version,omitempty"`
}

// Classifier classifies lines against one Reading (or by message alone when nil).
type Classifier struct{ r *extractor.Reading }

// New returns a Classifier for r; r may be nil (message-only).
func New(r *extractor.Reading) *Classifier { return &Classifier{r: r} }

// Classify classifies one raw line (without its trailing newline).
func (c *Classifier) Classify(raw []byte) Line { return Line{Raw: string(raw), Format: "raw"} }
