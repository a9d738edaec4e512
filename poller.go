package listen

import (
	"context"
	"errors"
)

// This file is the serving state machine: the one place where the rules of
// a listen stream live. Serve, streamhttp's fast path and any transport
// that serves many streams from a few goroutines drive it; they only write
// what it hands out and wait when it says so.
//
// The states, in Poller.state:
//
//	pollStart --ack--> pollWriting --Written(nil)--> pollRun --pull--> ...
//
//   - pollStart: Next hands out the acknowledgement (StepWrite), unless the
//     transport's side has ended with a cause other than ErrShutdown or an
//     early ending (then nothing is written: see end).
//   - pollRun: Next first consults the transport's side (ended), the
//     server's End (Subscription.End: its reason's terminal message) and
//     the subscription (closed by someone else: StepDone), then pulls
//     once. No outcome: StepWait. An event: shaped; a drop pulls again, a
//     notification is handed out (StepWrite, pollWriting). The stream's
//     graceful end: the completion (StepWrite, pollFinal). An early ending
//     from the source (an error matching one of ending.go's reasons): its
//     ending (StepWrite, pollFinal). A failure, or an event that fails to
//     shape: the failure (StepWrite, pollFailing). The checks are made
//     again after the pull, so the transport's end and End win over an
//     outcome ready at the same moment.
//   - pollWriting: Written(nil) goes back to pollRun (the next Next pulls
//     again: one pull after each written or dropped event, never two in
//     flight); Written(err) closes with writeFailed(err).
//   - pollFinal, pollFailing: Written closes the subscription with the
//     reason the terminal message stands for (ErrComplete, ErrShutdown,
//     Failed(err)); a completion whose write failed closes with
//     writeFailed(err) instead.
//   - pollDone: closed; Next answers StepDone.
//
// The transport's end and End (see end), by the cause: an early ending
// (ending.go) writes its ending first (if the subscription is still open:
// Options.EndWithError's form) and closes with the cause; ErrShutdown likewise
// with the completion; a Cancelled or Disconnected reason closes with
// itself; any other cause closes with Disconnected(cause) when it is the
// transport's, with the failure and Failed(cause) when it is End's.
// Nothing else is written.

// Step is what a Poller asks its transport to do next.
type Step uint8

const (
	// StepWait: nothing to write now. The stream calls the notify function
	// given to Subscription.Poller once an event may be ready or the stream
	// may have ended (and the transport's side calls it when its ended
	// function starts returning a cause); call Next again then.
	StepWait Step = iota
	// StepWrite: write the message (the acknowledgement, a notification,
	// or the terminal message: the completion result or the failure), then
	// report the result with Written. After the terminal message the
	// subscription is closed and Next answers StepDone.
	StepWrite
	// StepDone: the subscription is closed (CloseReason says why); there is
	// nothing more to write.
	StepDone
)

// Poller serves a subscription in steps, without a goroutine of its own and
// without blocking: it is the serving state machine, which Serve drives for
// every stream and a transport that serves many streams from a few
// goroutines drives itself (streamhttp serves hub streams of taken-over
// HTTP/1.x connections this way). It keeps every rule of a listen stream:
// the acknowledgement first; one pull after the acknowledgement and one
// after each written or dropped event; the end of the transport's side
// first; the terminal message; one close, with its reason.
//
// The transport calls Next and does what the step says, then calls Next
// again: after StepWrite it first reports the write with Written.
// On the transport's goroutine, each time the stream is scheduled:
//
//	for {
//		step, msg := p.Next(buf[:0])
//		switch step {
//		case listen.StepWrite:
//			p.Written(write(msg)) // without blocking, or hand the rest to a goroutine that may
//		case listen.StepWait:
//			return // notify is called when there is more
//		case listen.StepDone:
//			return // closed: sub.CloseReason() says why
//		}
//	}
//
// StepWait means nothing is ready: the transport calls Next again
// after notify was called. StepDone ends it.
//
// A Poller is used by one goroutine at a time (its owner, which may change
// between calls when the calls are ordered by happens-before, for example
// handed over through a channel or an atomic). It is a value, meant to be
// kept inside the transport's own per-stream state (one object to touch
// per message, not two); call its methods through a pointer to it, and do
// not copy it once used. The zero Poller is not usable.
type Poller struct {
	s *Subscription
	// ended reports the transport's end (nil: ctx's, in with).
	ended func() error
	// with, when not nil, holds what only some Pollers need (Serve's, or
	// one whose end is its context's), so that a transport's per-stream
	// Poller stays small.
	with *pollerWith

	state pollState
	// final is the reason the subscription is closed with once the terminal
	// message was written.
	final error
}

