package listen

import (
	"errors"
	"fmt"

	"sync/atomic"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
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
// *PanicError, or nil when f returned (see core.SafeCall).
func catch(op string, f func()) *PanicError {
	if p := core.SafeCall(f); p != nil {
		return &PanicError{Op: op, Value: p.Value, Stack: p.Stack}
	}
	return nil
}

// This file holds the early endings: the server ends a stream on its own
// initiative, before its source or its client does, for a reason the
// client is told. The serving state machine (poller.go) writes them; the
// reasons, their classes and their wire forms are listed here, once.

// Early-ending reasons. Each is itself a close reason (match it with
// errors.Is, or read it with Classify); a reason may wrap one of them
// (fmt.Errorf("%w: ...", ErrRevoked)) to say more to the server. Hand one
// to Subscription.End, return one from a Stream's Next, or end a Serve
// context with one as the cause: the stream's driver writes the ending
// (in the form Options.EndWithError chooses) and closes the subscription
// with it.
var (
	// ErrRevoked: the principal lost access (an Access check refused it,
	// or the application ended its streams by hand).
	ErrRevoked = errors.New("listen: access revoked")
	// ErrExpired: the credential the stream was opened with expired
	// (Request.Expiry).
	ErrExpired = errors.New("listen: credential expired")
	// ErrLifetime: the stream reached its lifetime bound
	// (Options.MaxLifetime). It always ends with the completion result, so
	// that the client opens a new listen.
	ErrLifetime = errors.New("listen: stream lifetime reached")
	// ErrFellBehind: the client read too slowly and its source ended its
	// stream instead of dropping events (hub.EndListener).
	ErrFellBehind = errors.New("listen: client fell behind")
)

// ending is one row of the table of early endings.
type ending struct {
	err   error  // the sentinel
	class string // Classify's class, the wire reason
	msg   string // the message of the error form
	// complete: always the completion (ErrLifetime).
	complete bool
}

// endings is the table of early endings: one row per reason.
var endings = [...]ending{
	{ErrRevoked, "revoked", "Subscription ended: access revoked", false},
	{ErrExpired, "expired", "Subscription ended: credential expired", false},
	{ErrLifetime, "lifetime", "Subscription ended: lifetime reached", true},
	{ErrFellBehind, "fell_behind", "Subscription ended: client fell behind", false},
}

// endingOf returns the row of reason, or nil when it is not an early
// ending.
func endingOf(reason error) *ending {
	if reason == nil {
		return nil
	}
	for i := range endings {
		if errors.Is(reason, endings[i].err) {
			return &endings[i]
		}
	}
	return nil
}

// endingMessage returns the terminal message of the early ending e.
func (s *Subscription) endingMessage(e *ending) []byte {
	if s.opts.EndWithError && !e.complete {
		data := `{"reason":"` + e.class + `"}`
		return jsonrpc.ErrorResponse(s.id, &jsonrpc.Error{Code: spec.CodeEnded, Message: e.msg, Data: []byte(data)})
	}
	return s.completion(e.class)
}

// End ends the stream from the server's side, with reason, which should be
// an early ending (ErrRevoked, ErrExpired, ErrLifetime, ErrFellBehind, or
// an error wrapping one) or ErrShutdown: the stream's driver (Serve, or
// streamhttp's fast path) writes the terminal message of that reason (the
// ending in the form of Options.EndWithError, or for ErrShutdown the
// completion result) after the message it is writing, then closes the
// subscription with reason. Any other reason ends the stream with the failure, closed as
// Failed(reason). A stream not yet served is acknowledged first.
//
// End returns at once, from any goroutine; the first End wins, and an End
// after the subscription was closed does nothing. A subscription driven
// by hand (StartWorker) gets reason as its worker's next outcome, at once
// even while a Next waits in the source; Terminal gives the message to
// write and the reason to close with.
func (s *Subscription) End(reason error) { s.end(reason) }

// end is End; it reports whether this call ended the stream (the first
// End of an open subscription).
func (s *Subscription) end(reason error) bool {
	if reason == nil || s.CloseReason() != nil {
		return false
	}
	if !s.ending.CompareAndSwap(nil, &reason) {
		return false
	}
	s.guard.mu.Lock()
	wake := s.wake
	s.guard.mu.Unlock()
	if wake != nil {
		wake()
	}
	return true
}

// setWake registers the driver's wake-up for End: before the driver's
// first pull, which consults the reason End stored first (so an End either
// finds the wake-up, or is seen by that pull).
func (s *Subscription) setWake(wake func()) {
	s.guard.mu.Lock()
	s.wake = wake
	s.guard.mu.Unlock()
}

// endReason returns the reason given to End, or nil.
func (s *Subscription) endReason() error {
	if r := s.ending.Load(); r != nil {
		return *r
	}
	return nil
}

// endState is the part of a Subscription that End uses: the reason, read
// by the driver before each pull, and the function that wakes the driver
// (set when serving starts; guarded by guard.mu).
type endState struct {
	ending atomic.Pointer[error]
	wake   func()
}
