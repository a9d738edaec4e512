package jsonobj_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/jsonobj"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMembers(t *testing.T) {
	in := []byte(` { "a" : 1 , "b\u0063":{"x":[1,{"y":"}"}]}, "A":"s\"}" ,"e":[], "q":"\\\\" } `)
	ms, ok := jsonobj.Members(in)
	assert.True(t, ok)
	var names, values []string
	for _, m := range ms {
		names = append(names, string(m.Name))
		values = append(values, string(m.Value))
		assert.Equal(t, m.Value, in[m.Offset:m.Offset+len(m.Value)])
	}
	assert.Equal(t, []string{`"a"`, `"b\u0063"`, `"A"`, `"e"`, `"q"`}, names)
	assert.Equal(t, []string{`1`, `{"x":[1,{"y":"}"}]}`, `"s\"}"`, `[]`, `"\\\\"`}, values)
	found, unique, isObject := jsonobj.Lookup(in, "bc", "B")
	assert.True(t, unique && isObject)
	assert.Equal(t, `{"x":[1,{"y":"}"}]}`, string(found[0].Value))
	assert.Nil(t, found[1].Value)

	for _, notObject := range []string{`[1]`, `"{"`, `1`, ``, `null`} {
		_, ok := jsonobj.Members([]byte(notObject))
		assert.False(t, ok, notObject)
	}
	ms, ok = jsonobj.Members([]byte(`{}`))
	assert.True(t, ok)
	assert.Empty(t, ms)

	var first []string
	assert.True(t, jsonobj.Each(in, func(m jsonobj.Member) bool {
		first = append(first, string(m.Name))
		return len(first) < 2
	}))
	assert.Equal(t, []string{`"a"`, `"b\u0063"`}, first, "Each stops when fn returns false")
}

func TestLookup(t *testing.T) {
	in := []byte(`{"b":2,"a":1,"x":0,"x":0}`)
	found, unique, isObject := jsonobj.Lookup(in, "a", "b", "c")
	assert.True(t, unique, "only the names looked up must not repeat")
	assert.True(t, isObject)
	assert.Equal(t, []string{`1`, `2`, ``}, []string{string(found[0].Value), string(found[1].Value), string(found[2].Value)})
	assert.Equal(t, 11, found[0].Offset)
	_, unique, _ = jsonobj.Lookup(in, "a", "x")
	assert.False(t, unique)
	_, _, isObject = jsonobj.Lookup([]byte(`[1]`), "a")
	assert.False(t, isObject)
	many := []byte(`{` + strings.Repeat(`"\u0061":1,`, 1000) + `"b":2}`)
	assert.LessOrEqual(t, testing.AllocsPerRun(10, func() { jsonobj.Lookup(many, "b") }), 2.0, "no allocation per member")
}

func TestIs(t *testing.T) {
	for _, tt := range []struct {
		tok, name string
		is        bool
	}{
		{`"method"`, "method", true},
		{`"Method"`, "method", false},
		{`"METHOD"`, "method", false},
		{`"\u006dethod"`, "method", true},
		{`"\u006Dethod"`, "method", true},
		{`"method "`, "method", false},
		{`"meth\od"`, "method", false}, // not valid JSON: never a name
		{`""`, "", true},
		{"\"\xff\"", "\uFFFD", true},   // invalid UTF-8 decodes to U+FFFD
		{`"\u0069\u0064"`, "id", true}, // 12 bytes spell 2: the longest a name of 2 may be
		{`"\u0069\u0064\u0020"`, "id", false},
	} {
		assert.Equal(t, tt.is, jsonobj.Member{Name: []byte(tt.tok)}.Is(tt.name), tt.tok)
	}
}

// Which finds the first name the member's is, decoding it once and not at
// all when its token is longer than any of the names could be spelled in.
func TestWhich(t *testing.T) {
	names := []string{"jsonrpc", "id", "method"}
	for _, tt := range []struct {
		tok  string
		want int
	}{
		{`"method"`, 2},
		{`"\u0069d"`, 1},
		{`"ID"`, -1},
		{`"` + strings.Repeat(`\u0061`, 7) + `"`, -1},    // 42 bytes could spell 7: decoded, not one of them
		{`"` + strings.Repeat(`\u0061`, 1000) + `"`, -1}, // too long to spell 7 bytes: not decoded
		{`"` + strings.Repeat("a", 43) + `"`, -1},
	} {
		assert.Equal(t, tt.want, jsonobj.Member{Name: []byte(tt.tok)}.Which(names...), tt.tok)
	}
	assert.Equal(t, -1, jsonobj.Member{Name: []byte(`"a"`)}.Which())
	long := jsonobj.Member{Name: []byte(`"` + strings.Repeat(`\u0061`, 1000) + `"`)}
	assert.Zero(t, testing.AllocsPerRun(10, func() { long.Which(names...) }), "a name too long to match is not decoded")
	plain := jsonobj.Member{Name: []byte(`"method"`)}
	assert.Zero(t, testing.AllocsPerRun(10, func() { plain.Which(names...) }))
}

