// Package jsonobj walks the members of a JSON object and the elements of a
// JSON array without decoding their values, and matches member names
// exactly. The listen parsers use it where encoding/json would not do:
// encoding/json matches struct fields case-insensitively ("METHOD" fills
// Method) and keeps the last of repeated names, so two parsers could read
// one message two ways.
//
// Every function takes valid JSON (check it with json.Valid first): on
// anything else their results are unspecified, but they never panic and
// never read out of bounds.
package jsonobj

import (
	"bytes"
	"encoding/json"
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
func (m Member) Is(name string) bool {
	tok := m.Name
	if len(tok) < 2 {
		return false
	}
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1:len(tok)-1]) == name
	}
	var s string
	return json.Unmarshal(tok, &s) == nil && s == name
}

// Each calls fn for each member of obj in order, until fn returns false. It
// reports whether obj is a JSON object (space around it allowed).
func Each(obj []byte, fn func(Member) bool) bool {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return false
	}
	i = skipSpace(obj, i+1)
	if i < len(obj) && obj[i] == '}' {
		return true
	}
	for i < len(obj) && obj[i] == '"' {
		end := skipString(obj, i)
		name := obj[i:end]
		i = skipSpace(obj, end)
		if i >= len(obj) || obj[i] != ':' {
			return true
		}
		i = skipSpace(obj, i+1)
		vend := skipValue(obj, i)
		if !fn(Member{Name: name, Value: obj[i:vend], Offset: i}) {
			return true
		}
		i = skipSpace(obj, vend)
		if i >= len(obj) || obj[i] != ',' {
			return true
		}
		i = skipSpace(obj, i+1)
	}
	return true
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

// UniqueNames reports whether no member name of obj appears twice (names
// compared once decoded). It is true for anything that is not an object.
func UniqueNames(obj []byte) bool {
	var names Names
	unique := true
	Each(obj, func(m Member) bool {
		unique = names.Add(m.Name)
		return unique
	})
	return unique
}

// Names is a set of member names, to find a repeated one. The zero value
// is empty.
type Names struct {
	small [8]string
	n     int
	more  map[string]struct{}
}

// Add adds the name token tok and reports whether it was new (names
// compared once decoded).
func (ns *Names) Add(tok []byte) bool {
	name := decodeName(tok)
	if ns.more == nil {
		for _, s := range ns.small[:ns.n] {
			if s == name {
				return false
			}
		}
		if ns.n < len(ns.small) {
			ns.small[ns.n] = name
			ns.n++
			return true
		}
		ns.more = make(map[string]struct{}, 2*ns.n)
		for _, s := range ns.small[:ns.n] {
			ns.more[s] = struct{}{}
		}
	}
	if _, dup := ns.more[name]; dup {
		return false
	}
	ns.more[name] = struct{}{}
	return true
}

// decodeName returns a name token's text, decoded when it holds escapes.
func decodeName(tok []byte) string {
	if len(tok) >= 2 && bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1])
	}
	var s string
	_ = json.Unmarshal(tok, &s)
	return s
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
// b[i] (a quote).
func skipString(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
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
