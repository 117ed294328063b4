package classify

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// safe checks what every Line must hold whatever the input: valid UTF-8
// without control characters (tab aside) in every text field, and bounded.
func safe(t testing.TB, l Line) {
	t.Helper()
	fields := map[string]string{"Raw": l.Raw, "Text": l.Text, "Message": l.Message, "Caller": l.Caller,
		"Host": l.Host, "Cursor": l.Cursor, "Ident": l.Ident, "Version": l.Version}
	for i, p := range l.Pods {
		fields["Pods["+strconv.Itoa(i)+"]"] = p
	}
	for name, s := range fields {
		if !utf8.ValidString(s) {
			t.Errorf("%s is not valid UTF-8: %q", name, s)
		}
		for _, r := range s {
			if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r <= 0x9f {
				t.Errorf("%s holds control character %U: %q", name, r, s)
				break
			}
		}
		if len(s) > MaxText+len(CutMarker(1<<40)) {
			t.Errorf("%s is %d bytes long", name, len(s))
		}
	}
	if _, err := json.Marshal(l); err != nil {
		t.Errorf("marshal: %v", err)
	}
}

func TestHostile(t *testing.T) {
	r := readingFor(t, "v1.37.2")
	c := New(r, WithClock(clock))
	const head = `I1130 01:02:00.512345    4242 kubelet.go:2760] `
	deep := strings.Repeat(`{"a":`, 10000) + `1` + strings.Repeat(`}`, 10000)
	deepArr := `{"__CURSOR":"c","MESSAGE":` + strings.Repeat("[", 9000) + strings.Repeat("]", 9000) + `}`
	big := head + `"SyncLoop ADD" source="api" pods=["default/x"] blob="` + strings.Repeat("A", 10<<20) + `"`
	bigJSON := `{"ts":1,"caller":"kubelet/kubelet.go:2760","msg":"SyncLoop ADD","x":"` + strings.Repeat("é", 5<<20) + `"}`
	tests := []struct {
		name  string
		line  string
		check func(t *testing.T, l Line)
	}{
		{"script in a pod name", head + `"SyncLoop ADD" source="api" pods=["default/<script>alert(1)</script>"]`, func(t *testing.T, l Line) {
			if l.Case != "config" || len(l.Pods) != 1 || l.Pods[0] != "default/<script>alert(1)</script>" {
				t.Errorf("case %q pods %q: the text must survive as text", l.Case, l.Pods)
			}
		}},
		{"script in kubelet JSON", `{"ts":1796000520512.345,"caller":"kubelet/kubelet.go:2760","msg":"SyncLoop ADD","v":2,"pods":[{"name":"<img src=x onerror=alert(1)>","namespace":"default"}]}`, func(t *testing.T, l Line) {
			if len(l.Pods) != 1 || l.Pods[0] != "default/<img src=x onerror=alert(1)>" {
				t.Errorf("pods %q", l.Pods)
			}
		}},
		{"invalid UTF-8", head + "\"SyncLoop ADD\" source=\"api\" pods=[\"default/a\xff\xfeb\"]", func(t *testing.T, l Line) {
			if l.Case != "config" || !l.Stripped || !strings.Contains(l.Raw, "a\uFFFD\uFFFDb") {
				t.Errorf("case %q stripped %v raw %q", l.Case, l.Stripped, l.Raw)
			}
		}},
		{"NUL bytes", head + "\"SyncLoop (PLEG): event for pod\" pod=\"default/a\x00b\"", func(t *testing.T, l Line) {
			if l.Case != "pleg" || l.Pods[0] != "default/ab" || !l.Stripped {
				t.Errorf("case %q pods %q", l.Case, l.Pods)
			}
		}},
		{"ANSI escapes", "\x1b[31m" + head + "\"SyncLoop (housekeeping)\"\x1b[0m\x1b]0;title\x07 tail\u009b2J", func(t *testing.T, l Line) {
			if l.Case != "housekeeping" || strings.ContainsAny(l.Raw, "\x1b\x07") || !strings.HasSuffix(l.Raw, " tail") {
				t.Errorf("case %q raw %q", l.Case, l.Raw)
			}
		}},
		{"escaped control characters in a quoted message", head + `"SyncLoop ADD\x1b[2J\u0007" source="api"`, func(t *testing.T, l Line) {
			if strings.ContainsAny(l.Message, "\x1b\x07") {
				t.Errorf("message %q", l.Message)
			}
		}},
		{"escaped control characters in JSON", `{"ts":1,"caller":"kubelet/kubelet.go:2760","msg":"SyncLoop ADD\u001b[2J","pods":[{"name":"a\u0000b","namespace":"d"}]}`, func(t *testing.T, l Line) {
			if l.Message != "SyncLoop ADD" || l.Pods[0] != "d/ab" {
				t.Errorf("message %q pods %q", l.Message, l.Pods)
			}
		}},
		{"10 MB klog line", big, func(t *testing.T, l Line) {
			if l.Case != "config" || l.Format != FormatKlog || !strings.HasSuffix(l.Raw, CutMarker(len(big)-MaxText)) {
				t.Errorf("case %q format %q raw ends %q", l.Case, l.Format, l.Raw[max(0, len(l.Raw)-40):])
			}
		}},
		{"10 MB JSON line", bigJSON, func(t *testing.T, l Line) {
			if l.Format != FormatRaw || !strings.Contains(l.Raw, "… [cut: ") {
				t.Errorf("format %q", l.Format)
			}
		}},
		{"JSON nested 10,000 deep", deep, func(t *testing.T, l Line) {
			if l.Format != FormatRaw || l.Case != "" {
				t.Errorf("format %q", l.Format)
			}
		}},
		{"MESSAGE nested 9,000 deep", deepArr, func(t *testing.T, l Line) {
			if l.Case != "" {
				t.Errorf("case %q", l.Case)
			}
		}},
		{"MESSAGE byte array, invalid UTF-8 and escapes", `{"__CURSOR":"c","__REALTIME_TIMESTAMP":"1796000520512600","MESSAGE":[27,91,51,49,109,104,105,255,0,10,9]}`, func(t *testing.T, l Line) {
			if l.Text != "hi\uFFFD\t" || !l.Stripped {
				t.Errorf("text %q", l.Text)
			}
		}},
		{"MESSAGE of wrong type", `{"__CURSOR":"c","MESSAGE":{"a":1}}`, func(t *testing.T, l Line) {
			if l.Format != FormatJournalJSON || l.Text != `{"a":1}` {
				t.Errorf("format %q text %q", l.Format, l.Text)
			}
		}},
		{"fields of wrong types", `{"__CURSOR":7,"_PID":[1],"_HOSTNAME":{"x":1},"MESSAGE":"x"}`, func(t *testing.T, l Line) {
			if l.Format != FormatJournalJSON || l.Message != "x" {
				t.Errorf("format %q", l.Format)
			}
		}},
		{"huge ts", `{"ts":1e308,"caller":"x.go:1","msg":"m"}`, func(t *testing.T, l Line) {
			if !l.Time.IsZero() {
				t.Errorf("time %v", l.Time)
			}
		}},
		{"cut inside a rune", strings.Repeat("é", MaxText), func(t *testing.T, l Line) {
			if !strings.HasSuffix(l.Raw, CutMarker(MaxText)) {
				t.Errorf("raw ends %q", l.Raw[len(l.Raw)-30:])
			}
		}},
		{"unterminated quote", head + `"SyncLoop ADD`, func(t *testing.T, l Line) {
			if l.Message != `"SyncLoop ADD` {
				t.Errorf("message %q", l.Message)
			}
		}},
		{"only a header", head[:len(head)-1], func(t *testing.T, l Line) {
			if l.Format != FormatKlog || l.Message != "" {
				t.Errorf("format %q message %q", l.Format, l.Message)
			}
		}},
		{"only control characters", "\x00\x01\x1b[0m", func(t *testing.T, l Line) {
			if l.Raw != "" || l.Format != FormatRaw {
				t.Errorf("raw %q format %q", l.Raw, l.Format)
			}
		}},
		{"pods of odd shapes", head + `"SyncLoop ADD" pods=[ , "a" ,b, [x] ] pod=`, func(t *testing.T, l Line) {}},
		{"kv with unbalanced brackets", head + `"SyncLoop (probe)" event={"a":[1,2} probe="liveness`, func(t *testing.T, l Line) {}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start := time.Now()
			l := c.Classify([]byte(tt.line))
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("took %v", d)
			}
			safe(t, l)
			tt.check(t, l)
			// The message-only classifier must hold up too.
			safe(t, New(nil).Classify([]byte(tt.line)))
		})
	}
}

