package classify

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// checkScan holds scanLine to encoding/json: whatever it takes on, it must
// read exactly as json.Unmarshal does (and only what json.Unmarshal takes).
func checkScan(t *testing.T, data []byte) bool {
	t.Helper()
	var fast, std jsonLine
	ok := scanLine(data, &fast)
	err := json.Unmarshal(data, &std)
	if ok && (err != nil || !reflect.DeepEqual(fast, std)) {
		t.Fatalf("scanLine(%q) took it: %+v; encoding/json: %+v, %v", data, fast, std, err)
	}
	var via jsonLine
	if verr := unmarshalLine(data, &via); (verr == nil) != (err == nil) || (err == nil && !reflect.DeepEqual(via, std)) {
		t.Fatalf("unmarshalLine(%q) = %+v, %v; encoding/json: %+v, %v", data, via, verr, std, err)
	}
	return ok
}

func testdataLines(t testing.TB, name string) [][]byte {
	f, err := os.Open("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if b := bytes.TrimSpace(sc.Bytes()); len(b) > 0 && b[0] == '{' {
			out = append(out, bytes.Clone(b))
		}
	}
	return out
}

var scanSeeds = []string{
	`{}`, ` { } `, `null`, `[]`, `{"MESSAGE":null,"__CURSOR":"c"}`, `{"MESSAGE":[72,105],"__CURSOR":"c"}`,
	`{"MESSAGE":["a","b"],"__CURSOR":"c"}`, `{"message":"x","__CURSOR":"c"}`, `{"MESSAGE":"a","MESSAGE":"b"}`,
	`{"_PID":4242,"x":{"y":[1,2.5e-3,-0,true,false,null,{"z":"\u00e9"}]}}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`,
	`{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":"\ud800"}`, `{"MESS\u0041GE":"escaped key"}`, `{"ſ":"long s"}`,
	`{"msg":"m","v":4,"ts":1764464520512.345,"caller":"kubelet/kubelet.go:2500"}`, `{"a":1}x`, `{"a":1,}`,
	`{"a" 1}`, `{"a":[1,]}`, `{"a":tru}`, "{\"MESSAGE\":\"bad \xff utf8\",\"__CURSOR\":\"c\"}",
}

func TestScanLine(t *testing.T) {
	for _, s := range scanSeeds {
		checkScan(t, []byte(s))
	}
	// Real entries take the fast path (or this file's work is wasted).
	for _, name := range []string{"journal-json.txt", "kubelet-json.txt"} {
		for _, line := range testdataLines(t, name) {
			if !checkScan(t, line) {
				t.Errorf("%s: not read by scanLine: %s", name, line)
			}
		}
	}
	deep := strings.Repeat("[", 5000) + strings.Repeat("]", 5000)
	checkScan(t, []byte(`{"a":`+deep+`}`))
}

func FuzzJSONLine(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	for _, line := range testdataLines(f, "journal-json.txt") {
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkScan(t, data) })
}

func BenchmarkJSONLine(b *testing.B) {
	lines := testdataLines(b, "journal-json.txt")
	b.Run("scan", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var j jsonLine
			unmarshalLine(lines[i%len(lines)], &j)
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			var j jsonLine
			json.Unmarshal(lines[i%len(lines)], &j)
		}
	})
}
