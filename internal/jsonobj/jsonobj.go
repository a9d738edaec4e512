// Package jsonobj reads and writes JSON text for the listen packages. It
// walks the members of a JSON object and the elements of a
// JSON array without decoding their values, and matches member names
// exactly. The listen parsers use it where encoding/json would not do:
// encoding/json matches struct fields case-insensitively ("METHOD" fills
// Method) and keeps the last of repeated names, so two parsers could read
// one message two ways.
//
// Every function but Valid, Decode and String takes valid JSON (check it
// with Valid first): on anything else their results are unspecified, but
// they never panic and never read out of bounds. Those three check what
// they read.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// Member is one member of a JSON object.
type Member struct {
	// Name is the member name's JSON string token, quotes and escapes
	// included.
	Name []byte
	// Value is the member value's JSON text, without surrounding space.
	Value []byte
	// Offset is the index of Value in the object's text.
	Offset int
}

// Is reports whether the member's name is name exactly, once its escapes
// are decoded ("\u006dethod" is "method"; "Method" is not).
func (m Member) Is(name string) bool { return m.Which(name) == 0 }

// Which returns the index of the first of names that the member's name is
// (see Is), or -1. It decodes the name once, and not at all when its token
// is too long to spell any of names (an escape spells at least one byte in
// at most six), so that a client's long or escaped names cost no more than
// one scan.
func (m Member) Which(names ...string) int {
	tok := m.Name
	if len(tok) < 2 {
		return -1
	}
	longest := 0
	for _, name := range names {
		longest = max(longest, len(name))
	}
	if len(tok)-2 > 6*longest {
		return -1
	}
	if plain(tok) {
		for i, name := range names {
			if string(tok[1:len(tok)-1]) == name {
				return i
			}
		}
		return -1
	}
	var buf [64]byte
	s, ok := appendUnquoted(buf[:0], tok)
	if !ok {
		return -1
	}
	for i, name := range names {
		if string(s) == name {
			return i
		}
	}
	return -1
}

// plain reports whether the string token tok decodes to the bytes between
// its quotes: no escape, valid UTF-8.
func plain(tok []byte) bool {
	return bytes.IndexByte(tok, '\\') < 0 && utf8.Valid(tok)
}

// Each calls fn for each member of obj in order, until fn returns false,
// and reports whether obj is a JSON object (space around it allowed). It
// allocates nothing.
func Each(obj []byte, fn func(Member) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	for i < len(obj) && obj[i] == '"' {
		end := skipString(obj, i)
		name := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			break
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		if !fn(Member{Name: name, Value: obj[i:vend], Offset: i}) {
			break
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			break
		}
		i = skipSpace(obj, i+1)
	}
	return true
}

// Lookup walks the members of obj, keeping none but those named names: it
// returns them in the order of names (a zero Member, Value nil, for a
// missing one), whether none of those names appears more than once
// (unique), and whether obj is a JSON object. It allocates only the
// result, so that an object of many members costs one scan.
func Lookup(obj []byte, names ...string) (found []Member, unique, isObject bool) {
	found = make([]Member, len(names))
	unique = true
	isObject = Each(obj, func(m Member) bool {
		if i := m.Which(names...); i >= 0 {
			if found[i].Value != nil {
				unique = false
				return false
			}
			found[i] = m
		}
		return true
	})
	return found, unique, isObject
}

// Elements calls fn for each element of arr in order, until fn returns
// false. It reports whether arr is a JSON array.
func Elements(arr []byte, fn func(elem []byte) bool) bool {
	i := skipSpace(arr, 0)
	if i >= len(arr) || arr[i] != '[' {
		return false
	}
	i = skipSpace(arr, i+1)
	if i < len(arr) && arr[i] == ']' {
		return true
	}
	for i < len(arr) {
		end := skipValue(arr, i)
		if end == i || !fn(arr[i:end]) {
			return true
		}
		i = skipSpace(arr, end)
		if i >= len(arr) || arr[i] != ',' {
			return true
		}
		i = skipSpace(arr, i+1)
	}
	return true
}

// ExactStrings reports whether every JSON string in text, the JSON text
// of a value, decodes to exactly the text it spells (see ExactString).
// It is a quick check: false may also mean that text needs a closer look
// (it holds an escape \u, or invalid UTF-8 outside its strings).
func ExactStrings(text []byte) bool {
	return !bytes.Contains(text, []byte(`\u`)) && utf8.Valid(text)
}

// ExactString reports whether the JSON string token tok decodes to exactly
// the text it spells: valid UTF-8, and every \u escape of a UTF-16
// surrogate part of a pair. encoding/json decodes a lone surrogate
// ("\ud800") and invalid UTF-8 to U+FFFD, so two such strings would decode
// alike, and alike with "\ufffd" itself.
func ExactString(tok []byte) bool {
	if !utf8.Valid(tok) {
		return false
	}
	for i := 0; i < len(tok); i++ {
		if tok[i] != '\\' {
			continue
		}
		i++
		if i >= len(tok) || tok[i] != 'u' {
			continue // a one-letter escape; skip the letter
		}
		r, ok := hex4(tok, i+1)
		i += 4
		switch {
		case !ok:
			return false
		case r >= 0xDC00 && r <= 0xDFFF:
			return false // a low surrogate without its high one
		case r >= 0xD800 && r <= 0xDBFF:
			lo, ok := hex4(tok, i+3)
			if i+2 >= len(tok) || tok[i+1] != '\\' || tok[i+2] != 'u' || !ok || lo < 0xDC00 || lo > 0xDFFF {
				return false
			}
			i += 6
		}
	}
	return true
}

