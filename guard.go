package listen

import (
	"context"
	"sync"
	"sync/atomic"
)

// guard closes a subscription's stream exactly once (the zero guard, with
// its stream set, is ready): on the first of an
// explicit close or the end of the owner context.
//
// It parks no goroutine. The owner is watched with context.AfterFunc: while
// the owner lives nothing runs; when it ends, the runtime runs the guard's
// close in a goroutine of its own, which ends as soon as the stream's Close
// returns. There is at most one owner at a time: handing the guard to a new
// owner releases the previous watch. close releases the watch, so a closed
// guard holds no registration.
//
// The close that runs the stream's Close returns after it; a close that
// finds the stream released already returns at once, and so does a close
// that finds another one running the stream's Close: it cannot tell whether
// it was made from inside that Close (a stream that ends its own
// subscription), where waiting would wait on itself. Whoever must know that
// the stream is released waits on doneChan.
type guard struct {
	stream Stream

	mu sync.Mutex
	// reason is the first close's reason, set once (with closed) when the
	// close begins, so that closeReason reads it without the lock (a
	// writer loop asks once per message).
	reason atomic.Pointer[error]
	// release unregisters the owner watch; nil when there is none.
	release func() bool
	// closing is closed when the close begins (before stream.Close); done
	// after stream.Close returned. Both are made when first asked for (most
	// subscriptions are never waited on before their close), and a channel
	// asked for after its event is the shared closed one.
	closing chan struct{}
	done    chan struct{}
	closed  bool
	// released is set once stream.Close has returned.
	released bool
}

// closedChan is a closed channel, for events that have happened.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// handOver makes owner the guard's owner: its end closes the stream with
// Disconnected(ErrOwnerGone wrapping the owner's cause). The previous owner,
// if any, is released, so its end no longer closes anything. An owner that
// can never end (context.Background) leaves the guard without an owner.
// owner is never nil (openOwned and StartWorker refuse it).
func (g *guard) handOver(owner context.Context) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.handOverLocked(owner)
}

// handOverLocked is handOver with g.mu held.
func (g *guard) handOverLocked(owner context.Context) {
	if g.closed {
		return
	}
	if g.release != nil {
		g.release()
		g.release = nil
	}
	if owner.Done() == nil {
		return
	}
	g.release = context.AfterFunc(owner, func() {
		g.close(Disconnected(&ownerGoneError{cause: context.Cause(owner)}))
	})
}

// close closes the stream with reason if it is the first close. It
// reports whether the stream is released when it returns: true after it ran
// the stream's Close, or when an earlier close had finished; false while
// another close is running the stream's Close.
func (g *guard) close(reason error) (released bool) {
	g.mu.Lock()
	if g.closed {
		released = g.released
		g.mu.Unlock()
		return released
	}
	g.closed = true
	g.reason.Store(&reason)
	release := g.release
	g.release = nil
	if g.closing != nil {
		close(g.closing)
	}
	g.mu.Unlock()

	if release != nil {
		release()
	}
	closeStream(g.stream, reason)
	g.mu.Lock()
	g.released = true
	if g.done != nil {
		close(g.done)
	}
	g.mu.Unlock()
	return true
}

// doneChan returns the channel closed once stream.Close has returned.
func (g *guard) doneChan() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.doneLocked()
}

func (g *guard) doneLocked() chan struct{} {
	switch {
	case g.released:
		return closedChan
	case g.done == nil:
		g.done = make(chan struct{})
	}
	return g.done
}

// closeReason returns the reason of the first close, or nil while open.
func (g *guard) closeReason() error {
	if r := g.reason.Load(); r != nil {
		return *r
	}
	return nil
}

// closingChanLocked returns the channel closed when the close begins, or
// nil if it has begun already. g.mu is held.
func (g *guard) closingChanLocked() <-chan struct{} {
	if g.closed {
		return nil
	}
	if g.closing == nil {
		g.closing = make(chan struct{})
	}
	return g.closing
}

// ownerGoneError is the cause of the reason a guard uses when an owner ends:
// it matches ErrOwnerGone and unwraps to the owner's context cause.
type ownerGoneError struct {
	cause error
}

func (e *ownerGoneError) Error() string {
	if e.cause == nil {
		return ErrOwnerGone.Error()
	}
	return ErrOwnerGone.Error() + ": " + e.cause.Error()
}

func (e *ownerGoneError) Is(target error) bool { return target == ErrOwnerGone }

func (e *ownerGoneError) Unwrap() error { return e.cause }
