package hub

import (
	"sync"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
)

// Listener states, guarded by listener.mu.
const (
	stateOpen uint8 = iota
	// stateCompleting: Shutdown marked the listener; Next hands out what is
	// queued, then answers ErrClosed. Publishing skips it.
	stateCompleting
	// stateBehind: the listener's queue overflowed under EndListener; its
	// queue was freed, Next answers listen.ErrFellBehind. Publishing skips
	// it.
	stateBehind
	// stateClosed: Close ran; Next answers ErrClosed.
	stateClosed
)

// listener is one opened hub stream: the listen.Stream that Hub.Open
// returns.
//
// Its fields split in two by lock. filter and hub never change after Open.
// memb and counted belong to the hub's index and are guarded by Hub.mu. The
// rest is guarded by mu, which is held only for a few instructions and never
// while calling out of the package. The struct fits the 112-byte size
// class: what only some listeners need (a queue, a blocked Next's channel)
// is made when first needed.
type listener struct {
	// Guarded by mu. The fields Publish touches come first, close together.
	mu    sync.Mutex
	state uint8
	// pulling is true while a Next is blocked waiting for an event.
	pulling bool
	// polling is true after a TryNext found nothing, until the next event,
	// Shutdown or Close: the puller waits to be woken (notify).
	polling bool
	// counted is guarded by Hub.mu, not mu: the listener is counted in
	// Hub.closing (Shutdown marked it). So is folder: the folder index the
	// listener sits in (opened with listen.Options.SubResources; it is
	// counted in Hub.nfolder), nil for an exact listener.
	counted bool
	// offerMask: the kinds of the list changes offered to offerer.
	offerMask uint8
	folder    *folderIndex
	// q is the queue, made by the first event queued (nil: empty).
	q *ring
	// handoff is the event a publisher handed straight to a blocked Next.
	handoff *listen.Event
	// wait is closed to wake the Next blocked on it (made by that Next,
	// closed and cleared by the publisher, Shutdown or Close that wakes it).
	wait chan struct{}
	// notify wakes a polling puller (listen.NotifyStream.SetNotify).
	notify func()
	// offerer takes the unscoped list changes of the kinds in offerMask
	// while the listener is armed (SetOfferer).
	offerer core.Offerer

	hub    *Hub
	filter listen.Filter
	// memb is guarded by Hub.mu. memb[0] is always the hub's set of all
	// listeners. It is inline's array when two fit (the set of all and one
	// list change, the usual listen): one allocation fewer per listener.
	memb   []membership
	inline [2]membership
}

func newListener(h *Hub, filter listen.Filter) *listener {
	return &listener{hub: h, filter: filter}
}

// EventsValidated reports that every event the listener hands out was
// validated by Publish (core.ValidatedStream): its subscription does not validate
// it again.
func (l *listener) EventsValidated() bool { return true }

// Delivery results of one publication for one listener.
const (
	resSkipped   uint8 = iota // closed or completing meanwhile: not matched
	resDelivered              // handed to a blocked Next
	resBuffered               // queued
	resReplaced               // queued, the oldest queued event dropped
	resDropped                // the new event dropped (DropNewest)
	resEnded                  // the listener ended, its queue freed (EndListener)
)

// deliver offers one event to the listener. It never blocks beyond the
// listener's own short critical section.
func (l *listener) deliver(e *listen.Event, maxBuffer int, policy Overflow) uint8 {
	l.mu.Lock()
	switch {
	case l.state != stateOpen:
		l.mu.Unlock()
		return resSkipped
	case l.pulling && l.handoff == nil:
		// A blocked Next implies an empty queue: hand over directly.
		l.handoff = e
		l.wakeNext()
		l.mu.Unlock()
		return resDelivered
	case l.polling && l.handoff == nil && l.offerer != nil && e.Scope == "" && e.Kind < 8 &&
		l.offerMask&(1<<e.Kind) != 0 && len(e.Params) == 0 && len(e.Metadata) == 0 && l.offerer.Offer(uint8(e.Kind)):
		// A plain list change, taken by the fast stream itself: the
		// listener stays armed for the next event.
		l.mu.Unlock()
		return resDelivered
	case l.polling && l.handoff == nil:
		// A waiting poller also implies an empty queue.
		l.handoff = e
		l.polling = false
		notify := l.wake()
		l.mu.Unlock()
		if notify != nil {
			notify()
		}
		return resDelivered
	case l.held() < maxBuffer:
		if l.q == nil {
			l.q = &ring{}
		}
		l.q.push(e, maxBuffer)
		l.mu.Unlock()
		return resBuffered
	case policy == DropNewest:
		l.mu.Unlock()
		return resDropped
	case policy == EndListener:
		// The listener fell behind: it ends instead of losing events
		// silently. Its queue goes now (the subscription writes the
		// ending, not the backlog).
		n := int64(l.q.len())
		l.q, l.handoff = nil, nil
		l.state = stateBehind
		l.polling = false
		l.wakeNext()
		notify := l.wake()
		l.mu.Unlock()
		l.hub.queued.Add(-n)
		if notify != nil {
			notify()
		}
		return resEnded
	default: // DropOldest
		switch {
		case l.handoff == nil:
			l.q.replaceOldest(e)
		case l.q.len() == 0:
			l.handoff = e // the one event held is the oldest
		default: // the handed-over event is the oldest: the queue's moves up
			l.handoff = l.q.pop()
			l.q.push(e, maxBuffer)
		}
		l.mu.Unlock()
		return resReplaced
	}
}

