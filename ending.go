package listen

import (
	"errors"
	"sync/atomic"

	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

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
