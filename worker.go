package listen

import (
	"sync"
	"sync/atomic"
)

// Outcome is the result of one pull of a stream, read as Stream.Next's
// contract reads it, one of three:
//
//   - an event (Err nil): shape it with Subscription.Notification and write
//     it (or nothing, for a drop), then Continue;
//   - the stream's graceful end (Err is ErrClosed, for a Next that returned
//     an error matching ErrClosed or io.EOF);
//   - its end for any other reason: a failure (Next's error, a *PanicError,
//     or ErrInvalidEvent for a Next that returned neither an event nor an
//     error), an early ending (ErrRevoked, ErrExpired, ErrLifetime,
//     ErrFellBehind, from Next or from Subscription.End) or ErrShutdown
//     (from End).
//
// For the last two, Subscription.Terminal gives the message to write and
// the reason to close with.
type Outcome struct {
	Event Event
	Err   error
	kind  outcomeKind
}

// outcomeKind is how the serving state machine reads an Outcome (a panic
// whose value is ErrClosed is a failure, not an end).
type outcomeKind uint8

const (
	outcomeEvent outcomeKind = iota + 1
	outcomeClosed
	outcomeError
	// outcomeExited is a notify worker's answer once it has exited without
	// an outcome (see Worker.take).
	outcomeExited
)

// Worker pulls a subscription's stream on demand. It owns one goroutine,
// which calls Stream.Next once per Continue, never two calls in flight, and
// sends each outcome on Outcomes.
//
// The goroutine ends when Stop is called, when the owner context given to
// StartWorker ends, when the subscription is closed (by Close or by its
// owner's end), or once End's reason was handed over. It never closes the
// stream: the subscription's guard does. Once the owner has ended or the
// close has begun, the worker delivers nothing more: Outcomes is closed
// without a further value, so an owner never writes a completion for a
// stream that was disconnected. A Next that is blocked in the source when
// the worker is told to stop keeps the goroutine alive until it returns;
// the guard's close of the stream must release it (that is part of the
// Stream contract), and its outcome is then discarded.
//
// Subscription.End reaches the owner at once, as one more outcome: the
// goroutine hands it over when it is not inside Next; while a Next waits
// in the source, End hands it over from a goroutine of its own (which
// ends once it is received, or the worker ended), and the Next's outcome
// is then discarded.
//
// Continue and Stop may be called from any goroutine. Outcomes has one
// receiver: the owner.
type Worker struct {
	stream Stream
	owner  <-chan struct{}
	// closing is the guard's: closed when the subscription's close begins
	// (nil for a worker started after it, which pulls the closed stream).
	closing <-chan struct{}

	// out carries outcomes to the owner (a worker of StartWorker). Its
	// buffer of one means a pull's outcome never waits for the owner to be
	// ready. The worker goroutine sends on it, and so does End's goroutine
	// (ender) when it takes the hand-over; the worker goroutine closes it,
	// once ender is done. It is nil for a worker that hands its outcomes
	// over through notify instead (Serve's, see take).
	out chan Outcome
	// notify, for a worker without out, is called after each outcome is put
	// in slot and when the goroutine exits.
	notify func()
	// end, for a worker of StartWorker, is the subscription's End state
	// (its reason, nil before End); nil for Serve's worker.
	end *endState
	// wake is signalled (buffer of one, never closed) when demand rises or
	// End is called.
	wake chan struct{}
	// stop is closed by the first Stop.
	stop     chan struct{}
	stopOnce sync.Once
	// exiting is set by the worker goroutine as it begins to exit, before
	// out is closed: from then on StartWorker may start the next worker (an
	// owner that has seen Outcomes closed must be able to). done is closed
	// last, once out is closed or notify called: Close waits for it.
	exiting atomic.Bool
	done    chan struct{}

	mu     sync.Mutex
	demand int
	// inNext: the goroutine is inside Next (from the pull's use of demand
	// to its return). endTaken: End's reason was taken for hand-over, by
	// the goroutine or by ender (closed by ender once it is done).
	inNext   bool
	endTaken bool
	ender    chan struct{}
	// slot, full, asked and exited are a notify worker's hand-over: the
	// outcome not yet taken, whether a pull was asked for and not yet
	// taken, and whether the goroutine has exited.
	slot   Outcome
	full   bool
	asked  bool
	exited bool
}

