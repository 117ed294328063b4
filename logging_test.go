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

// TestLoggerRedacts: whatever part of the server logs a room's id, a key
// or a URL's password, at any level and in either format, the log shows
// it masked.
func TestLoggerRedacts(t *testing.T) {
	const id = "Zx9_Qw-ErTy0123456789a"
	for _, format := range []string{"text", "json"} {
		var b bytes.Buffer
		log, err := newLogger(&b, "debug", format)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("feeds: relay attached", "feed", "room-"+id, "remote", "127.0.0.1:5555")
		log.Debug("request", "path", "/rooms/"+id+"/ws")
		log.Warn("link /rooms/"+id+"?k=driverKEYdriverKEY12 shared", "n", 3)
		log.Error("nats: disconnected", "err", errors.New("dial nats://u:hunter2@10.0.0.9:4222: refused"))
		out := b.String()
		for _, secret := range []string{id, "driverKEYdriverKEY12", "hunter2"} {
			if strings.Contains(out, secret) {
				t.Errorf("--log-format %s: %q is in the log:\n%s", format, secret, out)
			}
		}
		for _, kept := range []string{"room-Zx9_Qw…", "/rooms/Zx9_Qw…/ws", "10.0.0.9:4222", "127.0.0.1:5555"} {
			if !strings.Contains(out, kept) {
				t.Errorf("--log-format %s: %q is not in the log:\n%s", format, kept, out)
			}
		}
	}
}
