package jsonrpc

import (
	"bytes"
	"encoding/json"

	"unicode/utf8"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/jsonobj"
)

// Message is one decoded JSON-RPC message, before it is known to be a
// listen request. Transports use it to route messages.
type Message struct {
	// ID is the request id; invalid for notifications.
	ID ID
	// HasID reports whether the message had an "id" member at all.
	HasID  bool
	Method string
	Params json.RawMessage
}

// envelope lists the member names of a JSON-RPC message; ParseMessage
// reads their values in this order.
var envelope = [...]string{"jsonrpc", "id", "method", "params", "result", "error"}

// idTooLarge returns the -32600 error for a message whose id is longer
// than max bytes (zero or less: 256), answered without an id: an id that
// long is not repeated.
func idTooLarge(max int) *Error {
	return NewError(CodeInvalidRequest, core.IDTooLarge(max))
}

// ParseMessage is ParseMessageMaxID with the default bound of 256 bytes.
func ParseMessage(data []byte) (Message, error) {
	return ParseMessageMaxID(data, core.DefaultMaxIDBytes)
}

// ParseMessageMaxID decodes one JSON-RPC request or notification. It returns a
// -32700 *Error for malformed JSON and a -32600 *Error for a message that is
// not a valid request or notification (the returned Message then still holds
// the id when it could be read, so the error can echo it).
//
// Member names are matched exactly, as JSON-RPC defines them: "METHOD" is
// not "method" (encoding/json would take it for one), and an escaped name
// is read decoded ("\u006dethod" is "method"). A message that repeats one
// of the members jsonrpc, id, method, params, result or error is refused
// with -32600 "Invalid request: a JSON-RPC member is repeated": JSON parsers disagree on which of the two
// counts (most take the last, some the first), and a message read one way
// here and another way by a gateway or an SDK behind the same endpoint
// must not be served. Other members are ignored.
//
// An id whose JSON token is longer than maxIDBytes (zero or less: 256,
// which real clients never come near: a UUID is 38 bytes with its quotes;
// spaces around the token not counted) is refused with -32600 "Invalid
// request: id must be at most <max> bytes", before it is decoded; the returned Message then has
// HasID set but no ID, so that the error response carries no id (the
// schema's error response without one): a transport never keeps nor
// repeats an id over the bound.
func ParseMessageMaxID(data []byte, maxIDBytes int) (Message, error) {
	if !jsonobj.Valid(data) {
		return Message{}, NewError(CodeParseError, "Parse error")
	}
	var values [len(envelope)][]byte
	unique := true
	isObject := jsonobj.Each(data, func(m jsonobj.Member) bool {
		if i := m.Which(envelope[:]...); i >= 0 {
			unique = values[i] == nil
			values[i] = m.Value
		}
		return unique
	})
	version, id, method, params := values[0], values[1], values[2], values[3]
	if !isObject && string(bytes.TrimSpace(data)) != "null" {
		// null decodes as an empty object, missing every member.
		return Message{}, NewError(CodeInvalidRequest, "Invalid request: expected a JSON-RPC object")
	}
	if !unique {
		return Message{}, NewError(CodeInvalidRequest, core.DuplicateMember)
	}
	var m Message
	if id != nil {
		m.HasID = true
		if core.IDTooLong(id, maxIDBytes) {
			return m, idTooLarge(maxIDBytes)
		}
		v, ok := ParseID(id)
		if !ok {
			return m, NewError(CodeInvalidRequest, "Invalid request: id must be a string or an integer")
		}
		m.ID = v
	}
	if v, _ := jsonobj.String(version); v != "2.0" {
		return m, NewError(CodeInvalidRequest, `Invalid request: jsonrpc must be "2.0"`)
	}
	if m.Method, _ = jsonobj.String(method); m.Method == "" {
		return m, NewError(CodeInvalidRequest, "Invalid request: method must be a non-empty string")
	}
	if params != nil {
		m.Params = bytes.Clone(params) // the caller may reuse data
	}
	return m, nil
}

// ID is a JSON-RPC request id: a JSON string or integer, kept as its exact
// JSON token so that it is echoed with its type (a string stays a string, an
// integer an integer). The zero ID is invalid. IDs are comparable. An ID
// holds a copy of its token, made when it was parsed or built: it keeps no
// byte of the message it came from.
type ID struct {
	raw string
}

// StringID returns the id "s".
func StringID(s string) ID { return ID{raw: string(jsonobj.AppendString(nil, s))} }

// IntID returns the integer id n.
func IntID(n int64) ID { return ID{raw: string(jsonobj.AppendInt(nil, n))} }

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
	if !jsonobj.ValidNumber(string(raw)) || bytes.ContainsAny(raw, ".eE") {
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
