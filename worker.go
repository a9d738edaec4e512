package listen

import "sync"

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

// Worker pulls a subscription's stream on demand: Stream.Next once per
// Continue, never two calls in flight, each outcome sent on Outcomes. A
// worker of StartWorker owns two goroutines: one sends the outcomes, the
// other calls Next, so that Subscription.End reaches the owner at once
// (as an outcome, ahead of any event not yet delivered) even while a Next
// waits in the source.
//
// The goroutines end when Stop is called, when the owner context given to
// StartWorker ends, when the subscription is closed (by Close or by its
// owner's end), or once an End's outcome was sent. The worker never
// closes the stream: the subscription's guard does.
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

	// out carries outcomes to the owner (a worker of StartWorker). Its
	// buffer of one means a pull's outcome never waits for the owner to be
	// ready. The worker goroutine is its only sender and closes it when it
	// exits. It is nil for a worker that hands its outcomes over through
	// notify instead (Serve's, see take).
	out chan Outcome
	// notify, for a worker without out, is called after each outcome is put
	// in slot and when the goroutine exits.
	notify func()
	// wake is signalled (buffer of one, never closed) when demand rises.
	wake chan struct{}
	// ending, for a worker of StartWorker, returns the reason given to
	// Subscription.End (nil before); endWake is signalled (buffer of one,
	// never closed) by End.
	ending  func() error
	endWake chan struct{}
	// stop is closed by the first Stop.
	stop     chan struct{}
	stopOnce sync.Once
	// exiting is closed by the worker goroutine as it begins to exit, before
	// out is closed: from then on StartWorker may start the next worker (an
	// owner that has seen Outcomes closed must be able to). done is closed
	// last, once out is closed or notify called: Close waits for it.
	exiting chan struct{}
	done    chan struct{}

	mu     sync.Mutex
	demand int
	// slot, full, asked and exited are a notify worker's hand-over: the
	// outcome not yet taken, whether a pull was asked for and not yet
	// taken, and whether the goroutine has exited.
	slot   Outcome
	full   bool
	asked  bool
	exited bool
}

// startNotifyWorker starts the worker of Serve's Poller, for a stream that
// blocks: it hands its outcomes over through notify (see take), and the
// guard's close stops it.
func startNotifyWorker(stream Stream, closing <-chan struct{}, notify func()) *Worker {
	w := &Worker{
		stream:  stream,
		closing: closing,
		notify:  notify,
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		exiting: make(chan struct{}),
		done:    make(chan struct{}),
	}
	go w.run() // ends on Stop or the close; Subscription.Close waits for it
	return w
}

// startOwnedWorker starts the worker of StartWorker: its outcomes go out on
// Outcomes, and ending (Subscription.endReason) is consulted before each
// pull and each delivery; the returned worker's signalEnd is End's wake-up.
func startOwnedWorker(stream Stream, owner, closing <-chan struct{}, ending func() error) *Worker {
	w := &Worker{
		stream:  stream,
		owner:   owner,
		closing: closing,
		ending:  ending,
		endWake: make(chan struct{}, 1),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
		exiting: make(chan struct{}),
		done:    make(chan struct{}),
		out:     make(chan Outcome, 1),
	}
	go w.runOwned() // ends as run does, or once an End's outcome is sent
	return w
}

// signalEnd wakes a worker of StartWorker to look at End's reason.
func (w *Worker) signalEnd() {
	select {
	case w.endWake <- struct{}{}:
	default:
	}
}

// Outcomes returns the channel of outcomes: exactly one per Continue, in
// order, until the worker stops, and one more, not asked for, when
// Subscription.End is called: its reason, after which nothing else comes.
// The worker closes it when its goroutines exit: once it is closed,
// StartWorker may start the next worker.
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
// from Outcomes until it is closed to wait. Stop is idempotent.
func (w *Worker) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
}

// run is the goroutine of Serve's worker (startNotifyWorker).
func (w *Worker) run() {
	defer w.exit()
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
		for w.use() {
			if w.ended() {
				return
			}
			o := nextEvent(w.stream)
			// A Next released by the close, or by the owner's end, returns
			// after that end began: it is checked again before delivery.
			if w.ended() {
				return
			}
			if !w.deliver(o) {
				return
			}
		}
	}
}

// runOwned is the goroutine of a worker of StartWorker. It hands each pull
// to a puller goroutine, so that it can wait for the pull's outcome and for
// End at once. It exits once the puller has: a Next blocked in the source
// when the worker ends keeps both until the stream's close releases it.
func (w *Worker) runOwned() {
	ask := make(chan struct{})        // a pull, taken by the puller
	pulled := make(chan Outcome, 1)   // its outcome
	quit := make(chan struct{})       // closed when the worker ends
	pullerDone := make(chan struct{}) // closed by the puller as it exits
	go func() {                       // the puller: ends on quit, once its Next has returned
		defer close(pullerDone)
		for {
			select {
			case <-ask:
			case <-quit:
				return
			}
			pulled <- nextEvent(w.stream)
		}
	}()
	defer func() {
		close(quit)
		<-pullerDone
		w.exit()
	}()
	pulling := false
	for {
		if w.ended() {
			return
		}
		if r := w.ending(); r != nil {
			if !serverEnded(r) {
				r = Failed(r)
			}
			w.deliver(Outcome{kind: outcomeError, Err: r})
			return
		}
		if !pulling && w.use() {
			ask <- struct{}{} // the puller waits for it: it has no pull in flight
			pulling = true
		}
		select {
		case o := <-pulled:
			pulling = false
			// End, the owner's end and the close win over an outcome
			// ready at the same moment: checked at the top again.
			if w.ended() || w.ending() != nil {
				continue
			}
			if !w.deliver(o) {
				return
			}
		case <-w.wake:
		case <-w.endWake:
		case <-w.stop:
			return
		case <-w.owner:
			return
		case <-w.closing:
			return
		}
	}
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

// exit tells the owner that the goroutine is exiting: out is closed, or
// notify called. exiting is closed before (an owner that has seen Outcomes
// closed may start the next worker), done after (a Close that has waited
// for done finds Outcomes closed).
func (w *Worker) exit() {
	close(w.exiting)
	if w.out != nil {
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

// use consumes one unit of demand.
func (w *Worker) use() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.demand == 0 {
		return false
	}
	w.demand--
	return true
}

// take is a notify worker's pull, for the Poller that serves a stream that
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
