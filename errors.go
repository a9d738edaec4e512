package listen

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
)

// JSON-RPC and MCP error codes used by subscriptions/listen.
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
// Errors match by code: errors.Is(err, ErrInvalidParams) is true for every
// *Error with code -32602, whatever its message. The cause, if any, is kept
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

// Sentinel wire errors, for matching with errors.Is. Do not return them as is:
// build an *Error with a message (NewError).
var (
	ErrParse                           = &Error{Code: CodeParseError}
	ErrInvalidRequest                  = &Error{Code: CodeInvalidRequest}
	ErrMethodNotFound                  = &Error{Code: CodeMethodNotFound}
	ErrInvalidParams                   = &Error{Code: CodeInvalidParams}
	ErrInternal                        = &Error{Code: CodeInternalError}
	ErrHeaderMismatch                  = &Error{Code: CodeHeaderMismatch}
	ErrMissingRequiredClientCapability = &Error{Code: CodeMissingRequiredClientCapability}
	ErrUnsupportedProtocolVersion      = &Error{Code: CodeUnsupportedProtocolVersion}
)

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
	b = appendInt(b, int64(e.Code))
	b = append(b, `,"message":`...)
	b = appendString(b, e.Message)
	if len(e.Data) > 0 && e.Code != CodeInternalError && json.Valid(e.Data) {
		b = append(b, `,"data":`...)
		b = append(b, e.Data...)
	}
	return append(b, '}')
}