// pollerWith is the part of a Poller that a transport's fast path does not
// need.
type pollerWith struct {
	// ctx is the serving context: CanRead's for a covered sub-resource, and
	// the transport's end when ended is nil.
	ctx context.Context
	// w is the notify worker that pulls a stream that blocks (Serve's);
	// nil for a NotifyStream, pulled with TryNext.
	w *Worker
}

type pollState uint8

const (
	pollStart   pollState = iota // the acknowledgement is still to be written
	pollRun                      // pulling
	pollWriting                  // a StepWrite message is being written
	pollFinal                    // the completion is being written
	pollFailing                  // the failure is being written
	pollDone                     // closed
)

// Poller returns a Poller that serves s, for a transport that serves it
// instead of calling Serve (call one of them, once). It reports false, and
// registers nothing, when serving s would need a goroutine or could hold
// the transport's goroutine: when s's stream is not a NotifyStream, or when
// shaping an event may call a policy that can take its time (Options.CanRead
// for a covered sub-resource, with Options.SubResources, or for every
// resource update, with Access.Deliver). Serve it with Serve then.
//
// ctx is the transport's serving context, as Serve's ctx: its end, by its
// cause (ErrShutdown, a Cancelled or Disconnected reason, or any other
// error), ends the stream with the effects Serve gives it. Next consults it
// before and after each pull, so it takes precedence over an outcome that
// is ready at the same moment; once it has ended, call notify (or Next) so
// that the Poller sees it. ended, if not nil, replaces ctx for that check
// (a transport may know sooner and more cheaply, and ctx may then be
// context.Background()): it returns nil while the stream goes on, and then
// the cause.
//
// notify is registered with the stream (NotifyStream.SetNotify): it is
// called on the goroutine of a publisher or of a Close, never under a lock
// of the stream, and must return promptly without blocking; the transport
// then schedules its next call of Next.
func (s *Subscription) Poller(ctx context.Context, notify func(), ended func() error) (Poller, bool) {
	ns, ok := s.guard.stream.(NotifyStream)
	if !ok || notify == nil || (s.watch != nil && s.watch.res != nil && s.watch.res.canRead != nil) || (s.life != nil && s.life.deliver) {
		return Poller{}, false
	}
	s.setWake(notify)
	ns.SetNotify(notify)
	p := Poller{s: s, ended: ended}
	if ended == nil {
		p.with = &pollerWith{ctx: ctx}
	}
	return p, true
}

// servePoller returns the Poller Serve drives: on a NotifyStream, pulled
// with TryNext; on any other stream, through a worker goroutine that calls
// notify with each outcome (keeping the subscription's owner).
func (s *Subscription) servePoller(ctx context.Context, notify func()) (Poller, error) {
	p := Poller{s: s, with: &pollerWith{ctx: ctx}}
	s.setWake(notify)
	if ns, ok := s.guard.stream.(NotifyStream); ok {
		ns.SetNotify(notify)
		return p, nil
	}
	w, err := s.serveWorker(notify)
	p.with.w = w
	return p, err
}

