package listen

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen/internal/core"
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

// This file holds what ties an open subscription to its clock and to its
// principal for its whole life: its lifetime bound (Options.MaxLifetime),
// its credential's expiry (Request.Expiry), and its principal's Access.
// Each ends the stream through Subscription.End, with its early ending;
// none needs a goroutine while the stream is idle (a runtime timer per
// subscription for the clock, one per Access for the re-checks).

// life is a subscription's part in all that. A subscription has one when
// it has a lifetime, an expiry, an Access or scopes. Its fields do not
// change after Open but p and slot, which the Access's mu guards, and the
// delivery cache dc, which has its own.
type life struct {
	s *Subscription
	// scopes are Request.Scopes: the scoped events the stream receives.
	scopes []string
	// timer ends the stream at the first of its lifetime and its expiry;
	// nil when it has neither.
	timer *time.Timer

	// With Options.Access (s.opts.Access): the principal the stream
	// counts under (p, at slot in p.subs, guarded by the Access's mu), and
	// the request view a re-check or a delivery asks Options.CanRead with
	// (nil without CanRead).
	auth    any // Request.Auth
	p       *principal
	slot    int32
	seq     uint64 // the order the Access saw the stream open in
	deliver bool   // Access.Deliver: CanRead at delivery, cached in dc
	others  bool   // the filter selects more than resource updates
	view    *Request
	uris    []string // the subscription's accepted URIs (Subscription.watch.list)
	dc      *deliveryCache
}

// deliveryCache holds a stream's delivery verdicts (Access.Deliver), valid
// while gen is its principal's gen.
type deliveryCache struct {
	mu    sync.Mutex
	cache map[string]bool
	gen   uint64
}

// canRead is Options.CanRead, set whenever view is.
func (l *life) canRead() func(context.Context, *Request, string) bool { return l.s.opts.CanRead }

// maxReadCache bounds a subscription's cache of delivery verdicts (a
// folder listen may see any number of sub-resources); a full cache is
// cleared.
const maxReadCache = 1024

// newLife returns s's life, or nil when nothing applies. It arms the timer
// and joins the Access.
func newLife(s *Subscription, req *Request, opts *Options) *life {
	if opts.MaxLifetime <= 0 && req.Expiry.IsZero() && opts.Access == nil && len(req.Scopes) == 0 {
		return nil
	}
	l := &life{s: s, scopes: req.Scopes}
	var at time.Time
	var reason error
	if opts.MaxLifetime > 0 {
		at, reason = time.Now().Add(opts.MaxLifetime-jitter(opts)), ErrLifetime
	}
	if !req.Expiry.IsZero() && (at.IsZero() || req.Expiry.Before(at)) {
		at, reason = req.Expiry, ErrExpired
	}
	if !at.IsZero() {
		l.timer = time.AfterFunc(time.Until(at), func() { s.End(reason) })
	}
	if a := opts.Access; a != nil {
		l.deliver = a.Deliver && opts.CanRead != nil
		if l.deliver {
			l.dc = &deliveryCache{}
		}
		if opts.CanRead != nil {
			if s.watch != nil && s.watch.res != nil && s.watch.res.view != nil {
				l.view = s.watch.res.view
			} else {
				l.view = detachedRequest(req, s.id)
			}
		}
		l.others = s.lists != 0 || s.ext != nil && len(s.ext.filters) > 0
		if s.watch != nil {
			l.uris = s.watch.list
		}
		a.add(l, req.Auth)
	}
	return l
}

// jitter draws how much earlier than MaxLifetime a stream ends: uniformly
// in [0, LifetimeJitter] (MaxLifetime/10 by default, at most MaxLifetime).
func jitter(opts *Options) time.Duration {
	j := opts.LifetimeJitter
	if j == 0 {
		j = opts.MaxLifetime / 10
	}
	j = min(j, opts.MaxLifetime)
	if j <= 0 {
		return 0
	}
	return rand.N(j + 1)
}

// release lets go of the timer and the Access once the subscription is
// closed (the Close hook of its stream: see openOwned).
func (l *life) release(error) {
	if l.timer != nil {
		l.timer.Stop()
	}
	if l.p != nil {
		l.s.opts.Access.remove(l)
	}
}

// readable is CanRead at delivery for uri, answered from the cache while
// the principal has not been re-checked since. A panic in CanRead fails
// the stream, as while shaping any update.
func (l *life) readable(ctx context.Context, uri string) (ok bool, err error) {
	gen := l.p.gen.Load()
	dc := l.dc
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if dc.gen != gen {
		clear(dc.cache)
		dc.gen = gen
	} else if v, hit := dc.cache[uri]; hit {
		return v, nil
	}
	if ctx == nil {
		ctx = context.Background()
	}
	if p := catch("Options.CanRead", func() { ok = l.canRead()(ctx, l.view, uri) }); p != nil {
		return false, deliveryPanic(p)
	}
	if dc.cache == nil {
		dc.cache = make(map[string]bool)
	} else if len(dc.cache) >= maxReadCache {
		clear(dc.cache)
	}
	dc.cache[uri] = ok
	return ok, nil
}

// readsAnything reports, on a re-check, whether the stream may still read
// something it asked for: always when it asked for more than resource
// updates or there is no CanRead; otherwise when CanRead allows one of its
// URIs. memo, if not nil, holds the answers of this re-check of its
// principal, shared by its streams. A panic in CanRead counts as a
// refusal.
func (l *life) readsAnything(ctx context.Context, memo map[string]bool) bool {
	uris := l.uris
	if l.view == nil || l.others || len(uris) == 0 {
		return true
	}
	for _, u := range uris {
		v, seen := memo[u]
		if !seen {
			v = l.check(ctx, u)
			if memo != nil {
				memo[u] = v
			}
		}
		if v {
			return true
		}
	}
	return false
}

func (l *life) check(ctx context.Context, uri string) (ok bool) {
	if core.SafeCall(func() { ok = l.canRead()(ctx, l.view, uri) }) != nil {
		return false
	}
	return ok
}