// held is the number of events the listener holds: its queue, and an event
// handed over but not taken yet (which a TryNextArmed that armed the
// listener lets a publisher hand over while the puller is still writing
// the previous one). MaxBuffer bounds it. l.mu is held.
func (l *listener) held() int {
	if l.handoff != nil {
		return l.q.len() + 1
	}
	return l.q.len()
}

// Next returns the next event of the listener, in publication order,
// blocking while the queue is empty. It returns listen.ErrClosed once the
// listener was closed, or once it was completed and its queue is empty, and
// errPullPending if another Next is already blocked on the same stream.
func (l *listener) Next() (listen.Event, error) {
	l.mu.Lock()
	if l.pulling {
		l.mu.Unlock()
		return listen.Event{}, errPullPending
	}
	if l.q.len() > 0 {
		e := l.pop()
		l.mu.Unlock()
		l.hub.queued.Add(-1)
		return *e, nil
	}
	if l.state != stateOpen {
		err := l.endErr()
		l.mu.Unlock()
		return listen.Event{}, err
	}
	// The queue is empty and stays empty while pulling: a publisher hands
	// its event over instead of queueing it, and closes wait; Shutdown and
	// Close close it too.
	l.pulling = true
	wait := make(chan struct{})
	l.wait = wait
	l.mu.Unlock()
	<-wait
	l.mu.Lock()
	l.pulling = false
	e := l.handoff
	l.handoff = nil
	err := l.endErr()
	l.mu.Unlock()
	if e == nil {
		return listen.Event{}, err
	}
	return *e, nil
}

// endErr is what a pull of an ended listener answers: listen.ErrFellBehind
// for one that overflowed under EndListener, listen.ErrClosed otherwise.
// l.mu is held.
func (l *listener) endErr() error {
	if l.state == stateBehind {
		return listen.ErrFellBehind
	}
	return listen.ErrClosed
}

// TryNext is Next without blocking (listen.NotifyStream): ok is false when
// no event is queued yet, and the notify function of SetNotify is then
// called when one is.
func (l *listener) TryNext() (listen.Event, bool, error) {
	l.mu.Lock()
	if l.pulling {
		l.mu.Unlock()
		return listen.Event{}, false, errPullPending
	}
	if e := l.handoff; e != nil {
		l.handoff = nil
		l.mu.Unlock()
		return *e, true, nil
	}
	if l.q.len() > 0 {
		e := l.pop()
		l.mu.Unlock()
		l.hub.queued.Add(-1)
		return *e, true, nil
	}
	if l.state != stateOpen {
		err := l.endErr()
		l.mu.Unlock()
		return listen.Event{}, true, err
	}
	l.polling = true
	l.mu.Unlock()
	return listen.Event{}, false, nil
}

// TryNextArmed is TryNext that, when it takes the last queued event of an
// open listener, also arms the notify function for the next event, as a
// TryNext that finds nothing does: armed reports it, and the core's poller
// then waits after writing the event instead of pulling again. The next
// event is handed over (the puller may still be writing this one: the
// handed-over event counts against MaxBuffer, see deliver).
func (l *listener) TryNextArmed(core.Internal) (ev listen.Event, ok, armed bool, err error) {
	l.mu.Lock()
	var e *listen.Event
	queued := false
	switch {
	case l.pulling:
		l.mu.Unlock()
		return listen.Event{}, false, false, errPullPending
	case l.handoff != nil:
		e, l.handoff = l.handoff, nil
	case l.q.len() > 0:
		e, queued = l.pop(), true
	case l.state != stateOpen:
		err := l.endErr()
		l.mu.Unlock()
		return listen.Event{}, true, false, err
	default:
		l.polling = true
		l.mu.Unlock()
		return listen.Event{}, false, false, nil
	}
	armed = l.q.len() == 0 && l.state == stateOpen
	l.polling = armed
	l.mu.Unlock()
	if queued {
		l.hub.queued.Add(-1)
	}
	return *e, true, armed, nil
}

// SetNotify makes the listener call notify (listen.NotifyStream): after an
// event is handed to a poller, and on Shutdown and Close. notify runs with
// no lock of the listener or the hub held.
func (l *listener) SetNotify(notify func()) {
	l.mu.Lock()
	l.notify = notify
	l.mu.Unlock()
}

