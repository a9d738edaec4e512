package jsonobj_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/internal/jsonobj"
)

// stdDecode is what Decode must equal: encoding/json into an any, numbers
// as json.Number.
func stdDecode(v []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	var out any
	err := dec.Decode(&out)
	return out, err
}

// Decode reads valid JSON as encoding/json does with UseNumber: every kind
// of value, escapes, lone surrogates, invalid UTF-8, repeated names (the
// last wins), spaces everywhere.
func TestDecodeIsEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`null`, `true`, `false`, `0`, `-1.5e+10`, `"s"`, `""`, `[]`, `{}`,
		` { "a" : [ 1 , "x" , true , null , { } , [ ] ] , "b" : { "c" : -0 } } `,
		`{"a":1,"a":2}`,
		`"\u00e9\n\t\"\\\/ \ud83d\ude00"`,
		`"\ud800 lone"`, "\"bad \xff utf-8\"", `"é"`,
		`{"\u006dethod":"x","k\"ey":"v"}`,
		`[1e400, 12345678901234567890, 0.1]`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"x":{"on":true}}}}`,
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
	} {
		require.True(t, json.Valid([]byte(in)) || !utf8Valid(in), in)
		want, err := stdDecode([]byte(in))
		require.NoError(t, err, in)
		got, ok := jsonobj.Decode([]byte(in))
		require.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
}

func utf8Valid(s string) bool { return !strings.Contains(s, "\xff") }

// Decode refuses what is not JSON, as encoding/json does: it checks as it
// decodes.
func TestDecodeRefusesInvalid(t *testing.T) {
	for _, in := range []string{
		``, ` `, `tru`, `truex`, `nul`, `-`, `01`, `1.`, `1e`, `+1`, `1 2`, `"abc`, `"a\"`, `"\x"`, `"\u12g4"`,
		"\"tab\there\"", `[1,]`, `[,1]`, `[1 2]`, `{"a"}`, `{"a":}`, `{"a":1,}`, `{a:1}`, `{"a":1 "b":2}`, `{"a":1}}`,
		`{"a":[1,"x"]} x`, "{\"a\":1}\x00", `[1"a"]`, `{"a":tru}`, `{"k":-}`,
	} {
		require.False(t, json.Valid([]byte(in)), in)
		_, ok := jsonobj.Decode([]byte(in))
		assert.False(t, ok, "%q", in)
	}
}

// Beyond encoding/json's nesting limit, Decode fails as encoding/json does.
func TestDecodeDepthLimit(t *testing.T) {
	for _, n := range []int{10000, 10001} {
		in := []byte(strings.Repeat("[", n) + strings.Repeat("]", n))
		_, err := stdDecode(in)
		_, ok := jsonobj.Decode(in)
		assert.Equal(t, err == nil, ok, "depth %d", n)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",{"b":null}]}`, `"\ud800"`, `[true,false,-0.0]`, "\"\xc3\x28\""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if !json.Valid(in) {
			if got, ok := jsonobj.Decode(in); ok {
				t.Fatalf("Decode(%q) = %v, not JSON", in, got)
			}
			return
		}
		want, err := stdDecode(in)
		got, ok := jsonobj.Decode(in)
		if err != nil {
			if ok {
				t.Fatalf("Decode(%q) = %v, encoding/json fails: %v", in, got, err)
			}
			return
		}
		if !ok {
			t.Fatalf("Decode(%q) failed, encoding/json gives %v", in, want)
		}
		assert.Equal(t, want, got)
	})
}

// Escaped strings read exactly as encoding/json reads them: every escape,
// surrogate pairs, lone and reversed surrogates, a high surrogate before
// another escape, and invalid UTF-8 (a U+FFFD per bad byte, also for a
// surrogate encoded in UTF-8).
func TestDecodeStringsAsEncodingJSON(t *testing.T) {
	for _, in := range []string{
		`"\"\\\/\b\f\n\r\t"`, `"\u0041\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ude00\ud83d"`,
		`"\ud83d\u0041"`, `"\ud83dx"`, `"\ud83d\n"`, `"\ud83d\ud83d\ude00"`, `"\uDBFF\uDFFF"`, `"\u0000"`,
		"\"\xff\xfe a\"", "\"\xed\xa0\x80\"", "\"\xc3\"", "\"\xe2\x82\"", `"é😀"`, `"a\u2028b"`,
	} {
		var want string
		require.NoError(t, json.Unmarshal([]byte(in), &want), in)
		got, ok := jsonobj.Decode([]byte(in))
		require.True(t, ok, in)
		assert.Equal(t, want, got, "%q", in)
	}
}
