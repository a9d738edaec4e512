package listen

import (
	"context"
	"errors"
)

// Step is what a Poller asks its transport to do next.
type Step uint8

const (
	// StepWait: nothing to write now. The stream calls the notify function
	// given to Subscription.Poller once an event may be ready or the stream
	// may have ended (and the transport's side calls it when its ended
	// function starts returning a cause); call Next again then.
	StepWait Step = iota
	// StepWrite: write the message (the acknowledgement or a
	// notification), then report the result with Written.
	StepWrite
	// StepFinal: write the terminal message (the completion result or the
	// failure), then report the result with Written: the subscription is
	// then closed.
	StepFinal
	// StepDone: the subscription is closed (CloseReason says why); there is
	// nothing more to write.
	StepDone
)

// Poller serves a subscription in steps, without a goroutine of its own and
// without blocking, for a transport that serves many streams from a few
// goroutines (streamhttp serves hub streams of taken-over HTTP/1.x
// connections this way). It is Serve turned inside out: Serve uses it for a
// PollStream, and it keeps every rule of Serve (the acknowledgement first;
// one pull after the acknowledgement and one after each written or dropped
// event; the end of the transport's side first; the terminal message; one
// close, with the reasons Serve closes with).
//
// The transport calls Next and does what the step says, then calls Next
// again: after StepWrite and StepFinal it first reports the write with
// Written. StepWait means nothing is ready: the transport calls Next again
// after notify was called. StepDone ends it.
//
// A Poller is used by one goroutine at a time (its owner, which may change
// between calls when the calls are ordered by happens-before, for example
// handed over through a channel or an atomic). It is a value, meant to be
// kept inside the transport's own per-stream state (one object to touch
// per message, not two); call its methods through a pointer to it, and do
// not copy it once used. The zero Poller is not usable.
type Poller struct {
	s     *Subscription
	ps    PollStream
	ctx   context.Context
	ended func() error

	state pollState
	// final is the reason the subscription is closed with once the terminal
	// message was written; finalOnErr whether a failed write makes it
	// Disconnected instead (it does for a completion, not for a failure).
	final      error
	finalOnErr bool
}

type pollState uint8

const (
	pollStart   pollState = iota // the acknowledgement is still to be written
	pollRun                      // pulling
	pollWriting                  // a StepWrite message is being written
	pollFinal                    // the terminal message is being written
	pollDone                     // closed
)

// Poller returns a Poller that serves s, for a transport that serves it
// instead of calling Serve (call one of them, once). It reports false, and
// registers nothing, when s's stream is not a NotifyStream, or when
// shaping an event may call a policy that can take its time (Options.CanRead
// for a covered sub-resource, with Options.SubResources): a Poller's
// transport serves many streams from one goroutine, which such a call
// would hold. Serve it with Serve then.
//
// ctx is the transport's serving context, as Serve's ctx: CanRead gets it
// for a covered sub-resource, and its end, by its cause (ErrShutdown, a
// Cancelled or Disconnected reason, or any other error), ends the stream
// with the effects Serve gives it. Next consults it before and after each
// pull, so it takes precedence over an outcome that is ready at the same
// moment; once it has ended, call notify (or Next) so that the Poller sees
// it. ended, if not nil, replaces ctx.Err for that check (a transport may
// know sooner and more cheaply): it returns nil while the stream goes on,
// and then the cause.
//
// notify is registered with the stream (NotifyStream.SetNotify): it is
// called on the goroutine of a publisher or of a Close, never under a lock
// of the stream, and must return promptly without blocking; the transport
// then schedules its next call of Next.
func (s *Subscription) Poller(ctx context.Context, notify func(), ended func() error) (Poller, bool) {
	ns, ok := s.guard.stream.(NotifyStream)
	if !ok || notify == nil || (s.res != nil && s.res.canRead != nil) {
		return Poller{}, false
	}
	ns.SetNotify(notify)
	return newPoller(s, ns, ctx, ended), true
}