// hex4 reads the four hex digits at b[i:i+4].
func hex4(b []byte, i int) (rune, bool) {
	if i < 0 || i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index just past the string token starting at
// b[i] (a quote): at the first quote not escaped by an odd run of
// backslashes.
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		q := bytes.IndexByte(b[i:], '"')
		if q < 0 {
			return len(b)
		}
		i += q
		n := 0
		for j := i - 1; j >= 0 && b[j] == '\\'; j-- {
			n++
		}
		if n%2 == 0 {
			return i + 1
		}
	}
	return len(b)
}

// skipValue returns the index just past the value starting at b[i].
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default: // a number, true, false or null
		for i < len(b) {
			switch b[i] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return i
			}
			i++
		}
		return i
	}
}

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

// Valid reports whether b is valid JSON exactly as encoding/json's Valid
// does (its grammar; bytes of invalid UTF-8 inside strings allowed; at most
// 10,000 levels of nesting), several times faster on the long strings of a
// listen request (runs of plain string bytes are skipped through a table).
func Valid(b []byte) bool {
	v := validator{b: b}
	v.i = skipSpace(b, 0)
	if !v.value(0) {
		return false
	}
	return skipSpace(b, v.i) == len(b)
}

type validator struct {
	b []byte
	i int
}

// stringByte[c] is true for a byte that stands for itself inside a JSON
// string: not a quote, a backslash or a control character.
var stringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (v *validator) value(depth int) bool {
	b := v.b
	if v.i >= len(b) {
		return false
	}
	switch c := b[v.i]; c {
	case '{':
		if depth++; depth > maxDecodeDepth {
			return false
		}
		v.i = skipSpace(b, v.i+1)
		if v.i < len(b) && b[v.i] == '}' {
			v.i++
			return true
		}
		for {
			if v.i >= len(b) || b[v.i] != '"' || !v.string() {
				return false
			}
			v.i = skipSpace(b, v.i)
			if v.i >= len(b) || b[v.i] != ':' {
				return false
			}
			v.i = skipSpace(b, v.i+1)
			if !v.value(depth) {
				return false
			}
			v.i = skipSpace(b, v.i)
			if v.i >= len(b) {
				return false
			}
			switch b[v.i] {
			case ',':
				v.i = skipSpace(b, v.i+1)
			case '}':
				v.i++
				return true
			default:
				return false
			}
		}
	case '[':
		if depth++; depth > maxDecodeDepth {
			return false
		}
		v.i = skipSpace(b, v.i+1)
		if v.i < len(b) && b[v.i] == ']' {
			v.i++
			return true
		}
		for {
			if !v.value(depth) {
				return false
			}
			v.i = skipSpace(b, v.i)
			if v.i >= len(b) {
				return false
			}
			switch b[v.i] {
			case ',':
				v.i = skipSpace(b, v.i+1)
			case ']':
				v.i++
				return true
			default:
				return false
			}
		}
	case '"':
		return v.string()
	case 't':
		return v.literal("true")
	case 'f':
		return v.literal("false")
	case 'n':
		return v.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			return v.number()
		}
		return false
	}
}

// string checks the string token at v.i (a quote) and moves past it.
func (v *validator) string() bool {
	b := v.b
	i := v.i + 1
	for {
		for i+8 <= len(b) && stringByte[b[i]] && stringByte[b[i+1]] && stringByte[b[i+2]] && stringByte[b[i+3]] &&
			stringByte[b[i+4]] && stringByte[b[i+5]] && stringByte[b[i+6]] && stringByte[b[i+7]] {
			i += 8
		}
		for i < len(b) && stringByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '"':
			v.i = i + 1
			return true
		case '\\':
			if i+1 >= len(b) {
				return false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if _, ok := hex4(b, i+2); !ok {
					return false
				}
				i += 6
			default:
				return false
			}
		default: // a control character
			return false
		}
	}
}

func (v *validator) literal(word string) bool {
	if len(v.b)-v.i < len(word) || string(v.b[v.i:v.i+len(word)]) != word {
		return false
	}
	v.i += len(word)
	return true
}

// number checks the number at v.i: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (v *validator) number() bool {
	b, i := v.b, v.i
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return false
		}
		i = j
	}
	v.i = i
	return true
}

// validNumber reports whether tok is exactly one JSON number.
func validNumber(tok []byte) bool {
	if len(tok) == 0 || (tok[0] != '-' && (tok[0] < '0' || tok[0] > '9')) {
		return false
	}
	v := validator{b: tok}
	return v.number() && v.i == len(tok)
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// AppendInt appends n as a JSON integer.
func AppendInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

const hexDigits = "0123456789abcdef"

// AppendString appends s as a JSON string. It escapes quotes, backslashes,
// control characters, U+2028 and U+2029, and replaces invalid UTF-8 with
// U+FFFD. Unlike encoding/json it does not escape <, > and &.
func AppendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plainASCII[s[i]] && plainASCII[s[i+1]] && plainASCII[s[i+2]] && plainASCII[s[i+3]] &&
			plainASCII[s[i+4]] && plainASCII[s[i+5]] && plainASCII[s[i+6]] && plainASCII[s[i+7]] {
			i += 8
		}
		for i < len(s) && plainASCII[s[i]] {
			i++
		}
		if i == len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// ValidNumber reports whether s is a JSON number literal.
func ValidNumber(s string) bool {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
	}
	return i == len(s)
}
