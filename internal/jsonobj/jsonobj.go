// Package jsonobj walks the members of a JSON object and the elements of a
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
