package listen

import (
	"context"
	"time"
)

// Sink is where Serve writes a subscription's messages.
type Sink struct {
	// Write writes one JSON-RPC message (the transport frames it: an SSE
	// event, a line). It must not keep msg after it returns: Serve reuses the
	// buffer. An error ends the stream with reason Disconnected(err), or
	// err itself when it matches ErrCancelled or ErrDisconnected.
	Write func(msg []byte) error
	// Final, if set, writes the stream's terminal message (the completion
	// result, an early ending or the failure error) instead of Write. ended
	// is why the server ends the stream when the end is its own: the early
	// ending (ErrRevoked, ErrExpired, ErrLifetime, ErrFellBehind, or an
	// error wrapping one) or ErrShutdown, given to Subscription.End, met as
	// ctx's cause or returned by the source's Next; nil for any other end
	// (the source's completion, a failure). A transport uses Final to free
	// the request id before the terminal message goes out, or to write
	// something just before it (stdio writes notifications/cancelled when
	// ended is not nil). Its error is treated like a Write error.
	Final func(msg []byte, ended error) error
	// KeepAlive, when positive and Ping is set, makes Serve call Ping after
	// that long without a write (an SSE comment, for example). A Ping error
	// ends the stream like a Write error.
	KeepAlive time.Duration
	Ping      func() error
}

// Serve runs an opened subscription to its end and returns the reason it was
// closed with. It drives the subscription's serving state machine (the
// rules of a stream, in one place; streamhttp's fast path drives it too)
// on the calling goroutine, and waits there between steps: it writes the
// acknowledgement, then each selected notification (a dropped event
// writes nothing), and on a graceful end the completion (reason
// ErrComplete), on a failure, or an event that fails validation, the
// failure (reason Failed(err)). A stream that is not a NotifyStream is
// pulled by a worker goroutine, which Serve starts and waits for.
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
// returns only after the subscription is closed, its stream released and
// its worker exited. Call it at most once per subscription, from the
// goroutine that owns the transport's writes.
func (s *Subscription) Serve(ctx context.Context, sink Sink) error {
	wake := make(chan struct{}, 1)
	p, err := s.servePoller(ctx, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	if err != nil {
		s.Close(Failed(err))
		return s.CloseReason()
	}
	var timer *time.Timer
	var tick <-chan time.Time
	if sink.KeepAlive > 0 && sink.Ping != nil {
		timer = time.NewTimer(sink.KeepAlive)
		defer timer.Stop()
		tick = timer.C
	}
	var buf []byte // reused for every message
	for {
		step, msg := p.Next(buf[:0])
		switch step {
		case stepWrite:
			buf = msg
			if p.terminalPending() {
				var ended error
				if serverEnded(p.final) {
					ended = p.final
				}
				p.Written(sink.final(msg, ended))
				return s.served(&p)
			}
			err := sink.Write(msg)
			p.Written(err)
			if err == nil && timer != nil {
				timer.Reset(sink.KeepAlive)
			}
		case stepDone:
			return s.served(&p)
		default: // stepWait
			select {
			case <-wake:
			case <-ctx.Done():
			case <-s.Closed():
			case <-tick:
				if err := sink.Ping(); err != nil {
					s.Close(writeFailed(err))
				} else {
					timer.Reset(sink.KeepAlive)
				}
			}
		}
	}
}

// served waits until the stream Serve served is released and its worker,
// if any, has exited, and returns the close reason.
func (s *Subscription) served(p *poller) error {
	<-s.Closed()
	if w := p.with.w; w != nil {
		w.Stop()
		s.waitWorker(w)
	}
	return s.CloseReason()
}

// final writes a terminal message through Final, or Write.
func (sink Sink) final(msg []byte, ended error) error {
	if sink.Final != nil {
		return sink.Final(msg, ended)
	}
	return sink.Write(msg)
}
