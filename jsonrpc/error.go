package jsonrpc

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcplisten/listen/internal/jsonobj"
)

// JSON-RPC error codes: the five of JSON-RPC 2.0, then the three MCP
// defines in the server range for subscriptions/listen.
const (
	CodeParseError                      = -32700
	CodeInvalidRequest                  = -32600
	CodeMethodNotFound                  = -32601
	CodeInvalidParams                   = -32602
	CodeInternalError                   = -32603
	CodeHeaderMismatch                  = -32020
	CodeMissingRequiredClientCapability = -32021
	CodeUnsupportedProtocolVersion      = -32022
)

// Error is a JSON-RPC error object: what a client sees when a listen request
// fails before or during its stream.
//
// Errors match by code: CodeOf(err) reads it, and errors.Is(err,
// &Error{Code: CodeInvalidParams}) is true for every *Error with code
// -32602, whatever its message. The cause, if any, is kept
// for errors.Is/As and logging but is never written to the wire. Internal
// errors (-32603) never carry data on the wire.
type Error struct {
	Code    int
	Message string
	// Data is optional JSON sent as the error's "data" member.
	Data json.RawMessage
	// cause is private: it explains the error to the server, never the client.
	cause error
}

// CodeOf returns the code of the first *Error in err's chain, or 0 when
// there is none (err is nil, or not a wire error). It is how a caller reads
// the error a listen failed with:
//
//	if jsonrpc.CodeOf(err) == jsonrpc.CodeInvalidParams { ... }
//
// (errors.Is(err, &jsonrpc.Error{Code: c}) says the same: an *Error
// matches every *Error with its code.)
func CodeOf(err error) int {
	var we *Error
	if errors.As(err, &we) {
		return we.Code
	}
	return 0
}

// NewError returns a wire error with the given code and message.
func NewError(code int, message string) *Error {
	return &Error{Code: code, Message: message}
}

// WithCause returns a copy of e that wraps cause. The cause is not sent.
func (e *Error) WithCause(cause error) *Error {
	c := *e
	c.cause = cause
	return &c
}

// WithData returns a copy of e whose "data" member is data encoded as JSON.
// Internal errors (-32603) drop data when written.
func (e *Error) WithData(data any) *Error {
	c := *e
	b, err := json.Marshal(data)
	if err == nil {
		c.Data = b
	}
	return &c
}

func (e *Error) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("jsonrpc error %d: %s: %v", e.Code, e.Message, e.cause)
	}
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// Unwrap returns the private cause.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// MarshalJSON encodes the JSON-RPC error object. Internal errors carry no
// data.
func (e *Error) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64+len(e.Message)+len(e.Data))
	return e.appendJSON(b), nil
}

func (e *Error) appendJSON(b []byte) []byte {
	b = append(b, `{"code":`...)
	b = jsonobj.AppendInt(b, int64(e.Code))
	b = append(b, `,"message":`...)
	b = jsonobj.AppendString(b, e.Message)
	if len(e.Data) > 0 && e.Code != CodeInternalError && json.Valid(e.Data) {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return append(b, '}')
}

// AsError returns err as a wire error. A *Error anywhere in err's chain is
// returned as is; anything else becomes an internal error with the given
// message whose cause is err.
func AsError(err error, internalMessage string) *Error {
	var we *Error
	if errors.As(err, &we) {
		return we
	}
	return NewError(CodeInternalError, internalMessage).WithCause(err)
}

// ErrorResponse returns a JSON-RPC error response for id (without an "id"
// member when id is not Valid: the schema allows no null id). err is sent as is when it is an *Error (or wraps one);
// otherwise it is sent as -32603 "Internal error".
func ErrorResponse(id ID, err error) []byte {
	we := AsError(err, "Internal error")
	b := make([]byte, 0, 64+len(id.raw)+len(we.Message)+len(we.Data))
	b = append(b, `{"jsonrpc":"2.0",`...)
	if id.Valid() {
		b = append(b, `"id":`...)
		b = append(b, id.raw...)
		b = append(b, ',')
	}
	b = append(b, `"error":`...)
	b = we.appendJSON(b)
	return append(b, '}')
}
