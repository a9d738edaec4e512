package listen

import (
	"context"
	"errors"
	"time"
)

// Sink is where Serve writes a subscription's messages.
type Sink struct {
	// Write writes one JSON-RPC message (the transport frames it: an SSE
	// event, a line). It must not keep msg after it returns: Serve reuses the
	// buffer. An error ends the stream with reason Disconnected(err).
	Write func(msg []byte) error
	// Final, if set, writes the stream's terminal message (the completion
	// result or the failure error) instead of Write. A transport uses it to
	// free the request id before the terminal message goes out, or to write
	// something just before it. Its error is treated like a Write error.
	Final func(msg []byte) error
	// KeepAlive, when positive and Ping is set, makes Serve call Ping after
	// that long without a write (an SSE comment, for example). A Ping error
	// ends the stream like a Write error.
	KeepAlive time.Duration
	Ping      func() error
}

// Serve runs an opened subscription to its end and returns the reason it was
// closed with. It writes the acknowledgement, starts the worker, and then,
// for each outcome: writes the notification and continues (a dropped event
// writes nothing and continues); on a graceful end writes the completion
// and closes with ErrComplete; on a failure, or an event that fails
// validation, writes the failure and closes with Failed(err).
//
// ctx ends the stream from the transport's side, by its cause
// (context.WithCancelCause):
//   - a cause matching ErrShutdown: the completion result is written, then
//     the subscription is closed with ErrShutdown (a graceful server drain),
//     or with Disconnected if that write failed;
//   - a cause matching ErrCancelled or ErrDisconnected: closed with that
//     reason, nothing written (a client cancellation, a lost connection);
//   - any other cause: closed with Disconnected(cause), nothing written.
//
// The end of ctx takes precedence over an outcome that is ready at the same
// moment. A ctx that has already ended when Serve is called writes nothing,
// or, for ErrShutdown, the acknowledgement and the completion. If the
// subscription is closed meanwhile by someone else (Close, or its owner's
// end), Serve writes nothing more and returns that reason. Serve
// returns only after the subscription is closed and its worker has exited.
// Call it at most once per subscription, from the goroutine that owns the
// transport's writes.
func (s *Subscription) Serve(ctx context.Context, sink Sink) error {
	ack, err := s.Acknowledgement()
	if err != nil {
		return s.fail(sink, err)
	}
	if ctx.Err() != nil {
		// Ended before the stream started: a cancelled or lost request gets
		// nothing; a drain still sends the acknowledgement (it must be the
		// first message of the subscription) and then the completion.
		if errors.Is(context.Cause(ctx), ErrShutdown) {
			if err := sink.Write(ack); err != nil {
				s.Close(Disconnected(err))
				return s.CloseReason()
			}
		}
		return s.end(ctx, sink)
	}
	st := &serveState{ctx: ctx, sink: sink}
	if sink.KeepAlive > 0 && sink.Ping != nil {
		st.timer = time.NewTimer(sink.KeepAlive)
		defer st.timer.Stop()
		st.tick = st.timer.C
	}
	if ps, ok := s.guard.stream.(PollStream); ok {
		return s.servePoll(ctx, st, ps)
	}
	return s.serveWorker(ctx, st, ack)
}

// serveState is what one Serve call carries between outcomes.
type serveState struct {
	ctx   context.Context // CanRead's, for a covered sub-resource
	sink  Sink
	buf   []byte // reused for every notification
	timer *time.Timer
	tick  <-chan time.Time
}