func newPoller(s *Subscription, ps PollStream, ctx context.Context, ended func() error) Poller {
	if ended == nil {
		ended = func() error {
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return nil
		}
	}
	return Poller{s: s, ps: ps, ctx: ctx, ended: ended}
}

// Next returns the next step. For StepWrite and StepFinal it appends the
// message to dst and returns the result (dst is not kept; nothing else is
// appended); for StepWait and StepDone it returns dst unchanged.
func (p *Poller) Next(dst []byte) (Step, []byte) {
	s := p.s
	switch p.state {
	case pollDone:
		return StepDone, dst
	case pollWriting, pollFinal:
		panic("listen: Poller.Next called before Written")
	case pollStart:
		ack, err := s.Acknowledgement()
		if err != nil {
			return p.fail(dst, err)
		}
		if cause := p.ended(); cause != nil && !errors.Is(cause, ErrShutdown) {
			// Ended before the stream started: a cancelled or lost request
			// gets nothing; a drain still gets the acknowledgement (it must
			// be the first message), then the completion.
			return p.end(dst, cause)
		}
		p.state = pollWriting
		return StepWrite, append(dst, ack...)
	}
	for {
		if cause := p.ended(); cause != nil {
			return p.end(dst, cause)
		}
		if s.CloseReason() != nil {
			p.state = pollDone // closed by someone else: write nothing more
			return StepDone, dst
		}
		o, ok := pollEvent(p.ps)
		if !ok {
			return StepWait, dst
		}
		if cause := p.ended(); cause != nil {
			return p.end(dst, cause)
		}
		if s.CloseReason() != nil {
			p.state = pollDone
			return StepDone, dst
		}
		switch o.Kind {
		case OutcomeEvent:
			out, send, err := s.appendNotification(p.ctx, dst, o.Event)
			if err != nil {
				return p.fail(dst, err)
			}
			if !send {
				continue // a drop: pull again
			}
			p.state = pollWriting
			return StepWrite, out
		case OutcomeClosed:
			return p.terminal(dst, s.Completion(), ErrComplete, true)
		default:
			return p.fail(dst, o.Err)
		}
	}
}

// Written reports the result of writing the message of the last StepWrite
// or StepFinal. A failed write closes the subscription as Disconnected(err)
// (a failure response that could not be written still closes it as
// Failed). After StepFinal the subscription is closed.
func (p *Poller) Written(err error) {
	s := p.s
	switch p.state {
	case pollWriting:
		if err != nil {
			s.Close(Disconnected(err))
			p.state = pollDone
			return
		}
		p.state = pollRun
	case pollFinal:
		if err != nil && p.finalOnErr {
			s.Close(Disconnected(err)) // the client never got it
		}
		s.Close(p.final)
		p.state = pollDone
	default:
		panic("listen: Poller.Written called without a message to write")
	}
}

// end ends the stream because the transport's side ended with cause (see
// Serve).
func (p *Poller) end(dst []byte, cause error) (Step, []byte) {
	s := p.s
	switch {
	case errors.Is(cause, ErrShutdown):
		if s.CloseReason() == nil {
			return p.terminal(dst, s.Completion(), cause, true)
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

// fail ends the stream with the failure response and reason Failed(err).
func (p *Poller) fail(dst []byte, err error) (Step, []byte) {
	if p.s.CloseReason() == nil {
		return p.terminal(dst, p.s.Failure(), Failed(err), false)
	}
	p.s.Close(Failed(err))
	p.state = pollDone
	return StepDone, dst
}

// terminal hands out the terminal message msg; the subscription is closed
// with reason once it is written.
func (p *Poller) terminal(dst, msg []byte, reason error, disconnectOnErr bool) (Step, []byte) {
	p.state = pollFinal
	p.final = reason
	p.finalOnErr = disconnectOnErr
	return StepFinal, append(dst, msg...)
}
