package jsonobj_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/mcplisten/listen/internal/jsonobj"
)

// Valid agrees with encoding/json's Valid: on every kind of value, on each
// way a string, a number, a literal or the structure can be malformed, and
// on invalid UTF-8 (which both accept inside strings).
func TestValidIsEncodingJSON(t *testing.T) {
	for _, in := range []string{
		``, ` `, `null`, `true`, `false`, `nul`, `tru`, `truex`, `True`, `nullnull`,
		`0`, `-0`, `-`, `01`, `1.`, `.5`, `1.5`, `1e`, `1e+`, `1E-7`, `-1.5e+10`, `1x`, `+1`, `0x10`, `1 2`,
		`""`, `"s"`, `"`, `"abc`, `"a\"`, `"a\\"`, `"\/\b\f\n\r\t"`, `"\x"`, `"\u12"`, `"\u12g4"`, `"\u00e9"`, `"\ud800"`,
		"\"tab\there\"", "\"nl\nhere\"", "\"del\x7f\"", "\"bad \xff utf-8\"", `"é"`,
		`[]`, `[`, `]`, `[1,]`, `[,1]`, `[1 2]`, `[1,2]`, ` [ 1 , "x" , true , null , { } , [ ] ] `,
		`{}`, `{`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{,"a":1}`, `{"a" 1}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1}}`,
		` { "a" : [ 1 , "x" ] , "b" : { "c" : -0 } } `, "{\"a\":1}\x00", "\v1", "1\f",
		`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["file:///a"]}}}`,
	} {
		assert.Equal(t, json.Valid([]byte(in)), jsonobj.Valid([]byte(in)), "%q", in)
	}
	for i := range 0x100 { // every byte inside a string, escaped or not
		for _, in := range []string{"\"a" + string(rune(i)) + "b\"", "\"a" + string([]byte{byte(i)}) + "b\"", `"\` + string([]byte{byte(i)}) + `"`} {
			assert.Equal(t, json.Valid([]byte(in)), jsonobj.Valid([]byte(in)), "%q", in)
		}
	}
}

// Beyond encoding/json's nesting limit, Valid fails as encoding/json does.
func TestValidDepthLimit(t *testing.T) {
	for _, n := range []int{10000, 10001} {
		for _, open := range []string{"[", `{"a":`} {
			closing := "]"
			if open != "[" {
				closing = "}"
			}
			in := []byte(strings.Repeat(open, n) + "1" + strings.Repeat(closing, n))
			assert.Equal(t, json.Valid(in), jsonobj.Valid(in), "depth %d of %s", n, open)
		}
	}
}

func FuzzValid(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",{"b":null}]}`, `"\ud800"`, `[true,false,-0.0]`, "\"\xc3\x28\"", `{"a":1e5,"b":"\u00e9"}`, `[1,]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := jsonobj.Valid(in), json.Valid(in); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json says %v", in, got, want)
		}
	})
}

// BenchmarkValid checks a listen request naming 1,000 URIs of 120 bytes,
// with Valid and with encoding/json's Valid.
// Run: go test ./internal/jsonobj -run '^$' -bench Valid -benchmem
func BenchmarkValid(b *testing.B) {
	uris := make([]string, 1000)
	for i := range uris {
		u := "file:///project/r" + strings.Repeat("x", 100) + "/" + strings.Repeat("0", 4)
		uris[i] = `"` + u[:len(u)-4] + string(rune('a'+i%26)) + `"`
	}
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":[` +
		strings.Join(uris, ",") + `]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	for _, tc := range []struct {
		name  string
		valid func([]byte) bool
	}{{"jsonobj", jsonobj.Valid}, {"encoding-json", json.Valid}} {
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if !tc.valid(body) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
