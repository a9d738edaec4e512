package jsonrpc

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/mcplisten/listen/internal/jsonenc"
)

// ID is a JSON-RPC request id: a JSON string or integer, kept as its exact
// JSON token so that it is echoed with its type (a string stays a string, an
// integer an integer). The zero ID is invalid. IDs are comparable.
type ID struct {
	raw string
}

// StringID returns the id "s".
func StringID(s string) ID { return ID{raw: string(jsonenc.AppendString(nil, s))} }

// IntID returns the integer id n.
func IntID(n int64) ID { return ID{raw: string(jsonenc.AppendInt(nil, n))} }

// ParseID reads a JSON-RPC id token. It accepts a JSON string (valid UTF-8)
// or an integer literal; null, fractions, exponents and other values are
// refused. The token is kept exactly: ids compare by their JSON text.
func ParseID(raw []byte) (ID, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return ID{}, false
	}
	if raw[0] == '"' {
		// The token is kept as it came, escapes included, so that two ids
		// differ exactly when their tokens differ ("\ud800" is not
		// "\udfff", although both decode to U+FFFD). Invalid UTF-8 is
		// refused: it could not be echoed as valid JSON text.
		var s string
		if !utf8.Valid(raw) || json.Unmarshal(raw, &s) != nil {
			return ID{}, false
		}
		return ID{raw: string(raw)}, true
	}
	if !jsonenc.ValidNumber(string(raw)) || bytes.ContainsAny(raw, ".eE") {
		return ID{}, false
	}
	return ID{raw: string(raw)}, true
}

// Valid reports whether id is set.
func (id ID) Valid() bool { return id.raw != "" }

// isString reports whether the id is a JSON string.
func (id ID) isString() bool { return len(id.raw) > 0 && id.raw[0] == '"' }

// Raw returns the id's JSON token, such as `"listen-1"` or `7`.
func (id ID) Raw() string { return id.raw }

// String returns the id for humans: the string's value, or the integer.
func (id ID) String() string {
	if id.isString() {
		var s string
		_ = json.Unmarshal([]byte(id.raw), &s)
		return s
	}
	return id.raw
}

// MarshalJSON returns the id's JSON token (null for the zero ID).
func (id ID) MarshalJSON() ([]byte, error) {
	if id.raw == "" {
		return []byte("null"), nil
	}
	return []byte(id.raw), nil
}

// UnmarshalJSON reads a string or integer id.
func (id *ID) UnmarshalJSON(b []byte) error {
	v, ok := ParseID(b)
	if !ok {
		return NewError(CodeInvalidRequest, "JSON-RPC request id must be a string or an integer")
	}
	*id = v
	return nil
}