// SetOfferer makes an armed listener offer o its unscoped list changes of
// the kinds in mask (bit k: listen.Kind k) before handing them over: o
// takes one at a time (core.Offerer), with no lock of the listener held
// after that. Offer runs with l.mu held: it must not block.
func (l *listener) SetOfferer(_ core.Internal, o core.Offerer, mask uint8) {
	l.mu.Lock()
	l.offerer, l.offerMask = o, mask
	l.mu.Unlock()
}

// wake returns the function that wakes a polling puller, for the caller to
// call once l.mu is released (nil when none is set). l.mu is held.
func (l *listener) wake() func() { return l.notify }

// Close closes the listener with reason: a blocked Next returns
// listen.ErrClosed, the queue is freed, and the listener leaves every index
// of the hub. Only the first call has an effect (and reaches OnClose).
func (l *listener) Close(reason error) {
	l.mu.Lock()
	if l.state == stateClosed {
		l.mu.Unlock()
		return
	}
	l.state = stateClosed
	n := int64(l.q.len())
	l.q = nil
	l.handoff = nil
	l.polling = false
	l.wakeNext()
	notify := l.wake()
	l.mu.Unlock()
	if notify != nil {
		notify()
	}

	h := l.hub
	if n > 0 {
		h.queued.Add(-n)
	}
	h.mu.Lock()
	if h.watch != nil {
		h.watch.closed(l)
	}
	l.leave(0)
	l.memb = nil
	if l.folder != nil {
		h.leaveFolderIndexLocked(l.folder)
		l.folder = nil
		h.nfolder.Add(-1)
	}
	if l.counted {
		l.counted = false
		h.closing--
		if h.closing == 0 && h.idle != nil {
			close(h.idle)
			h.idle = nil
		}
	}
	remaining := len(h.all.items)
	h.mu.Unlock()
	if h.watch != nil {
		h.watch.deliver()
	}

	if h.hooks != nil {
		h.hooks.close(CloseInfo{
			Subscriptions: remaining,
			Reason:        listen.Classify(reason),
			Err:           reason,
		})
	}
}

// complete marks an open listener completing and wakes a blocked Next. It
// reports whether the listener was open and returns its notify function,
// if one is set, for the caller to call once it holds no lock.
func (l *listener) complete() (ok bool, notify func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.state != stateOpen {
		return false, nil
	}
	l.state = stateCompleting
	l.polling = false
	l.wakeNext()
	return true, l.wake()
}

// wakeNext wakes the blocked Next, if any. l.mu is held.
func (l *listener) wakeNext() {
	if l.wait != nil {
		close(l.wait)
		l.wait = nil
	}
}

// pop takes the oldest queued event; a queue left empty with a large buffer
// is released. l.mu is held and the queue is not empty.
func (l *listener) pop() *listen.Event {
	e := l.q.pop()
	if l.q.n == 0 && len(l.q.buf) > keepRing {
		l.q = nil
	}
	return e
}

// ring is a FIFO of events, allocated on the first push and grown on demand
// up to the hub's MaxBuffer, so that an idle listener holds no buffer.
// A nil ring is empty.
type ring struct {
	buf  []*listen.Event
	head int32 // index of the oldest event
	n    int32 // number of queued events
}

// minRing is the capacity of a first allocation; keepRing is the largest
// capacity kept once the queue empties (bigger buffers are released).
const (
	minRing  = 4
	keepRing = 16
)

func (r *ring) len() int {
	if r == nil {
		return 0
	}
	return int(r.n)
}

func (r *ring) push(e *listen.Event, maxBuffer int) {
	if int(r.n) == len(r.buf) {
		r.grow(maxBuffer)
	}
	i := int(r.head) + int(r.n)
	if i >= len(r.buf) {
		i -= len(r.buf)
	}
	r.buf[i] = e
	r.n++
}

func (r *ring) grow(maxBuffer int) {
	c := min(max(2*len(r.buf), minRing), maxBuffer)
	buf := make([]*listen.Event, c)
	k := copy(buf, r.buf[r.head:])
	copy(buf[k:], r.buf[:r.head])
	r.buf = buf
	r.head = 0
}

// replaceOldest drops the oldest event of a full ring and queues e.
func (r *ring) replaceOldest(e *listen.Event) {
	r.buf[r.head] = e
	r.head++
	if int(r.head) == len(r.buf) {
		r.head = 0
	}
}

func (r *ring) pop() *listen.Event {
	e := r.buf[r.head]
	r.buf[r.head] = nil
	r.head++
	if int(r.head) == len(r.buf) {
		r.head = 0
	}
	r.n--
	if r.n == 0 {
		r.head = 0
	}
	return e
}
