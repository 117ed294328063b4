package relay

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
)

// stdDecode is the reference: encoding/json into the message's struct.
func stdDecode(data []byte) ([]Line, error) {
	var m struct {
		Lines []Line `json:"lines"`
	}
	err := json.Unmarshal(data, &m)
	return m.Lines, err
}

func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	got, err := DecodeBatch(data, nil)
	want, werr := stdDecode(data)
	if (err != nil) != (werr != nil) {
		t.Fatalf("DecodeBatch(%q): error %v, encoding/json: %v", data, err, werr)
	}
	if err != nil {
		if !errors.Is(err, ErrBatch) {
			t.Fatalf("DecodeBatch(%q): error %v is not ErrBatch", data, err)
		}
		return
	}
	if len(got) != len(want) || (len(got) > 0 && !reflect.DeepEqual(got, want)) {
		t.Fatalf("DecodeBatch(%q) = %+v, encoding/json: %+v", data, got, want)
	}
}

var wireSeeds = []string{
	`{"lines":[]}`,
	`{"lines":[{"id":"a","raw":"I1130 \"x\" pod=\"a/b\""},{"raw":"r","id":"b"}]}`,
	" \n{ \"lines\" : [ { \"id\" : \"a\" , \"raw\" : \"\\u003cb\\u003e\" } ] }\t",
	`{"lines":[{}]}`,
	`{"lines":[{"id":"a","raw":"x"}]}x`,
	`{"lines":[{"id":"a","raw":"x"},]}`,
	`{"lines":[{"id":"a","raw":"x"}],"other":1}`,
	`{"Lines":[{"ID":"a","Raw":"x"}]}`,
	`{"lines":[{"id":null,"raw":"x"}]}`,
	`{"lines":null}`,
	`{"lines":[{"id":"a","id":"b"}]}`,
	`{"lines":[{"id":1}]}`,
	`{"lines":[{"id":"a","raw":"\ud83d\ude42 \ud83d \xff"}]}`,
	`{"lines":[{"id":"a","raw":"x` + "\x01" + `"}]}`,
	`{"lines":[{"id":"a","extra":{"k":[1,2]},"raw":"x"}]}`,
	``, `{`, `[]`, `{"lines":[`, `{"lines":[{"id":"a"`,
	`{"lines":[{"id":"a","raw":"x","read":1733350000123456,"age":1234}]}`,
	`{"lines":[{"age":-5,"read":0,"raw":"x","id":"a"}]}`,
	`{"lines":[{"id":"a","read":1.5}]}`,
	`{"lines":[{"id":"a","read":1e3}]}`,
	`{"lines":[{"id":"a","read":01}]}`,
	`{"lines":[{"id":"a","read":"1"}]}`,
	`{"lines":[{"id":"a","read":99999999999999999999}]}`,
	`{"lines":[{"id":"a","age":-}]}`,
}

func TestDecodeBatch(t *testing.T) {
	for _, s := range wireSeeds {
		checkDecode(t, []byte(s))
	}
	lines := []Line{{ID: "s=1;i=2", Raw: `I1130 01:02:00.512345 4242 kubelet.go:2500] "SyncLoop (PLEG)" pod="a/<b>"`, Read: 1733350000123456, Age: 2500}, {ID: "", Raw: "\x1b[31m\xff\u2028"}}
	b := AppendBatch(nil, lines)
	checkDecode(t, b)
	if _, ok := decodeFast(b, nil); !ok {
		t.Fatalf("the relay's own batch (with read and age) takes encoding/json's path: %s", b)
	}
	got, err := DecodeBatch(b, []Line{{ID: "kept"}})
	if err != nil || len(got) != 3 || got[0].ID != "kept" || got[1] != lines[0] || got[2].Raw != "\x1b[31m\ufffd\u2028" {
		t.Fatalf("DecodeBatch(AppendBatch) = %+v, %v", got, err)
	}
	if !json.Valid(b) {
		t.Fatalf("AppendBatch wrote invalid JSON: %s", b)
	}
}

func FuzzDecodeBatch(f *testing.F) {
	for _, s := range wireSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkDecode(t, data) })
}

func BenchmarkDecodeBatch(b *testing.B) {
	lines := make([]Line, 2000)
	for i := range lines {
		lines[i] = Line{ID: "run-feed-" + string(rune('a'+i%26)), Raw: `I1130 01:02:00.512345    4242 kubelet.go:2500] "SyncLoop (PLEG): event for pod" pod="default/load-1" event={"ID":"x","Type":"ContainerStarted"} lt=abc:1:1764464520512345000`}
	}
	data := AppendBatch(nil, lines)
	b.Run("hand", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		dst := make([]Line, 0, len(lines))
		for b.Loop() {
			dst, _ = DecodeBatch(data, dst[:0])
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			stdDecode(data)
		}
	})
}
