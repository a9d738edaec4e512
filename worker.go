package listen

import (
	"context"
	"sync"
)

// OutcomeKind tells what one pull of a stream produced.
type OutcomeKind uint8

const (
	// OutcomeEvent carries an event to shape and write (or drop).
	OutcomeEvent OutcomeKind = iota + 1
	// OutcomeClosed means the stream ended gracefully: write the completion
	// result and close with ErrComplete.
	OutcomeClosed
	// OutcomeError means the stream failed (an error from Next, a panic, or
	// an invalid Next result): write the failure and close with Failed(Err).
	OutcomeError
)

// Outcome is the result of one pull: an event, a graceful close, or an error.
type Outcome struct {
	Kind  OutcomeKind
	Event Event
	Err   error
}

// Worker pulls a subscription's stream on demand. It owns one goroutine,
// which calls Stream.Next once per Continue, never two calls in flight, and
// sends each outcome on Outcomes.
//
// The goroutine ends when Stop is called, when the owner context given to
// StartWorker ends, or when the subscription is closed (by Close or by its
// owner's end). It never closes the stream: the subscription's guard does.
// Once the owner has ended or the close has begun, the worker delivers
// nothing more: Outcomes is closed without a further value, so an owner
// never writes a completion for a stream that was disconnected. A Next that
// is blocked in the source when the worker is told to stop keeps the
// goroutine alive until it returns; the guard's close of the stream must
// release it (that is part of the Stream contract), and its outcome is then
// discarded.
//
// Continue and Stop may be called from any goroutine. Outcomes has one
// receiver: the owner.
type Worker struct {
	stream Stream
	owner  <-chan struct{}
	// closing is the guard's: closed when the subscription's close begins
	// (nil for a worker started after it, which pulls the closed stream).
	closing <-chan struct{}

	// out carries outcomes to the owner. Its buffer of one means a pull's
	// outcome never waits for the owner to be ready. The worker goroutine is
	// its only sender and closes it when it exits.
	out chan Outcome
	// wake is signalled (buffer of one, never closed) when demand rises.
	wake chan struct{}
	// stop is closed by the first Stop.
	stop     chan struct{}
	stopOnce sync.Once
	// done is closed by the worker goroutine as it exits, after out.
	done chan struct{}

	mu     sync.Mutex
	demand int
}

func startWorker(stream Stream, owner context.Context, closing <-chan struct{}) *Worker {
	w := &Worker{
		stream:  stream,
		closing: closing,
		out:     make(chan Outcome, 1),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if owner != nil {
		w.owner = owner.Done()
	}
	go w.run()
	return w
}

// Outcomes returns the channel of outcomes: exactly one per Continue, in
// order, until the worker stops. The worker closes it when its goroutine
// exits.
func (w *Worker) Outcomes() <-chan Outcome { return w.out }

// Continue asks for exactly one more outcome. Calls made while a Next is in
// flight queue up; each produces its own Next after the previous one
// returned and its outcome was handed over.
func (w *Worker) Continue() {
	w.mu.Lock()
	w.demand++
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Stop ends the worker without closing the stream. It does not wait (a Next
// blocked in the source is released by closing the subscription); receive
// from Outcomes until it is closed, or call Done, to wait. Stop is idempotent.
func (w *Worker) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
}

// Done returns a channel closed when the worker goroutine has exited.
func (w *Worker) Done() <-chan struct{} { return w.done }

func (w *Worker) run() {
	defer close(w.done)
	defer close(w.out)
	for {
		select {
		case <-w.wake:
		case <-w.stop:
			return
		case <-w.owner:
			return
		case <-w.closing:
			return
		}
		for w.take() {
			if w.ended() {
				return
			}
			o := nextEvent(w.stream)
			// A Next released by the close, or by the owner's end, returns
			// after that end began: it is checked again before delivery.
			if w.ended() {
				return
			}
			select {
			case w.out <- o:
			case <-w.stop:
				return
			case <-w.owner:
				return
			case <-w.closing:
				return
			}
		}
	}
}

// ended reports whether the worker was stopped, its owner ended or the
// subscription's close began.
func (w *Worker) ended() bool {
	select {
	case <-w.stop:
		return true
	case <-w.owner:
		return true
	case <-w.closing:
		return true
	default:
		return false
	}
}

// take consumes one unit of demand.
func (w *Worker) take() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.demand == 0 {
		return false
	}
	w.demand--
	return true
}
