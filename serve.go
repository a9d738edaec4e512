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
	w, err := s.StartWorker(nil)
	if err != nil {
		s.Close(Failed(err))
		return s.CloseReason()
	}
	if err := sink.Write(ack); err != nil {
		s.Close(Disconnected(err))
		return s.CloseReason()
	}
	w.Continue()

	var tick <-chan time.Time
	var timer *time.Timer
	if sink.KeepAlive > 0 && sink.Ping != nil {
		timer = time.NewTimer(sink.KeepAlive)
		defer timer.Stop()
		tick = timer.C
	}
	var buf []byte
	for {
		select {
		case o, ok := <-w.Outcomes():
			if ctx.Err() != nil {
				return s.end(ctx, sink)
			}
			if !ok || s.CloseReason() != nil {
				s.Close(Disconnected(ErrOwnerGone))
				return s.CloseReason()
			}
			switch o.Kind {
			case OutcomeEvent:
				var send bool
				buf, send, err = s.AppendNotification(buf[:0], o.Event)
				if err != nil {
					return s.fail(sink, err)
				}
				if send {
					if err := sink.Write(buf); err != nil {
						s.Close(Disconnected(err))
						return s.CloseReason()
					}
					if timer != nil {
						timer.Reset(sink.KeepAlive)
					}
				}
				w.Continue()
			case OutcomeClosed:
				msg, err := s.Completion()
				if err != nil {
					return s.fail(sink, err)
				}
				if err := sink.final(msg); err != nil {
					s.Close(Disconnected(err))
				}
				s.Close(ErrComplete)
				return s.CloseReason()
			default:
				return s.fail(sink, o.Err)
			}
		case <-ctx.Done():
			return s.end(ctx, sink)
		case <-s.Closed():
			s.Close(nil) // stops the worker and waits for it
			return s.CloseReason()
		case <-tick:
			if err := sink.Ping(); err != nil {
				s.Close(Disconnected(err))
				return s.CloseReason()
			}
			timer.Reset(sink.KeepAlive)
		}
	}
}

// end closes the subscription because ctx ended, by its cause (see Serve).
func (s *Subscription) end(ctx context.Context, sink Sink) error {
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrShutdown):
		if s.CloseReason() == nil {
			if msg, err := s.Completion(); err == nil {
				if err := sink.final(msg); err != nil {
					cause = Disconnected(err) // the client never got it
				}
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
		_ = sink.final(s.Failure(err))
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
