// Command fakejournalctl stands in for `journalctl -o json -f` in the fault
// tests: it prints a fixed file of journald JSON entries (each with a
// __CURSOR), starting after --after-cursor like the real one, at --rate
// entries per second (the journal growing), and with -f it then waits as
// journalctl does. It exits when its parent or grandparent (the relay,
// through sh -c) dies, so a relay killed with SIGKILL leaves nothing behind.
//
// Every start is appended to --record as "after=<cursor>", so a test can
// check that a restarted relay resumed by cursor rather than from the start.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

func main() {
	var entries, record, after string
	rate, follow := 100.0, false
	for _, a := range os.Args[1:] {
		switch {
		case a == "-f" || a == "--follow":
			follow = true
		case strings.HasPrefix(a, "--entries="):
			entries = strings.TrimPrefix(a, "--entries=")
		case strings.HasPrefix(a, "--record="):
			record = strings.TrimPrefix(a, "--record=")
		case strings.HasPrefix(a, "--after-cursor="):
			after = strings.TrimPrefix(a, "--after-cursor=")
		case strings.HasPrefix(a, "--rate="):
			r, err := strconv.ParseFloat(strings.TrimPrefix(a, "--rate="), 64)
			if err != nil || r <= 0 {
				fail("--rate: want entries per second")
			}
			rate = r
		}
		// Other flags (-o json, --no-tail, -u kubelet) are what journalctl takes.
	}
	if entries == "" {
		fail("--entries=FILE is required")
	}
	if record != "" {
		f, err := os.OpenFile(record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			fail(err.Error())
		}
		fmt.Fprintf(f, "after=%s\n", after)
		f.Close()
	}
	go watchParents()

	b, err := os.ReadFile(entries)
	if err != nil {
		fail(err.Error())
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	start := 0
	if after != "" {
		start = -1
		for i, l := range lines {
			var e struct {
				Cursor string `json:"__CURSOR"`
			}
			if json.Unmarshal([]byte(l), &e) == nil && e.Cursor == after {
				start = i + 1
				break
			}
		}
		if start < 0 {
			fail("Failed to seek to cursor: Invalid argument")
		}
	}
	w := bufio.NewWriter(os.Stdout)
	began := time.Now()
	for i, l := range lines[start:] {
		if d := time.Until(began.Add(time.Duration(float64(i) / rate * float64(time.Second)))); d > 0 {
			if w.Flush() != nil {
				os.Exit(1)
			}
			time.Sleep(d)
		}
		w.WriteString(l)
		w.WriteByte('\n')
	}
	if w.Flush() != nil {
		os.Exit(1)
	}
	if follow {
		time.Sleep(5 * time.Minute) // a journal with nothing new; the watch ends it
	}
}

// watchParents exits once the parent or grandparent process is gone.
func watchParents() {
	parent := os.Getppid()
	grand := ppidOf(parent)
	for {
		time.Sleep(50 * time.Millisecond)
		if os.Getppid() != parent || (grand > 1 && ppidOf(parent) != grand) {
			os.Exit(0)
		}
	}
}

// ppidOf reads a process's parent from /proc; 0 when it is gone.
func ppidOf(pid int) int {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0
	}
	n, _ := strconv.Atoi(f[1])
	return n
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "journalctl:", msg)
	os.Exit(1)
}
