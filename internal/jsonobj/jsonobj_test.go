package jsonobj_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen/internal/jsonobj"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestEach(t *testing.T) {
	in := []byte(` { "a" : 1 , "b\u0063":{"x":[1,{"y":"}"}]}, "A":"s\"}" ,"e":[] } `)
	var names, values []string
	ok := jsonobj.Each(in, func(m jsonobj.Member) bool {
		names = append(names, string(m.Name))
		values = append(values, string(m.Value))
		assert.Equal(t, m.Value, in[m.Offset:m.Offset+len(m.Value)])
		return true
	})
	assert.True(t, ok)
	assert.Equal(t, []string{`"a"`, `"b\u0063"`, `"A"`, `"e"`}, names)
	assert.Equal(t, []string{`1`, `{"x":[1,{"y":"}"}]}`, `"s\"}"`, `[]`}, values)

	for _, notObject := range []string{`[1]`, `"{"`, `1`, ``, `null`} {
		assert.False(t, jsonobj.Each([]byte(notObject), func(jsonobj.Member) bool { return true }), notObject)
	}
	assert.True(t, jsonobj.Each([]byte(`{}`), func(jsonobj.Member) bool { t.Fatal("no member"); return true }))
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
	} {
		assert.Equal(t, tt.is, jsonobj.Member{Name: []byte(tt.tok)}.Is(tt.name), tt.tok)
	}
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

func TestUniqueNames(t *testing.T) {
	for _, tt := range []struct {
		in     string
		unique bool
	}{
		{`{"a":1,"b":2,"A":3}`, true},
		{`{"a":1,"a":2}`, false},
		{`{"a":1,"\u0061":2}`, false},
		{`{"a":{"x":1,"x":2}}`, true}, // only the object's own members
		{`{"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"10":0}`, true},
		{`{"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"3":0}`, false},
		{`{"1":0,"2":0,"3":0,"4":0,"5":0,"6":0,"7":0,"8":0,"9":0,"9":0}`, false},
		{`[1,1]`, true},
		{``, true},
	} {
		assert.Equal(t, tt.unique, jsonobj.UniqueNames([]byte(tt.in)), tt.in)
	}
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

// FuzzEach: on any valid JSON, Each finds the members encoding/json's
// tokenizer finds, with the same names (Is) and values; every string value
// is judged by ExactString as a hand decoder judges it.
func FuzzEach(f *testing.F) {
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
			jsonobj.Each(data, func(m jsonobj.Member) bool { jsonobj.Elements(m.Value, func([]byte) bool { return true }); return true })
			jsonobj.UniqueNames(data)
			return
		}
		names, values, isObject := reference(t, data)
		var got []jsonobj.Member
		if jsonobj.Each(data, func(m jsonobj.Member) bool { got = append(got, m); return true }) != isObject {
			t.Fatalf("Each(%q) says object %v", data, !isObject)
		}
		if len(got) != len(names) {
			t.Fatalf("Each(%q): %d members, the reference %d", data, len(got), len(names))
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
			if m.Value[0] == '"' && jsonobj.ExactString(m.Value) != exactReference(m.Value) {
				t.Fatalf("ExactString(%s) = %v", m.Value, !exactReference(m.Value))
			}
		}
		if isObject && jsonobj.UniqueNames(data) != unique {
			t.Fatalf("UniqueNames(%q) = %v", data, !unique)
		}
	})
}