func TestElements(t *testing.T) {
	var got []string
	assert.True(t, jsonobj.Elements([]byte(` [ 1 , "a,]" , {"b":[2]} ,null,[]] `), func(e []byte) bool {
		got = append(got, string(e))
		return true
	}))
	assert.Equal(t, []string{`1`, `"a,]"`, `{"b":[2]}`, `null`, `[]`}, got)
	assert.False(t, jsonobj.Elements([]byte(`{}`), func([]byte) bool { return true }))
	assert.True(t, jsonobj.Elements([]byte(`[]`), func([]byte) bool { t.Fatal("no element"); return true }))
}

func TestExactString(t *testing.T) {
	for _, tt := range []struct {
		tok   string
		exact bool
	}{
		{`"file:///a"`, true},
		{`"é"`, true},
		{`"\u00e9"`, true},
		{`"\ufffd"`, true},
		{"\"\uFFFD\"", true},
		{`"\ud83d\ude00"`, true}, // a pair
		{`"\uD83D\uDE00"`, true},
		{`"\\ud800"`, true}, // an escaped backslash, then text
		{`"\ud800"`, false},
		{`"\udfff"`, false},
		{`"\ud800x"`, false},
		{`"\ud800\u0041"`, false},
		{`"\ud800\ud800"`, false},
		{`"\ude00\ud83d"`, false},
		{`"a\ud800"`, false},
		{"\"\xff\"", false},
		{"\"\xed\xa0\x80\"", false}, // a surrogate in UTF-8 is invalid UTF-8
	} {
		assert.Equal(t, tt.exact, jsonobj.ExactString([]byte(tt.tok)), tt.tok)
		if jsonobj.ExactStrings([]byte(tt.tok)) {
			assert.True(t, tt.exact, "the quick check passes only exact strings: %s", tt.tok)
		}
	}
}

// reference reads the members of a JSON object with encoding/json's
// tokenizer.
func reference(t *testing.T, data []byte) (names, values []string, ok bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil, false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
		names = append(names, tok.(string))
		values = append(values, string(v))
	}
	return names, values, true
}

// exactReference decodes the string token tok by hand, code unit by code
// unit, and reports whether it is valid Unicode.
func exactReference(tok []byte) bool {
	var units []uint16
	s := tok[1 : len(tok)-1]
	for i := 0; i < len(s); {
		if s[i] == '\\' {
			if s[i+1] == 'u' {
				var u uint16
				for _, c := range s[i+2 : i+6] {
					u <<= 4
					switch {
					case c <= '9':
						u |= uint16(c - '0')
					case c <= 'F':
						u |= uint16(c - 'A' + 10)
					default:
						u |= uint16(c - 'a' + 10)
					}
				}
				units = append(units, u)
				i += 6
			} else {
				units = append(units, 'x')
				i += 2
			}
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		units = append(units, utf16.Encode([]rune{r})...)
		i += size
	}
	for i := 0; i < len(units); i++ {
		switch u := units[i]; {
		case u >= 0xD800 && u < 0xDC00:
			if i+1 >= len(units) || units[i+1] < 0xDC00 || units[i+1] > 0xDFFF {
				return false
			}
			i++
		case u >= 0xDC00 && u <= 0xDFFF:
			return false
		}
	}
	return true
}

// FuzzMembers: on any valid JSON, Members finds the members
// encoding/json's tokenizer finds, with the same names (Is) and values,
// Decode keeps one member per decoded name, and every string value is judged
// by ExactString as a hand decoder judges it (and passes ExactStrings only
// if it is exact).
func FuzzMembers(f *testing.F) {
	for _, s := range []string{
		`{"a":1,"b":[1,{"c":"d"}],"\u0041":"\ud800"}`,
		`{ "x" : "y\\\"" , "z":null,"n":-1.5e3}`,
		`{"s":"\ud83d\ude00\ufffd\udfff"}`,
		`[1]`, `"x"`, `{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			// Anything goes but a panic.
			ms, _ := jsonobj.Members(data)
			for _, m := range ms {
				jsonobj.Elements(m.Value, func([]byte) bool { return true })
			}
			return
		}
		names, values, isObject := reference(t, data)
		got, ok := jsonobj.Members(data)
		if ok != isObject {
			t.Fatalf("Members(%q) says object %v", data, ok)
		}
		if len(got) != len(names) {
			t.Fatalf("Members(%q): %d members, the reference %d", data, len(got), len(names))
		}
		seen := map[string]bool{}
		unique := true
		for i, m := range got {
			if !m.Is(names[i]) || string(m.Value) != values[i] {
				t.Fatalf("member %d: %s: %s, the reference %q: %s", i, m.Name, m.Value, names[i], values[i])
			}
			if seen[names[i]] {
				unique = false
			}
			seen[names[i]] = true
			if m.Value[0] == '"' {
				exact := exactReference(m.Value)
				if jsonobj.ExactString(m.Value) != exact {
					t.Fatalf("ExactString(%s) = %v", m.Value, !exact)
				}
				if jsonobj.ExactStrings(m.Value) && !exact {
					t.Fatalf("ExactStrings(%s) passes an inexact string", m.Value)
				}
			}
		}
		if v, _ := jsonobj.Decode(data); isObject {
			if m, _ := v.(map[string]any); (len(m) == len(got)) != unique {
				t.Fatalf("Decode(%q) keeps %d of %d members", data, len(m), len(got))
			}
		}
	})
}
