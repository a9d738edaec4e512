package listen

import (
	"errors"
	"sync/atomic"

	"github.com/mcplisten/listen/jsonrpc"
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
// (see Ending for its wire form) and closes the subscription with it.
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

// Ending is the wire form of an early ending (Options.Ending). The MCP
// specification says a server that ends a subscription on its own
// initiative SHOULD send the completion result, and has not settled
// whether such an ending is told apart from a graceful one (it is an open
// question), so the library offers both forms, each with the reason:
//
//   - EndWithCompletion (the default): the completion result, resultType
//     "complete", with the reason in its _meta under
//     "io.github.mcplisten/endReason" ("revoked", "expired", "lifetime",
//     "fell_behind"). A client unaware of the key sees a graceful end and
//     opens a new listen, which meets the real answer where it can act on
//     it: a revoked principal is refused by the authentication (401), an
//     expired token is refreshed, a client that fell behind reads the
//     lists again. This is what the specification asks for.
//   - EndWithError: the JSON-RPC error CodeEnded (-32050) with the message
//     "Subscription ended: <why>" and data {"reason": "<reason>"}, for
//     clients that must see the loss of access as an error on the stream
//     itself. ErrLifetime is sent as the completion (with its reason)
//     either way: reaching the lifetime is not an error.
//
// On stdio both forms follow notifications/cancelled for the listen id, as
// in a drain (see the stdio package). ErrShutdown keeps its completion
// result without a reason.
type Ending uint8

const (
	// EndWithCompletion ends with the completion result carrying the
	// reason in _meta["io.github.mcplisten/endReason"].
	EndWithCompletion Ending = iota
	// EndWithError ends with the JSON-RPC error CodeEnded.
	EndWithError
)

// CodeEnded is the JSON-RPC error code of an early ending in the
// EndWithError form: an implementation-defined server error, in the range
// JSON-RPC reserves for them (-32000 to -32099), clear of the codes MCP
// 2026-07-28 uses.
const CodeEnded = -32050

// MetaEndReason is the _meta key of the completion result of an early
// ending (EndWithCompletion, and ErrLifetime in either form): its value is
// the reason's class ("revoked", "expired", "lifetime", "fell_behind").
const MetaEndReason = "io.github.mcplisten/endReason"

// ending is one row of the table of early endings.
type ending struct {
	err   error  // the sentinel
	class string // Classify's class, the wire reason
	msg   string // the EndWithError message
	// complete: always the completion (ErrLifetime).
	complete bool
}

// endings is the table of early endings: one row per reason.
var endings = [...]ending{
	{ErrRevoked, ClassRevoked, "Subscription ended: access revoked", false},
	{ErrExpired, ClassExpired, "Subscription ended: credential expired", false},
	{ErrLifetime, ClassLifetime, "Subscription ended: lifetime reached", true},
	{ErrFellBehind, ClassFellBehind, "Subscription ended: client fell behind", false},
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

// IsEnding reports whether reason is an early ending: it matches
// ErrRevoked, ErrExpired, ErrLifetime or ErrFellBehind.
func IsEnding(reason error) bool { return endingOf(reason) != nil }

// endingMessage returns the terminal message of the early ending e.
func (s *Subscription) endingMessage(e *ending) []byte {
	if s.opts.Ending == EndWithError && !e.complete {
		data := `{"reason":"` + e.class + `"}`
		return jsonrpc.ErrorResponse(s.id, &jsonrpc.Error{Code: CodeEnded, Message: e.msg, Data: []byte(data)})
	}
	return s.completion(e.class)
}

// EndCounts counts the streams a transport's server ended early, one
// counter per reason (each transport's Stats carries one).
type EndCounts struct {
	Revoked    uint64
	Expired    uint64
	Lifetime   uint64
	FellBehind uint64
}

// Add counts reason, if it is an early ending.
func (c *EndCounts) Add(reason error) {
	e := endingOf(reason)
	if e == nil {
		return
	}
	switch e.class {
	case ClassRevoked:
		c.Revoked++
	case ClassExpired:
		c.Expired++
	case ClassLifetime:
		c.Lifetime++
	case ClassFellBehind:
		c.FellBehind++
	}
}

// End ends the stream from the server's side, with reason, which should be
// an early ending (ErrRevoked, ErrExpired, ErrLifetime, ErrFellBehind, or
// an error wrapping one) or ErrShutdown: the stream's driver (Serve, or a
// Poller's transport) writes the terminal message of that reason (the
// ending of Options.Ending, or for ErrShutdown the completion result)
// after the message it is writing, then closes the subscription with
// reason. Any other reason ends the stream with the failure, closed as
// Failed(reason). A stream not yet served is acknowledged first.
//
// End returns at once, from any goroutine; the first End wins, and an End
// after the subscription was closed does nothing. A transport that drives
// the subscription by hand (StartWorker) does not see End.
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

// EndReason returns why the server ended the stream, once it has: the
// early ending or ErrShutdown given to End, or met by the serving state
// machine (the serving context's cause, the source's Next), from the
// moment its terminal message is handed out; nil before, and for an end
// that is not the server's (a completion of the source, a failure, a
// client that left). A transport reads it while writing the terminal
// message (Sink.Final): stdio sends notifications/cancelled first then.
func (s *Subscription) EndReason() error { return s.endReason() }

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
