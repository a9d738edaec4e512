package listen

import (
	"context"
	"errors"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/fastpath"
)

// This file is the serving state machine: the one place where the rules of
// a listen stream live. Serve and streamhttp's fast path (internal/fastpath,
// which reaches it through fastpath.Attach) drive it; they only write what
// it hands out and wait when it says so.
//
// The states, in poller.state:
//
//	pollStart --ack--> pollWriting --Written(nil)--> pollRun --pull--> ...
//
//   - pollStart: Next hands out the acknowledgement (stepWrite), unless the
//     transport's side has ended with a cause other than ErrShutdown or an
//     early ending (then nothing is written: see end).
//   - pollRun: Next first consults the transport's side (ended), the
//     server's End (Subscription.End: its reason's terminal message) and
//     the subscription (closed by someone else: stepDone), then pulls
//     once. No outcome: stepWait. An event: shaped; a drop pulls again, a
//     notification is handed out (stepWrite, pollWriting). The stream's
//     graceful end: the completion (stepWrite, pollFinal). An early ending
//     from the source (an error matching one of the early endings' reasons (errors.go)): its
//     ending (stepWrite, pollFinal). A failure, or an event that fails to
//     shape: the failure (stepWrite, pollFailing). The checks are made
//     again after the pull, so the transport's end and End win over an
//     outcome ready at the same moment.
//   - pollWriting: Written(nil) goes back to pollRun (the next Next pulls
//     again: one pull after each written or dropped event, never two in
//     flight; except that after a hub listener's last queued event, which
//     armed the listener's notify as it was handed out (armedStream), the
//     next Next waits at once: whatever comes next calls notify);
//     Written(err) closes with writeFailed(err).
//   - pollFinal, pollFailing: Written closes the subscription with the
//     reason the terminal message stands for (ErrComplete, ErrShutdown,
//     Failed(err)); a completion whose write failed closes with
//     writeFailed(err) instead.
//   - pollDone: closed; Next answers stepDone.
//
// The transport's end and End (see end), by the cause: an early ending
// (errors.go) writes its ending first (if the subscription is still open:
// Options.EndWithError's form) and closes with the cause; ErrShutdown likewise
// with the completion; a Cancelled or Disconnected reason closes with
// itself; any other cause closes with Disconnected(cause) when it is the
// transport's, with the failure and Failed(cause) when it is End's.
// Nothing else is written.

// Its steps are fastpath's: stepWrite (write the message it returned,
// then report the write with Written), stepWait (nothing to write until
// the notify function is called), stepDone (closed).
const (
	stepWait  = fastpath.StepWait
	stepWrite = fastpath.StepWrite
	stepDone  = fastpath.StepDone
)

// poller serves a subscription in steps, without a goroutine of its own and
// without blocking. It is used by one goroutine at a time (its owner, which
// may change between calls ordered by happens-before). Serve keeps it on
// its stack; the fast path gets a pointer to one (fastpath.Poller).
type poller struct {
	s *Subscription
	// ended reports the transport's end (nil: ctx's, in with; nil too: never).
	ended fastpath.Ender
	// with, when not nil, holds what only Serve's poller needs, so that a
	// fast stream's stays small.
	with *pollerWith

	// armed is the stream when it is one of the hub's (armedStream); nil
	// otherwise.
	armed armedStream

	state pollState
	// validated: the stream's events were validated when they were
	// published (validatedStream), so they are not validated again.
	validated bool
	// rest: the last pull took the armed stream's last queued event, so
	// the Next after its write waits without pulling (see armedStream).
	rest bool
	// final is the reason the subscription is closed with once the terminal
	// message was written.
	final error
}

// pollerWith is the part of a poller that the fast path does not need.
type pollerWith struct {
	// ctx is the serving context: CanRead's for a covered sub-resource, and
	// the transport's end.
	ctx context.Context
	// w is the notify worker that pulls a stream that blocks (Serve's);
	// nil for a NotifyStream, pulled with TryNext.
	w *Worker
}

type pollState uint8

const (
	pollStart   pollState = iota // the acknowledgement is still to be written
	pollRun                      // pulling
	pollWriting                  // a stepWrite message is being written
	pollFinal                    // the completion is being written
	pollFailing                  // the failure is being written
	pollDone                     // closed
)

