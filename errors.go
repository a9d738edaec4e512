package listen

import (
	"errors"
	"fmt"

	"github.com/mcplisten/listen/internal/safe"
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
)

// cancelledError is the reason a client cancelled a listen. reason is the
// client's text (the reason of notifications/cancelled), empty when none
// was given.
type cancelledError struct {
	reason string
}

// Cancelled returns the reason for a client cancellation with the client's
// optional explanation (the reason of notifications/cancelled). It matches
// ErrCancelled; its text is "listen: subscription cancelled: " and reason,
// or ErrCancelled's alone for an empty reason.
func Cancelled(reason string) error { return &cancelledError{reason: reason} }

func (e *cancelledError) Error() string {
	if e.reason == "" {
		return ErrCancelled.Error()
	}
	return ErrCancelled.Error() + ": " + e.reason
}

// Is makes errors.Is(err, ErrCancelled) true.
func (e *cancelledError) Is(target error) bool { return target == ErrCancelled }

// disconnectedError is the reason a transport went away. Cause says how (a
// socket error, a write deadline, ErrOwnerGone); errors.Unwrap returns it.
type disconnectedError struct {
	Cause error
}

// Disconnected returns the reason for a lost transport with its cause, which
// may be nil. It matches ErrDisconnected; errors.Unwrap returns the cause.
func Disconnected(cause error) error { return &disconnectedError{Cause: cause} }

func (e *disconnectedError) Error() string {
	if e.Cause == nil {
		return ErrDisconnected.Error()
	}
	return ErrDisconnected.Error() + ": " + e.Cause.Error()
}

// Is makes errors.Is(err, ErrDisconnected) true.
func (e *disconnectedError) Is(target error) bool { return target == ErrDisconnected }

// Unwrap returns the cause.
func (e *disconnectedError) Unwrap() error { return e.Cause }

// failedError is the reason a subscription ended in failure. Err is the
// source's error or the shaping error; errors.Unwrap returns it.
type failedError struct {
	Err error
}

// Failed returns the reason for a failed subscription. It matches
// ErrFailed; errors.Unwrap returns err.
func Failed(err error) error { return &failedError{Err: err} }

func (e *failedError) Error() string {
	if e.Err == nil {
		return ErrFailed.Error()
	}
	return ErrFailed.Error() + ": " + e.Err.Error()
}

// Is makes errors.Is(err, ErrFailed) true.
func (e *failedError) Is(target error) bool { return target == ErrFailed }

// Unwrap returns the underlying error.
func (e *failedError) Unwrap() error { return e.Err }

// Classify sorts a close reason into its class, for logs and metrics:
//
//   - "complete": ErrComplete, a graceful end;
//   - "cancelled": a reason built by Cancelled;
//   - "disconnected": a reason built by Disconnected;
//   - "error": a reason built by Failed;
//   - "revoked", "expired", "lifetime", "fell_behind": the early endings
//     (ErrRevoked, ErrExpired, ErrLifetime, ErrFellBehind), each also the
//     reason its wire form carries (see Options.EndWithError);
//   - "shutdown": ErrShutdown, the server's drain;
//   - "other": nil and any other reason.
func Classify(reason error) string {
	switch {
	case reason == nil:
		return "other"
	case errors.Is(reason, ErrComplete):
		return "complete"
	case errors.Is(reason, ErrShutdown):
		return "shutdown"
	case errors.Is(reason, ErrCancelled):
		return "cancelled"
	case errors.Is(reason, ErrDisconnected):
		return "disconnected"
	case errors.Is(reason, ErrFailed):
		return "error"
	}
	if e := endingOf(reason); e != nil {
		return e.class
	}
	return "other"
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

// catch runs f, a user callback called op, and returns its panic as a
// *PanicError, or nil when f returned (see package internal/safe).
func catch(op string, f func()) *PanicError {
	if p := safe.Call(f); p != nil {
		return &PanicError{Op: op, Value: p.Value, Stack: p.Stack}
	}
	return nil
}
