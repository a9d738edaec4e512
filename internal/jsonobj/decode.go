package jsonobj

import (
	"encoding/json"
	"unicode/utf8"
)

// maxDecodeDepth is encoding/json's nesting limit, which Decode keeps.
const maxDecodeDepth = 10000

// Decode returns the Go value of the valid JSON text v as encoding/json
// decodes it into an any with UseNumber: map[string]any, []any, string,
// json.Number, bool or nil, a repeated member name keeping the last value.
// It reports false where encoding/json fails on valid JSON: nesting deeper
// than 10,000 levels. It costs no reflection and no decoder: only the
// values it returns (a string token without escapes or non-ASCII bytes is
// copied as it is; any other is unquoted by encoding/json, so that
// escapes, lone surrogates and invalid UTF-8 read exactly as there).
func Decode(v []byte) (any, bool) {
	d := decoder{b: v}
	d.i = skipSpace(v, 0)
	return d.value(0)
}

type decoder struct {
	b []byte
	i int
}

func (d *decoder) value(depth int) (any, bool) {
	b := d.b
	if d.i >= len(b) {
		return nil, false
	}
	switch b[d.i] {
	case '{':
		if depth++; depth > maxDecodeDepth {
			return nil, false
		}
		m := make(map[string]any)
		d.i = skipSpace(b, d.i+1)
		if d.i < len(b) && b[d.i] == '}' {
			d.i++
			return m, true
		}
		for d.i < len(b) {
			name, ok := d.string()
			if !ok {
				return nil, false
			}
			d.i = skipSpace(b, d.i)
			if d.i >= len(b) || b[d.i] != ':' {
				return nil, false
			}
			d.i = skipSpace(b, d.i+1)
			val, ok := d.value(depth)
			if !ok {
				return nil, false
			}
			m[name] = val
			d.i = skipSpace(b, d.i)
			if d.i < len(b) && b[d.i] == ',' {
				d.i = skipSpace(b, d.i+1)
				continue
			}
			if d.i < len(b) && b[d.i] == '}' {
				d.i++
				return m, true
			}
			return nil, false
		}
		return nil, false
	case '[':
		if depth++; depth > maxDecodeDepth {
			return nil, false
		}
		a := []any{}
		d.i = skipSpace(b, d.i+1)
		if d.i < len(b) && b[d.i] == ']' {
			d.i++
			return a, true
		}
		for d.i < len(b) {
			val, ok := d.value(depth)
			if !ok {
				return nil, false
			}
			a = append(a, val)
			d.i = skipSpace(b, d.i)
			if d.i < len(b) && b[d.i] == ',' {
				d.i = skipSpace(b, d.i+1)
				continue
			}
			if d.i < len(b) && b[d.i] == ']' {
				d.i++
				return a, true
			}
			return nil, false
		}
		return nil, false
	case '"':
		return d.string()
	}
	start := d.i
	d.i = skipValue(b, d.i)
	switch tok := b[start:d.i]; string(tok) {
	case "true":
		return true, true
	case "false":
		return false, true
	case "null":
		return nil, true
	default:
		if len(tok) == 0 {
			return nil, false
		}
		return json.Number(tok), true
	}
}

// string decodes the string token at d.i.
func (d *decoder) string() (string, bool) {
	b := d.b
	if d.i >= len(b) || b[d.i] != '"' {
		return "", false
	}
	start := d.i
	d.i = skipString(b, d.i)
	tok := b[start:d.i]
	if len(tok) < 2 {
		return "", false
	}
	inner := tok[1 : len(tok)-1]
	simple := true
	for _, c := range inner {
		if c == '\\' || c >= utf8.RuneSelf {
			simple = false
			break
		}
	}
	if simple {
		return string(inner), true
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return "", false
	}
	return s, true
}