func init() {
	fastpath.Attach = func(sub any, notify func(), ended fastpath.Ender) (fastpath.Poller, bool) {
		if p, ok := sub.(*Subscription).attach(notify, ended); ok {
			return p, true
		}
		return nil, false
	}
}

// attach returns a poller that serves s for the fast path (fastpath.Attach,
// which documents it), or false, having registered nothing, when serving s
// would need a goroutine or could hold the caller's goroutine: when s's
// stream is not a NotifyStream, or when shaping an event may call a policy
// that can take its time (Options.CanRead for a covered sub-resource, with
// Options.SubResources, or for every resource update, with Access.Deliver).
func (s *Subscription) attach(notify func(), ended fastpath.Ender) (*poller, bool) {
	ns, ok := s.guard.stream.(NotifyStream)
	if !ok || notify == nil || (s.watch != nil && s.watch.res != nil && s.watch.res.canRead != nil) || (s.life != nil && s.life.deliver) {
		return nil, false
	}
	s.setWake(notify)
	ns.SetNotify(notify)
	s.fast = poller{s: s, ended: ended, validated: validatedStream(s.guard.stream)}
	s.fast.armed, _ = s.guard.stream.(armedStream)
	if o, ok := ended.(core.Offerer); ok && s.fast.armed != nil && s.lists != 0 {
		// The hub may hand this stream's unscoped list changes to the
		// fast path directly (core.Offerer); pull takes a pending one
		// before the listener's.
		o.Direct(s.id.Raw())
		s.fast.armed.SetOfferer(core.Internal{}, o, uint8(s.lists))
	}
	return &s.fast, true
}

func init() {
	for k := range kinds {
		if k != 0 && Kind(k) < KindResourceUpdated {
			b := append([]byte(prefixNotification), appendString(nil, kinds[k].method)...)
			fastpath.ListChanged[k] = append(append(b, `,"params":{`...), metaOpen...)
		}
	}
}

// armedStream is a NotifyStream of the module's own (a hub listener) whose
// TryNextArmed is TryNext that also arms the notify function when it takes
// the last queued event: armed reports that the next event will call
// notify, as after a TryNext that found nothing. The poller then skips the
// pull that would find nothing after writing that event, the second visit
// to the stream's memory per notification. Being the module's own (it
// takes a core.Internal, which no other module can name), it is called
// without catch.
type armedStream interface {
	TryNextArmed(core.Internal) (ev Event, ok, armed bool, err error)
	// SetOfferer lets the stream offer o its unscoped list changes of the
	// kinds in mask (bit k: Kind k) when it is armed (core.Offerer).
	SetOfferer(_ core.Internal, o core.Offerer, mask uint8)
}

// servePoller returns the poller Serve drives: on a NotifyStream, pulled
// with TryNext; on any other stream, through a worker goroutine that calls
// notify with each outcome (keeping the subscription's owner).
func (s *Subscription) servePoller(ctx context.Context, notify func()) (poller, error) {
	p := poller{s: s, with: &pollerWith{ctx: ctx}, validated: validatedStream(s.guard.stream)}
	s.setWake(notify)
	if ns, ok := s.guard.stream.(NotifyStream); ok {
		ns.SetNotify(notify)
		p.armed, _ = ns.(armedStream)
		return p, nil
	}
	w, err := s.serveWorker(notify)
	p.with.w = w
	return p, err
}

// endCause returns the cause the transport's side ended with, or nil.
func (p *poller) endCause() error {
	switch {
	case p.ended != nil:
		return p.ended.Cause()
	case p.with != nil && p.with.ctx.Err() != nil:
		return context.Cause(p.with.ctx)
	}
	return nil
}

// pull pulls the stream once, without blocking.
func (p *poller) pull() (Outcome, bool) {
	if o, ok := p.ended.(core.Offerer); ok { // the fast stream, which the hub may offer list changes
		if k, ok := o.TakeOffered(); ok {
			return Outcome{kind: outcomeEvent, Event: Event{Kind: Kind(k)}}, true
		}
	}
	if p.armed != nil {
		ev, ok, armed, err := p.armed.TryNextArmed(core.Internal{})
		if err == nil && !ok {
			return Outcome{}, false
		}
		p.rest = armed
		return outcomeOf(ev, err), true
	}
	if p.with != nil && p.with.w != nil {
		return p.with.w.take()
	}
	return pollEvent(p.s.guard.stream.(NotifyStream))
}