// endCause returns the cause the transport's side ended with, or nil.
func (p *Poller) endCause() error {
	if p.ended != nil {
		return p.ended()
	}
	if ctx := p.with.ctx; ctx != nil && ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// pull pulls the stream once, without blocking.
func (p *Poller) pull() (Outcome, bool) {
	if p.with != nil && p.with.w != nil {
		return p.with.w.take()
	}
	return pollEvent(p.s.guard.stream.(NotifyStream))
}

// shapeCtx is the context CanRead gets for a covered sub-resource: Serve's
// (a Poller of Subscription.Poller has no such subscription to serve).
func (p *Poller) shapeCtx() context.Context {
	if p.with != nil {
		return p.with.ctx
	}
	return nil
}

// Next returns the next step. For StepWrite it appends the message to dst
// and returns the result (dst is not kept; nothing else is appended); for
// StepWait and StepDone it returns dst unchanged.
func (p *Poller) Next(dst []byte) (Step, []byte) {
	s := p.s
	switch p.state {
	case pollDone:
		return StepDone, dst
	case pollWriting, pollFinal, pollFailing:
		panic("listen: Poller.Next called before Written")
	case pollStart:
		ack, err := s.Acknowledgement()
		if err != nil {
			return p.fail(dst, err)
		}
		if cause := p.endCause(); cause != nil && !serverEnded(cause) {
			// Ended before the stream started: a cancelled or lost request
			// gets nothing; a drain or an early ending still gets the
			// acknowledgement (it must be the first message), then its
			// terminal message.
			return p.end(dst, cause)
		}
		p.state = pollWriting
		return StepWrite, append(dst, ack...)
	}
	for {
		if step, out, done := p.check(dst); done {
			return step, out
		}
		o, ok := p.pull()
		if !ok {
			return StepWait, dst
		}
		if step, out, done := p.check(dst); done {
			return step, out
		}
		switch o.kind {
		case outcomeEvent:
			out, send, err := s.appendNotification(p.shapeCtx(), dst, o.Event, true)
			if err != nil {
				return p.fail(dst, err)
			}
			if !send {
				continue // a drop: pull again
			}
			p.state = pollWriting
			return StepWrite, out
		case outcomeClosed:
			return p.terminal(dst, s.Completion(), ErrComplete, pollFinal)
		case outcomeExited:
			// The worker stopped without an outcome: its owner ended, or
			// the close began (the owner's close may not have begun yet).
			s.Close(Disconnected(ErrOwnerGone))
			p.state = pollDone
			return StepDone, dst
		default:
			if e := endingOf(o.Err); e != nil {
				// The source ended the stream early (a hub listener
				// that fell behind): its ending, not a failure.
				return p.terminal(dst, s.endingMessage(e), o.Err, pollFinal)
			}
			return p.fail(dst, o.Err)
		}
	}
}

// check ends the stream when the transport's side has ended (end), or
// reports StepDone when the subscription was closed by someone else (a
// Close, its owner's end): nothing more is written then. done is false
// while the stream goes on.
func (p *Poller) check(dst []byte) (step Step, out []byte, done bool) {
	if cause := p.endCause(); cause != nil {
		step, out = p.end(dst, cause)
		return step, out, true
	}
	if r := p.s.endReason(); r != nil && p.s.CloseReason() == nil {
		if serverEnded(r) {
			step, out = p.end(dst, r)
		} else {
			step, out = p.fail(dst, r)
		}
		return step, out, true
	}
	if p.s.CloseReason() != nil {
		p.state = pollDone
		return StepDone, dst, true
	}
	return 0, dst, false
}

// Written reports the result of writing the message of the last StepWrite.
// A failed write closes the subscription as Disconnected(err), or as err
// itself when it already matches ErrCancelled or ErrDisconnected (a write
// the client's cancellation abandoned); a failure response that could not
// be written still closes it as Failed. After the terminal message the
// subscription is closed.
func (p *Poller) Written(err error) {
	s := p.s
	switch p.state {
	case pollWriting:
		if err != nil {
			s.Close(writeFailed(err))
			p.state = pollDone
			return
		}
		p.state = pollRun
	case pollFinal, pollFailing:
		if err != nil && p.state == pollFinal {
			s.Close(writeFailed(err)) // the client never got it
		}
		s.Close(p.final)
		p.state = pollDone
	default:
		panic("listen: Poller.Written called without a message to write")
	}
}

// writeFailed is the close reason of a failed write: err itself when it is
// already a client's cancellation or a disconnection, Disconnected(err)
// otherwise.
func writeFailed(err error) error {
	if errors.Is(err, ErrCancelled) || errors.Is(err, ErrDisconnected) {
		return err
	}
	return Disconnected(err)
}

// end ends the stream because the transport's side ended with cause.
func (p *Poller) end(dst []byte, cause error) (Step, []byte) {
	s := p.s
	switch e := endingOf(cause); {
	case e != nil:
		if s.CloseReason() == nil {
			return p.terminal(dst, s.endingMessage(e), cause, pollFinal)
		}
		s.Close(cause)
	case errors.Is(cause, ErrShutdown):
		if s.CloseReason() == nil {
			return p.terminal(dst, s.shutdownCompletion(cause), cause, pollFinal)
		}
		s.Close(cause)
	case errors.Is(cause, ErrCancelled), errors.Is(cause, ErrDisconnected):
		s.Close(cause)
	default:
		s.Close(Disconnected(cause))
	}
	p.state = pollDone
	return StepDone, dst
}

// serverEnded reports whether cause is the server's own end of a stream,
// which the client is told about: a drain (ErrShutdown) or an early ending.
func serverEnded(cause error) bool {
	return errors.Is(cause, ErrShutdown) || endingOf(cause) != nil
}

// fail ends the stream with the failure response and reason Failed(err).
func (p *Poller) fail(dst []byte, err error) (Step, []byte) {
	if p.s.CloseReason() == nil {
		return p.terminal(dst, p.s.Failure(), Failed(err), pollFailing)
	}
	p.s.Close(Failed(err))
	p.state = pollDone
	return StepDone, dst
}

// terminal hands out the terminal message msg; the subscription is closed
// with reason once it is written.
func (p *Poller) terminal(dst, msg []byte, reason error, state pollState) (Step, []byte) {
	if serverEnded(reason) {
		p.s.ending.CompareAndSwap(nil, &reason) // a later End finds the stream ending
	}
	p.state = state
	p.final = reason
	return StepWrite, append(dst, msg...)
}

// terminalPending reports whether the message of the last StepWrite is the
// terminal one (Serve writes it through Sink.Final).
func (p *Poller) terminalPending() bool { return p.state == pollFinal || p.state == pollFailing }
