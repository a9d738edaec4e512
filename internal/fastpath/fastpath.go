// Package fastpath serves many listen streams from a few goroutines, with
// none per idle stream: the fast path of streamhttp's taken-over HTTP/1.x
// connections (Linux; elsewhere New returns nil and every stream keeps a
// goroutine of its own).
//
// Its interface to the rest of the module is small:
//
//   - Poller, Step and Attach: the core's serving state machine of one
//     subscription (package listen sets Attach when it is initialised, so
//     the core exports nothing for this path);
//   - New, Fanout.Stream, Stream.Run, Stream.Cancel, Stream.Cause and
//     Fanout.Wait: what the transport calls (Fanout.Count and Fanout.Trips
//     are for its tests);
//   - a Stream is a core.Offerer: the hub offers it a plain list change
//     (no scope, params or metadata) while its listener is armed, and the
//     stream's loop writes it from ListChanged and the subscription id
//     with no round through the Poller and the listener, the floor's cost
//     per stream. Anything else that wakes the stream (an event handed
//     over, an end, a keep-alive) sends its next pump through the Poller,
//     which takes a pending offered change before pulling.
//
// The transport frames messages (Options' prefix, suffix and keep-alive
// frame), decides what ends a stream (Cancel) and what its end does
// (Options.Done); the fanout writes, watches for the client's end and
// keeps the stream alive. Its writes are syscall.Write on the socket's
// descriptor (one non-blocking write(2); package syscall's Write, not
// RawSyscall, so the runtime knows the thread is in a system call).
package fastpath

import (
	"errors"
	"time"
)

// Step is what a Poller asks its driver to do next.
type Step uint8

const (
	// StepWait: nothing to write now; take the next step once notify (given
	// to Attach) was called.
	StepWait Step = iota
	// StepWrite: write the message (the acknowledgement, a notification or
	// the terminal message), then report the result with Written.
	StepWrite
	// StepDone: the subscription is closed; nothing more to write.
	StepDone
)

// Poller is the serving state machine of one subscription: the rules of a
// listen stream (the acknowledgement first, one pull after it and after
// each written or dropped event, the transport's end checked before and
// after each pull, one terminal message, one close with its reason). It is
// used by one goroutine at a time (its owner may change between calls
// ordered by happens-before) and never blocks.
//
// Next appends the message of a StepWrite to dst and returns it; for
// StepWait and StepDone it returns dst unchanged. After a StepWrite the
// next call is Written, with the result of writing the message: an error
// closes the subscription as listen.Disconnected(err). The Next right after
// a Written(nil) may answer StepWait without looking at the stream (it
// armed notify when it handed out its last queued event): a notify that
// came before that Next must still lead to another Next, so a driver
// forgets notifications only before a Next that follows a StepWait.
type Poller interface {
	Next(dst []byte) (Step, []byte)
	Written(err error)
}

// Attach returns the Poller of sub, a *listen.Subscription; package listen
// sets it when it is initialised. It reports false, having registered
// nothing, when sub cannot be served without a goroutine of its own (its
// stream is not a listen.NotifyStream, or shaping an event may call a
// policy that can take its time). notify is registered with the stream
// (listen.NotifyStream.SetNotify): it is called when an event may be ready
// or the stream may have ended, on the goroutine of a publisher or of a
// Close, and must not block. ended reports the transport's end: nil while
// the stream goes on, then the cause, by which the Poller ends the stream
// as listen.Subscription.Serve ends it for its context's cause (a cause
// that is not one of the core's reasons closes it as
// listen.Disconnected(cause)). Call notify once ended starts reporting a
// cause. ended may be nil (the transport never ends a stream).
var Attach func(sub any, notify func(), ended Ender) (Poller, bool)

// ListChanged holds, for each list-change kind (a listen.Kind), the start
// of its notification up to the subscription id: a stream that was offered
// one (core.Offerer) writes this, the id, then "}}}". Package listen sets
// it when it is initialised.
var ListChanged [8][]byte

// Ender reports the transport's end of a stream: nil while it goes on,
// then the cause. A *Stream is one (its Cause), so the Poller reaches it
// without a closure of its own.
type Ender interface{ Cause() error }

// EndFunc is a function used as an Ender.
type EndFunc func() error

// Cause returns f().
func (f EndFunc) Cause() error { return f() }

// Options configure a Fanout.
type Options struct {
	// KeepAlive is how long a stream may go without a write before
	// KeepAliveFrame is written to it; WriteTimeout bounds each write that
	// has to wait for the socket. Both are positive.
	KeepAlive, WriteTimeout time.Duration
	// A message is written as Prefix, the message with Clean applied to
	// it in place (if set), and Suffix. KeepAliveFrame is written as is.
	Prefix, Suffix, KeepAliveFrame []byte
	Clean                          func(msg []byte)
	// UnexpectedBytes is the cause a stream is ended with when its client
	// sends a byte after its request.
	UnexpectedBytes error
	// KeptAlive, if set, is called with a stream's owner after a keep-alive
	// frame was written to it, on the goroutine that wrote it (often a
	// writer loop shared by many streams). A panic in it is recovered and
	// ignored.
	KeptAlive func(owner any)
	// Done is called with a stream's owner once its Poller is done, on a
	// goroutine of its own. It calls release, once, when it no longer needs
	// the stream: release unregisters the stream and closes its socket.
	Done func(owner any, release func())
}

// maxKeptBuffer is the largest frame buffer a writer loop or a slow path
// keeps between messages: a larger one, grown for a large event, is
// dropped.
const maxKeptBuffer = 64 << 10

// errConnError is the cause of a stream whose connection reported an
// error (EPOLLERR) while idle.
var errConnError = errors.New("fastpath: connection error")