// shapeCtx is the context CanRead gets for a covered sub-resource: Serve's
// (attach declines such a subscription).
func (p *poller) shapeCtx() context.Context {
	if p.with != nil {
		return p.with.ctx
	}
	return nil
}

// Next returns the next step. For stepWrite it appends the message to dst
// and returns the result (dst is not kept; nothing else is appended); for
// stepWait and stepDone it returns dst unchanged. Its rules are at the top
// of this file.
func (p *poller) Next(dst []byte) (fastpath.Step, []byte) {
	s := p.s
	switch p.state {
	case pollDone:
		return stepDone, dst
	case pollWriting, pollFinal, pollFailing:
		panic("listen: poller.Next called before Written")
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
		return stepWrite, append(dst, ack...)
	}
	if p.rest {
		// The last event written was the last queued, and the stream is
		// armed: anything new (an event, an end, a close) calls notify.
		p.rest = false
		return stepWait, dst
	}
	for {
		if step, out, done := p.check(dst); done {
			return step, out
		}
		o, ok := p.pull()
		if !ok {
			return stepWait, dst
		}
		if step, out, done := p.check(dst); done {
			return step, out
		}
		switch o.kind {
		case outcomeEvent:
			out, send, err := s.appendNotification(p.shapeCtx(), dst, o.Event, p.validated)
			if err != nil {
				return p.fail(dst, err)
			}
			if !send {
				continue // a drop: pull again
			}
			p.state = pollWriting
			return stepWrite, out
		case outcomeClosed:
			return p.terminal(dst, s.Completion(), ErrComplete, pollFinal)
		case outcomeExited:
			// The worker stopped without an outcome: its owner ended, or
			// the close began (the owner's close may not have begun yet).
			s.Close(Disconnected(ErrOwnerGone))
			p.state = pollDone
			return stepDone, dst
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
// reports stepDone when the subscription was closed by someone else (a
// Close, its owner's end): nothing more is written then. done is false
// while the stream goes on.
func (p *poller) check(dst []byte) (step fastpath.Step, out []byte, done bool) {
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
		return stepDone, dst, true
	}
	return 0, dst, false
}

// Written reports the result of writing the message of the last stepWrite.
// A failed write closes the subscription as Disconnected(err), or as err
// itself when it already matches ErrCancelled or ErrDisconnected (a write
// the client's cancellation abandoned); a failure response that could not
// be written still closes it as Failed. After the terminal message the
// subscription is closed.
func (p *poller) Written(err error) {
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
		panic("listen: poller.Written called without a message to write")
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
func (p *poller) end(dst []byte, cause error) (fastpath.Step, []byte) {
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
	return stepDone, dst
}

// serverEnded reports whether cause is the server's own end of a stream,
// which the client is told about: a drain (ErrShutdown) or an early ending.
func serverEnded(cause error) bool {
	return errors.Is(cause, ErrShutdown) || endingOf(cause) != nil
}

// fail ends the stream with the failure response and reason Failed(err).
func (p *poller) fail(dst []byte, err error) (fastpath.Step, []byte) {
	if p.s.CloseReason() == nil {
		return p.terminal(dst, p.s.Failure(), Failed(err), pollFailing)
	}
	p.s.Close(Failed(err))
	p.state = pollDone
	return stepDone, dst
}

// terminal hands out the terminal message msg; the subscription is closed
// with reason once it is written.
func (p *poller) terminal(dst, msg []byte, reason error, state pollState) (fastpath.Step, []byte) {
	if serverEnded(reason) {
		p.s.ending.CompareAndSwap(nil, &reason) // a later End finds the stream ending
	}
	p.state = state
	p.final = reason
	return stepWrite, append(dst, msg...)
}

// terminalPending reports whether the message of the last stepWrite is the
// terminal one (Serve writes it through Sink.Final).
func (p *poller) terminalPending() bool { return p.state == pollFinal || p.state == pollFailing }
