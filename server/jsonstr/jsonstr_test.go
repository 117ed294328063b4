package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// stdAppend is encoding/json's encoding of s, without HTML escaping.
func stdAppend(s string) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

var samples = []string{
	"", "plain", `"SyncLoop (PLEG): event for pod" pod="default/x"`, `back\slash`,
	"tab\tnew\nline\rcr\bbs\fff", "\x00\x01\x1f\x7f", "<script>&amp;</script>",
	"é ü 日本 🙂", "\u2028\u2029", "bad \xff\xfe utf8 \xc3", "\x1b[31mred\x1b[0m",
	string([]byte{0xed, 0xa0, 0x80}), // a surrogate half in UTF-8: invalid
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range samples {
		if got, want := Append([]byte("x"), s), append([]byte("x"), stdAppend(s)...); !bytes.Equal(got, want) {
			t.Errorf("Append(%q) = %s, encoding/json: %s", s, got, want)
		}
	}
}

// stdRead is what encoding/json decodes data into as a string.
func stdRead(data []byte) (string, bool) {
	var s string
	err := json.Unmarshal(data, &s)
	return s, err == nil
}

func TestRead(t *testing.T) {
	cases := []struct {
		in   string
		want string
		ok   bool
	}{
		{`"plain"`, "plain", true},
		{`""`, "", true},
		{`"a\"b\\c\/d\b\f\n\r\t"`, "a\"b\\c/d\b\f\n\r\t", true},
		{`"\u00e9\u65E5"`, "é日", true},
		{`"\ud83d\ude42"`, "🙂", true},
		{`"\ud83d"`, "\ufffd", true},
		{`"\ud83dx"`, "\ufffdx", true},
		{`"\ud83d\u0041"`, "\ufffdA", true},
		{`"\ude42\ud83d"`, "\ufffd\ufffd", true},
		{"\"bad \xff\"", "bad \ufffd", true},
		{`"\x41"`, "", false},
		{`"\u12"`, "", false},
		{`"open`, "", false},
		{`"open\`, "", false},
		{"\"ctl \x01\"", "", false},
		{`plain`, "", false},
	}
	for _, c := range cases {
		s, rest, ok := Read([]byte(c.in + ` ,`))
		if ok != c.ok || (ok && (s != c.want || string(rest) != ` ,`)) {
			t.Errorf("Read(%q) = %q, %q, %v; want %q, %v", c.in, s, rest, ok, c.want, c.ok)
		}
		if std, stdOK := stdRead([]byte(c.in)); stdOK != c.ok || std != c.want && c.ok {
			t.Errorf("the table disagrees with encoding/json on %q: %q, %v", c.in, std, stdOK)
		}
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range samples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Append(nil, s)
		if want := stdAppend(s); !bytes.Equal(got, want) {
			t.Fatalf("Append(%q) = %s, encoding/json: %s", s, got, want)
		}
		back, rest, ok := Read(got)
		if !ok || len(rest) != 0 {
			t.Fatalf("Read(Append(%q)) = %q, %q, %v", s, back, rest, ok)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("round trip: %q became %q", s, back)
		}
	})
}

func FuzzRead(f *testing.F) {
	for _, s := range samples {
		f.Add(stdAppend(s))
	}
	f.Add([]byte(`"\ud83d\ude42\ud83d\u0041\u00e9"`))
	f.Add([]byte(`"\`))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, rest, ok := Read(data)
		// Skip takes exactly the literals Read takes, and ends where it does.
		if skipped, sok := Skip(data); sok != ok || (ok && len(skipped) != len(rest)) {
			t.Fatalf("Skip(%q) = %q, %v; Read: rest %q, %v", data, skipped, sok, rest, ok)
		}
		if !ok {
			if len(data) == 0 || data[0] != '"' {
				return // not a literal by Read's contract (encoding/json skips spaces first)
			}
			// Then no prefix of data is a string literal encoding/json takes.
			for i := 1; i <= len(data); i++ {
				if _, stdOK := stdRead(data[:i]); stdOK {
					t.Fatalf("Read(%q) failed; encoding/json reads %q", data, data[:i])
				}
			}
			return
		}
		lit := data[:len(data)-len(rest)]
		want, stdOK := stdRead(lit)
		if !stdOK || want != s {
			t.Fatalf("Read(%q) = %q; encoding/json: %q, %v", lit, s, want, stdOK)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	s := `I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"] lt=abc:123:1764464520512345000`
	b.Run("jsonstr", func(b *testing.B) {
		buf := make([]byte, 0, 512)
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			buf = Append(buf[:0], s)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(s)))
		for b.Loop() {
			stdAppend(s)
		}
	})
}

func BenchmarkRead(b *testing.B) {
	lit := stdAppend(`I1130 01:02:00.512345    4242 kubelet.go:2760] "SyncLoop ADD" source="api" pods=["default/probe-me"] lt=abc:123:1764464520512345000`)
	b.Run("jsonstr", func(b *testing.B) {
		b.SetBytes(int64(len(lit)))
		for b.Loop() {
			Read(lit)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(lit)))
		for b.Loop() {
			stdRead(lit)
		}
	})
}