// TestHostileMemory checks that a 10 MB line costs memory in proportion to
// what is kept, not to its length.
func TestHostileMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("allocation measurement in -short mode")
	}
	c := New(readingFor(t, "v1.37.2"))
	line := bytes.Repeat([]byte("x"), 10<<20)
	copy(line, `I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" `)
	allocs := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.Classify(line)
		}
	})
	if per := allocs.AllocedBytesPerOp(); per > 4*MaxText {
		t.Errorf("a 10 MB line allocates %d bytes per Classify", per)
	}
}

// TestBidiShownNotApplied: a bidirectional control in a pod name or log
// text shows as its escape, so "invoice-\u202efdp.exe" never reads as
// "invoice-exe.pdf".
func TestBidiShownNotApplied(t *testing.T) {
	r := readingFor(t, "v1.37.2")
	c := New(r, WithClock(clock))
	const head = `I1130 01:02:00.512345    4242 kubelet.go:2760] `
	for _, tc := range []struct {
		name, line string
		want       []string // in Message or Pods
	}{
		{"override in a pod name", head + "\"SyncLoop ADD\" source=\"api\" pods=[\"default/invoice-\u202efdp.exe\"]", []string{`default/invoice-\u202efdp.exe`}},
		{"isolates and marks in the message", head + "\"Probe \u2066failed\u2069 \u200e\u200f\u061c\" pod=\"default/x\"", []string{`\u2066failed\u2069`, `\u200e\u200f\u061c`}},
		{"embedding in kubelet JSON", `{"ts":1796000520512.345,"caller":"kubelet/kubelet.go:2760","msg":"SyncLoop ADD","v":2,"pods":[{"name":"a\u202bb","namespace":"default"}]}`, []string{`default/a\u202bb`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := c.Classify([]byte(tc.line))
			safe(t, l)
			all := l.Message + " " + l.Raw + " " + l.Text + " " + strings.Join(l.Pods, " ")
			for _, r := range all {
				if IsBidiControl(r) {
					t.Errorf("a bidi control %U is applied: %q", r, all)
				}
			}
			shown := l.Message + " " + strings.Join(l.Pods, " ")
			for _, w := range tc.want {
				if !strings.Contains(shown, w) {
					t.Errorf("%q not shown in message %q, pods %q", w, l.Message, l.Pods)
				}
			}
		})
	}
	for r, want := range map[rune]string{0x202e: `\u202e`, 0x061c: `\u061c`, 0x200f: `\u200f`} {
		if got := BidiEscape(r); got != want {
			t.Errorf("BidiEscape(%U) = %q, want %q", r, got, want)
		}
	}
}
