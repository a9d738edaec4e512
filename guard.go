package listen

import (
	"context"
	"sync"
)

// guard closes a subscription's stream exactly once: on the first of an
// explicit close or the end of an owner context.
//
// It parks no goroutine. Each owner is watched with context.AfterFunc: while
// the owner lives nothing runs; when it ends, the runtime runs the guard's
// close in a goroutine of its own, which ends as soon as the stream's Close
// returns. close stops every watch, so a closed guard holds no registration.
//
// Every caller of close returns only after the stream's Close has returned,
// whoever ran it: "closed" always means "released".
type guard struct {
	stream Stream

	mu     sync.Mutex
	closed bool
	reason error
	// stops unregisters the owner watches; nil once closed.
	stops []func() bool
	// done is closed after stream.Close returned.
	done chan struct{}
}

func newGuard(stream Stream) *guard {
	return &guard{stream: stream, done: make(chan struct{})}
}

// watch makes owner's end close the stream with Disconnected(ErrOwnerGone
// wrapping the owner's cause). A context that can never end is ignored. It
// reports whether the owner is now watched (false also when already closed).
func (g *guard) watch(owner context.Context) bool {
	if owner == nil || owner.Done() == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	stop := context.AfterFunc(owner, func() {
		g.close(Disconnected(&ownerGoneError{cause: context.Cause(owner)}))
	})
	g.stops = append(g.stops, stop)
	return true
}

// close closes the stream with reason if it is the first close, and waits
// until the stream's Close has returned either way. It reports whether this
// call closed the stream.
func (g *guard) close(reason error) bool {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		<-g.done
		return false
	}
	g.closed = true
	g.reason = reason
	stops := g.stops
	g.stops = nil
	g.mu.Unlock()

	for _, stop := range stops {
		stop()
	}
	closeStream(g.stream, reason)
	close(g.done)
	return true
}

// closeReason returns the reason of the first close, or nil while open.
func (g *guard) closeReason() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.reason
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