// startWorker starts a worker pulling stream. For a worker of StartWorker,
// owner is the Done channel of the owner it answers to and end the
// subscription's End state (signalEnd is then End's wake-up); Serve's
// worker has neither (the guard's close stops it), and notify instead of
// Outcomes (see take).
func startWorker(stream Stream, owner, closing <-chan struct{}, end *endState, notify func()) *Worker {
	w := &Worker{
		stream:  stream,
		owner:   owner,
		closing: closing,
		end:     end,
		notify:  notify,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
	if notify == nil {
		w.out = make(chan Outcome, 1)
	}
	go w.run() // ends on Stop, the owner's end, the close or End; Subscription.Close waits for it
	return w
}

// Outcomes returns the channel of outcomes: exactly one per Continue, in
// order, until the worker stops, and one more, not asked for, when
// Subscription.End is called: its reason, after which nothing else comes.
// The worker closes it when its goroutine exits: once it is closed,
// StartWorker may start the next worker.
func (w *Worker) Outcomes() <-chan Outcome { return w.out }

// Continue asks for exactly one more outcome. Calls made while a Next is in
// flight queue up; each produces its own Next after the previous one
// returned and its outcome was handed over.
func (w *Worker) Continue() {
	w.mu.Lock()
	w.demand++
	w.mu.Unlock()
	w.signal()
}

// signal wakes the goroutine.
func (w *Worker) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Stop ends the worker without closing the stream. It does not wait (a Next
// blocked in the source is released by closing the subscription); receive
// from Outcomes until it is closed to wait. Stop is idempotent.
func (w *Worker) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
}

// signalEnd is End's wake-up of a worker of StartWorker: while the
// goroutine is inside Next it takes the hand-over of End's reason to a
// goroutine of its own (ender); otherwise the goroutine takes it.
func (w *Worker) signalEnd() {
	w.mu.Lock()
	if !w.inNext || w.endTaken {
		w.mu.Unlock()
		w.signal()
		return
	}
	w.endTaken = true
	w.ender = make(chan struct{})
	w.mu.Unlock()
	go func() { // ends once received, or the worker ended; exit waits for it
		defer close(w.ender)
		if !w.ended() {
			w.deliver(endOutcome(*w.end.ending.Load()))
		}
	}()
}

// endOutcome is the outcome End's reason r stands for: r itself for the
// server's own end (an early ending, ErrShutdown), Failed(r) for any other.
func endOutcome(r error) Outcome {
	if !serverEnded(r) {
		r = Failed(r)
	}
	return Outcome{kind: outcomeError, Err: r}
}

// takeEnd takes End's reason for the goroutine to hand over, if End was
// called and nobody took it yet.
func (w *Worker) takeEnd() (error, bool) {
	if w.end == nil {
		return nil, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	r := w.end.ending.Load()
	if r == nil || w.endTaken {
		return nil, false
	}
	w.endTaken = true
	return *r, true
}

func (w *Worker) run() {
	defer w.exit()
	for {
		if r, ok := w.takeEnd(); ok {
			w.deliver(endOutcome(r))
			return
		}
		select {
		case <-w.wake:
		case <-w.stop:
			return
		case <-w.owner:
			return
		case <-w.closing:
			return
		}
		for w.use() {
			if w.ended() {
				return
			}
			o := nextEvent(w.stream)
			// A Next released by the close, or by the owner's end, returns
			// after that end began: it is checked again before delivery.
			// End wins over the outcome: ender hands it over, or the
			// goroutine does.
			taken := w.leaveNext()
			if taken || w.ended() {
				return
			}
			if r, ok := w.takeEnd(); ok {
				w.deliver(endOutcome(r))
				return
			}
			if !w.deliver(o) {
				return
			}
		}
	}
}

// leaveNext records that Next returned, and reports whether ender took
// End's hand-over meanwhile.
func (w *Worker) leaveNext() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inNext = false
	return w.ender != nil
}

// deliver hands o to the owner. It reports false when the worker ended
// meanwhile.
func (w *Worker) deliver(o Outcome) bool {
	if w.out == nil {
		w.mu.Lock()
		w.slot, w.full = o, true
		w.mu.Unlock()
		w.notify()
		return true
	}
	select {
	case w.out <- o:
		return true
	case <-w.stop:
	case <-w.owner:
	case <-w.closing:
	}
	return false
}

// exit tells the owner that the goroutine is exiting: out is closed (once
// ender, if any, is done), or notify called. exiting is closed before (an
// owner that has seen Outcomes closed may start the next worker), done
// after (a Close that has waited for done finds Outcomes closed).
func (w *Worker) exit() {
	w.exiting.Store(true)
	if w.out != nil {
		w.mu.Lock()
		ender := w.ender
		w.mu.Unlock()
		if ender != nil {
			<-ender
		}
		close(w.out)
	} else {
		w.mu.Lock()
		w.exited = true
		w.mu.Unlock()
		w.notify()
	}
	close(w.done)
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

// use consumes one unit of demand; the goroutine then calls Next. Once End
// was called there is no other pull: the goroutine hands End's reason over.
func (w *Worker) use() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.demand == 0 || w.endTaken || (w.end != nil && w.end.ending.Load() != nil) {
		return false
	}
	w.demand--
	w.inNext = true
	return true
}

// take is a notify worker's pull, for the poller that serves a stream that
// blocks: it asks the worker for one pull (once) and returns its outcome
// once it has come (ok false until then; the worker calls notify when it
// comes). An exited worker answers outcomeExited.
func (w *Worker) take() (Outcome, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.full:
		o := w.slot
		w.slot, w.full, w.asked = Outcome{}, false, false
		return o, true
	case w.exited:
		return Outcome{kind: outcomeExited}, true
	case !w.asked:
		w.asked = true
		w.demand++
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return Outcome{}, false
}
