package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
)

func TestNewLogger(t *testing.T) {
	tests := []struct {
		format string
		json   bool
	}{
		{"auto", true}, // a buffer is no terminal: what collects the logs gets JSON
		{"json", true},
		{"text", false},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		log, err := newLogger(&b, "info", tt.format)
		if err != nil {
			t.Fatalf("%s: %v", tt.format, err)
		}
		log.Info("hello", "k", "v")
		log.Debug("hidden")
		var m map[string]any
		isJSON := json.Unmarshal(b.Bytes(), &m) == nil
		if isJSON != tt.json || strings.Contains(b.String(), "hidden") {
			t.Errorf("--log-format %s wrote %q", tt.format, b.String())
		}
	}
	// /dev/null is a character device: auto picks text, as for a terminal.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if !isTerminal(null) {
		t.Error("isTerminal(/dev/null) = false; want the character device seen as a terminal")
	}
	for _, bad := range [][2]string{{"loud", "auto"}, {"info", "xml"}} {
		_, err := newLogger(&bytes.Buffer{}, bad[0], bad[1])
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("newLogger(%q, %q) = %v; want a usage error", bad[0], bad[1], err)
		}
	}
}