// UnsupportedVersionError returns the -32022 error for a request naming a
// protocol version the server does not speak, with data.supported and
// data.requested (UnsupportedProtocolVersionError in the schema). A nil
// supported list means SupportedProtocolVersions.
func UnsupportedVersionError(supported []string, requested string) *Error {
	if supported == nil {
		supported = SupportedProtocolVersions
	}
	return NewError(CodeUnsupportedProtocolVersion, MsgUnsupportedVersion).
		WithData(map[string]any{"supported": supported, "requested": requested})
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

// Messages of the internal errors the core produces. They are exact: clients
// and tests may compare them.
const (
	MsgSourceFailed         = "Subscription source failed"
	MsgSourceFailedToOpen   = "Subscription source failed to open"
	MsgInvalidOpenResult    = "Subscription source returned an invalid open result"
	MsgSourceOverclaimed    = "Subscription source accepted notifications not requested"
	MsgCapacityExhausted    = "Server subscription capacity exhausted"
	MsgNoShaping            = "Protocol does not implement subscription wire shaping"
	MsgInvalidMessage       = "Protocol produced an invalid subscription message"
	MsgShapingFailed        = "Protocol failed to shape a subscription message"
	MsgExtNonJSONFilter     = "Extension returned a non-JSON subscription filter"
	MsgExtUnrequested       = "Extension accepted subscription filters not requested"
	MsgExtInvalidFilter     = "Extension returned an invalid subscription filter"
	MsgExtCallbackPanicked  = "Extension callback raised"
	MsgExtFiltersCollide    = "Extension subscription filters collide"
	MsgExtCollideWithCore   = "Extension subscription filters collide with core"
	MsgExtNonJSONEvent      = "Extension shaped a non-JSON subscription event"
	MsgExtInvalidEvent      = "Extension shaped an invalid subscription event"
	MsgDuplicateID          = "Duplicate in-flight request id"
	MsgMethodNotFoundListen = "Method not found: subscriptions/listen"
	MsgUnsupportedVersion   = "Unsupported protocol version"
)

// Close reasons. A reason is an error value handed to Stream.Close and to
// Subscription.Close; match it with errors.Is against these sentinels, or
// read it with Classify.
var (
	// ErrComplete is the reason for a graceful end: the source ended its
	// stream, or the server completed the subscription. It is itself a reason.
	ErrComplete = errors.New("listen: subscription complete")
	// ErrCancelled matches reasons built by Cancelled: the client asked to end
	// the listen (stdio notifications/cancelled, a direct close).
	ErrCancelled = errors.New("listen: subscription cancelled")
	// ErrDisconnected matches reasons built by Disconnected: the transport
	// went away (HTTP client disconnect, stdio EOF, failed write).
	ErrDisconnected = errors.New("listen: client disconnected")
	// ErrOwnerGone is the cause of a Disconnected reason used when the
	// subscription's owner context ended before the subscription was closed.
	ErrOwnerGone = errors.New("listen: owner went away")
	// ErrFailed matches reasons built by Failed: the source or the shaping of
	// a message failed.
	ErrFailed = errors.New("listen: subscription failed")
	// ErrShutdown is the reason used when the server drains its streams.
	ErrShutdown = errors.New("listen: server shutdown")
	// ErrOverloaded is wrapped in a Failed reason when a transport refuses a
	// listen because it is at capacity.
	ErrOverloaded = errors.New("listen: server subscription capacity exhausted")
	// ErrClosed is what Stream.Next returns when the stream ended gracefully
	// (or was closed). Sources may also return io.EOF; both mean "closed".
	ErrClosed = errors.New("listen: stream closed")
	// ErrInvalidNext is wrapped in the error outcome of a Next that returned
	// neither an event nor an error.
	ErrInvalidNext = errors.New("listen: source returned an invalid next result")
)

// CancelledError is the reason a client cancelled a listen. Reason is the
// client's text (the reason of notifications/cancelled), empty when none was
// given.
type CancelledError struct {
	Reason string
}

// Cancelled returns the reason for a client cancellation with the client's
// optional explanation.
func Cancelled(reason string) error { return &CancelledError{Reason: reason} }

func (e *CancelledError) Error() string {
	if e.Reason == "" {
		return ErrCancelled.Error()
	}
	return ErrCancelled.Error() + ": " + e.Reason
}

// Is makes errors.Is(err, ErrCancelled) true.
func (e *CancelledError) Is(target error) bool { return target == ErrCancelled }

// DisconnectedError is the reason a transport went away. Cause says how: a
// socket error, a write deadline, or ErrOwnerGone.
type DisconnectedError struct {
	Cause error
}

// Disconnected returns the reason for a lost transport with its cause, which
// may be nil.
func Disconnected(cause error) error { return &DisconnectedError{Cause: cause} }

func (e *DisconnectedError) Error() string {
	if e.Cause == nil {
		return ErrDisconnected.Error()
	}
	return ErrDisconnected.Error() + ": " + e.Cause.Error()
}

// Is makes errors.Is(err, ErrDisconnected) true.
func (e *DisconnectedError) Is(target error) bool { return target == ErrDisconnected }

// Unwrap returns the cause.
func (e *DisconnectedError) Unwrap() error { return e.Cause }

// FailedError is the reason a subscription ended in failure. Err is the
// source's error or the shaping error.
type FailedError struct {
	Err error
}

// Failed returns the reason for a failed subscription.
func Failed(err error) error { return &FailedError{Err: err} }

func (e *FailedError) Error() string {
	if e.Err == nil {
		return ErrFailed.Error()
	}
	return ErrFailed.Error() + ": " + e.Err.Error()
}

// Is makes errors.Is(err, ErrFailed) true.
func (e *FailedError) Is(target error) bool { return target == ErrFailed }

// Unwrap returns the underlying error.
func (e *FailedError) Unwrap() error { return e.Err }

// Reason classes returned by Classify.
const (
	ClassComplete     = "complete"
	ClassCancelled    = "cancelled"
	ClassDisconnected = "disconnected"
	ClassError        = "error"
	ClassOther        = "other"
)

// Classify sorts a close reason into one of the Class constants, for logs and
// metrics. ErrShutdown and unknown reasons are ClassOther.
func Classify(reason error) string {
	switch {
	case reason == nil:
		return ClassOther
	case errors.Is(reason, ErrComplete):
		return ClassComplete
	case errors.Is(reason, ErrCancelled):
		return ClassCancelled
	case errors.Is(reason, ErrDisconnected):
		return ClassDisconnected
	case errors.Is(reason, ErrFailed):
		return ClassError
	default:
		return ClassOther
	}
}

// PanicError is the error a recovered panic in a Source or Extension callback
// turns into. The host keeps running.
type PanicError struct {
	// Op names the callback that panicked, such as "Source.Next".
	Op    string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("listen: panic in %s: %v", e.Op, e.Value)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

func newPanicError(op string, v any) *PanicError {
	return &PanicError{Op: op, Value: v, Stack: debug.Stack()}
}
