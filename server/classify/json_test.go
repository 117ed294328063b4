package classify

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// reflectJSON is Line's encoding by encoding/json's reflection, as
// MarshalJSON was written before AppendJSON: the reference AppendJSON is
// held to, byte for byte.
func reflectJSON(l Line) ([]byte, error) {
	type plain Line
	out := struct {
		Case *string    `json:"case"`
		Time *time.Time `json:"time"`
		plain
	}{plain: plain(l)}
	if l.Case != "" {
		out.Case = &l.Case
	}
	if y := l.Time.Year(); !l.Time.IsZero() && y >= 0 && y <= 9999 {
		out.Time = &l.Time
	}
	if out.Pods == nil {
		out.Pods = []string{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

func checkAppendJSON(t *testing.T, l Line) {
	t.Helper()
	got, err := l.AppendJSON([]byte("prefix"))
	want, werr := reflectJSON(l)
	if (err != nil) != (werr != nil) {
		t.Fatalf("AppendJSON error %v, encoding/json error %v, for %#v", err, werr, l)
	}
	if err == nil && !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("AppendJSON:\n %s\nencoding/json:\n %s", got[len("prefix"):], want)
	}
}

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	c := New(nil, WithClock(clock))
	for _, raw := range []string{
		"plain text",
		`I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"]`,
		`{"__CURSOR":"s=1;i=2","__REALTIME_TIMESTAMP":"1764464520512345","_HOSTNAME":"node-1","_PID":"4242","SYSLOG_IDENTIFIER":"kubelet","MESSAGE":"I1130 01:02:00.512345    4242 kubelet.go:2500] \"SyncLoop (PLEG): event for pod\" pod=\"a/<b>\""}`,
		"<script>alert(1)</script> \x1b[31m\xff\u2028",
	} {
		checkAppendJSON(t, c.Classify([]byte(raw)))
	}
	full := Line{
		Case: "pleg", Match: MatchExact, Format: FormatJournalJSON, Caller: "kubelet.go:2500", SourceLine: 2500,
		Severity: "error", Verbosity: 4, Time: time.Date(2026, 11, 30, 1, 2, 3, 4500, time.FixedZone("x", 5*3600+1800)),
		Message: "m \"q\"", Pods: []string{"a/b", "c/<d>"}, Cursor: "s=1", Host: "h", PID: 7, Ident: "kubelet",
		Raw: "r", Text: "t", Version: "v1.31.0", Stripped: true,
	}
	checkAppendJSON(t, full)
	for _, tm := range []time.Time{{}, time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("odd", 30))} {
		l := full
		l.Time = tm
		checkAppendJSON(t, l)
	}
}

func FuzzAppendJSON(f *testing.F) {
	f.Add(`I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"]`, "pleg", "a/b", int64(1764464520512345000), -1)
	f.Add("\x00<\xff>\u2028", "", "", int64(0), 0)
	c := New(nil, WithClock(clock))
	f.Fuzz(func(t *testing.T, raw, cs, pod string, ns int64, n int) {
		l := c.Classify([]byte(raw))
		checkAppendJSON(t, l)
		l.Case, l.Message, l.Host, l.Ident, l.Text, l.Raw = cs, raw, raw, cs, pod, raw
		l.Pods = append(l.Pods, pod, raw)
		l.PID, l.SourceLine, l.Verbosity = n, -n, n
		l.Time = time.Unix(0, ns).In(time.FixedZone("z", n%100000))
		checkAppendJSON(t, l)
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	c := New(nil, WithClock(clock))
	l := c.Classify([]byte(`I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"] lt=abc:1:1764464520512345000`))
	b.Run("append", func(b *testing.B) {
		buf := make([]byte, 0, 1024)
		for b.Loop() {
			buf, _ = l.AppendJSON(buf[:0])
		}
	})
	b.Run("reflect", func(b *testing.B) {
		for b.Loop() {
			reflectJSON(l)
		}
	})
}
