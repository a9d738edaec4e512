package jsonobj

import (
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// plainASCII[c] is true for an ASCII byte that stands for itself inside a
// JSON string: not a quote, a backslash or a control character.
var plainASCII = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// maxDecodeDepth is encoding/json's nesting limit, which Decode keeps.
const maxDecodeDepth = 10000

// Decode returns the Go value of the JSON text v as encoding/json decodes
// it into an any with UseNumber: map[string]any, []any, string,
// json.Number, bool or nil, a repeated member name keeping the last value.
// It reports false where encoding/json fails: v is not valid JSON (Valid),
// or it nests deeper than 10,000 levels. So it checks and decodes in one
// pass. It costs no reflection and no decoder: only the values it returns
// (a string token without escapes or non-ASCII bytes is copied as it is;
// any other is decoded by the rules of encoding/json, so that escapes, lone
// surrogates and invalid UTF-8 read exactly as there, with no allocation
// but the result).
func Decode(v []byte) (any, bool) {
	d := decoder{b: v}
	d.i = skipSpace(v, 0)
	val, ok := d.value(0)
	if !ok || skipSpace(v, d.i) != len(v) {
		return nil, false
	}
	return val, true
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
		if !validNumber(tok) {
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
	if i := plainRun(b, start+1); i < len(b) && b[i] == '"' { // no escape, nothing but ASCII
		d.i = i + 1
		return string(b[start+1 : i]), true
	}
	d.i = skipString(b, d.i)
	return unquote(b[start:d.i])
}

// String returns the text of the JSON string token tok, decoded as
// encoding/json decodes it, or false if tok is not one. A token without
// escapes or non-ASCII bytes is copied as it is.
func String(tok []byte) (string, bool) {
	if len(tok) < 2 || tok[0] != '"' {
		return "", false
	}
	if i := plainRun(tok, 1); i == len(tok)-1 && tok[i] == '"' {
		return string(tok[1:i]), true
	}
	return unquote(tok)
}

// plainRun returns the index of the first byte from b[i] on that is not
// plain ASCII (plainASCII), or len(b).
func plainRun(b []byte, i int) int {
	for i+8 <= len(b) && plainASCII[b[i]] && plainASCII[b[i+1]] && plainASCII[b[i+2]] && plainASCII[b[i+3]] &&
		plainASCII[b[i+4]] && plainASCII[b[i+5]] && plainASCII[b[i+6]] && plainASCII[b[i+7]] {
		i += 8
	}
	for i < len(b) && plainASCII[b[i]] {
		i++
	}
	return i
}

// unquote decodes the string token tok (valid JSON) as encoding/json
// does: escapes, a surrogate pair as one rune, a lone surrogate and every
// byte of invalid UTF-8 as U+FFFD. It allocates the result only.
func unquote(tok []byte) (string, bool) {
	b, ok := appendUnquoted(make([]byte, 0, len(tok)), tok)
	return string(b), ok
}

// appendUnquoted appends the text of the string token tok to dst (see
// unquote); false for a token that is not a valid JSON string.
func appendUnquoted(dst, tok []byte) ([]byte, bool) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return dst, false
	}
	in := tok[1 : len(tok)-1]
	for i := 0; i < len(in); {
		c := in[i]
		switch {
		case c == '\\':
			if i+1 >= len(in) {
				return dst, false
			}
			switch e := in[i+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r, ok := hex4(in, i+2)
				if !ok {
					return dst, false
				}
				i += 6
				if utf16.IsSurrogate(r) {
					if r2, ok := hex4(in, i+2); ok && i+1 < len(in) && in[i] == '\\' && in[i+1] == 'u' {
						if pair := utf16.DecodeRune(r, r2); pair != utf8.RuneError {
							dst = utf8.AppendRune(dst, pair)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default:
				return dst, false
			}
			i += 2
		case c < 0x20 || c == '"':
			return dst, false
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(in[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, in[i:i+size]...)
			}
			i += size
		}
	}
	return dst, true
}