// serveWorker serves any stream through a worker goroutine.
func (s *Subscription) serveWorker(ctx context.Context, st *serveState, ack []byte) error {
	w, err := s.StartWorker(nil)
	if err != nil {
		s.Close(Failed(err))
		return s.CloseReason()
	}
	if err := st.sink.Write(ack); err != nil {
		s.Close(Disconnected(err))
		return s.CloseReason()
	}
	w.Continue()
	for {
		select {
		case o, ok := <-w.Outcomes():
			if ctx.Err() != nil {
				return s.end(ctx, st.sink)
			}
			if !ok || s.CloseReason() != nil {
				s.Close(Disconnected(ErrOwnerGone))
				return s.CloseReason()
			}
			if done := s.handle(st, o); done {
				return s.CloseReason()
			}
			w.Continue()
		case <-ctx.Done():
			return s.end(ctx, st.sink)
		case <-s.Closed():
			s.Close(nil) // stops the worker and waits for it
			return s.CloseReason()
		case <-st.tick:
			if done := s.ping(st); done {
				return s.CloseReason()
			}
		}
	}
}

// servePoll serves a PollStream from the calling goroutine, with no worker
// goroutine: a Poller does the steps (the same demand rule as the worker:
// one pull after the acknowledgement, then one after each written or
// dropped event), and this goroutine waits on Ready between them.
func (s *Subscription) servePoll(ctx context.Context, st *serveState, ps PollStream) error {
	p := newPoller(s, ps, ctx, nil)
	for {
		step, msg := p.Next(st.buf[:0])
		switch step {
		case StepWrite:
			st.buf = msg
			err := st.sink.Write(msg)
			p.Written(err)
			if err == nil && st.timer != nil {
				st.timer.Reset(st.sink.KeepAlive)
			}
		case StepFinal:
			st.buf = msg
			p.Written(st.sink.final(msg))
			return s.CloseReason()
		case StepDone:
			<-s.Closed()
			return s.CloseReason()
		default: // StepWait
			select {
			case <-ps.Ready():
			case <-ctx.Done():
			case <-s.Closed():
			case <-st.tick:
				if done := s.ping(st); done {
					return s.CloseReason()
				}
			}
		}
	}
}

// handle writes what one outcome calls for. It reports whether the stream
// ended (the subscription is then closed).
func (s *Subscription) handle(st *serveState, o Outcome) bool {
	switch o.Kind {
	case OutcomeEvent:
		var send bool
		var err error
		st.buf, send, err = s.appendNotification(st.ctx, st.buf[:0], o.Event)
		if err != nil {
			s.fail(st.sink, err)
			return true
		}
		if send {
			if err := st.sink.Write(st.buf); err != nil {
				s.Close(Disconnected(err))
				return true
			}
			if st.timer != nil {
				st.timer.Reset(st.sink.KeepAlive)
			}
		}
		return false
	case OutcomeClosed:
		if err := st.sink.final(s.Completion()); err != nil {
			s.Close(Disconnected(err))
		}
		s.Close(ErrComplete)
		return true
	default:
		s.fail(st.sink, o.Err)
		return true
	}
}

// ping writes a keep-alive. It reports whether the stream ended.
func (s *Subscription) ping(st *serveState) bool {
	if err := st.sink.Ping(); err != nil {
		s.Close(Disconnected(err))
		return true
	}
	st.timer.Reset(st.sink.KeepAlive)
	return false
}

// end closes the subscription because ctx ended, by its cause (see Serve).
func (s *Subscription) end(ctx context.Context, sink Sink) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrShutdown):
		if s.CloseReason() == nil {
			if err := sink.final(s.Completion()); err != nil {
				cause = Disconnected(err) // the client never got it
			}
		}
		s.Close(cause)
	case errors.Is(cause, ErrCancelled), errors.Is(cause, ErrDisconnected):
		s.Close(cause)
	default:
		s.Close(Disconnected(cause))
	}
	return s.CloseReason()
}

// fail writes the failure response and closes with Failed(err).
func (s *Subscription) fail(sink Sink, err error) error {
	if s.CloseReason() == nil {
		_ = sink.final(s.Failure())
	}
	s.Close(Failed(err))
	return s.CloseReason()
}

// final writes a terminal message through Final, or Write.
func (sink Sink) final(msg []byte) error {
	if sink.Final != nil {
		return sink.Final(msg)
	}
	return sink.Write(msg)
}
