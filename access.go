package listen

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen/internal/core"
)

// Access binds listens to their principal (Request.Auth) for their whole
// life: it re-evaluates the principal's access on a schedule and on
// demand, ending the streams of a principal that lost it, and (with
// Deliver) checks CanRead when each resource update is delivered, not only
// at open. Set one Access as Options.Access of every transport of a server
// (HTTP, stdio, the go-sdk adapter): it sees all their listens. The zero
// Access does nothing but track them (End works on it); set its fields
// before the first listen opens and leave them afterwards. Close it when
// the server shuts down: it ends the Checks in flight and waits for them.
//
// A re-check of a principal (on the Every schedule, or by Recheck) calls
// Check once for all its streams, with the Auth of its newest open
// stream, and:
//
//   - if Check returns an error, ends each of them with ErrRevoked (or
//     ErrExpired, when the error matches it): the early ending of
//     Options.EndWithError;
//   - otherwise, when the streams' Options.CanRead is set, asks it again for
//     each URI a stream subscribed to (once per URI for the principal),
//     and ends with ErrRevoked each stream that may now read none of them
//     and asked for nothing else (a list change, an extension's events);
//   - in both cases, forgets the verdicts Deliver cached for its streams.
//
// The principals of a round are re-checked concurrently, at most MaxChecks
// at once, each on a goroutine of the round: a slow Check delays its own
// principal's verdict only. A principal has at most one Check in flight:
// a scheduled round skips a principal whose Check is still running, and
// Recheck waits for it to return before it calls Check again.
//
// The streams of one principal are those whose Auth has the same Key. The
// schedule is one timer per Access, armed while listens are open: an idle
// stream costs no goroutine and no timer of its own, and between rounds
// the Access runs no goroutine at all.
type Access struct {
	// Check re-evaluates a principal's access: nil keeps its streams, an
	// error ends them (see above; a panic counts as an error). It gets the
	// Auth of the principal's newest open stream, on a goroutine of the
	// round, and a context that ends after CheckTimeout (its Err is then
	// context.DeadlineExceeded), when the Recheck call's context ends, or
	// at Close; the context is not to be used once Check has returned. It
	// runs concurrently for different principals, never for one principal
	// twice at once. An answer given
	// once the round's context has ended (Recheck's, or the Access's at
	// Close) is dropped: the streams stay until the next re-check. An
	// error given once CheckTimeout has passed is an error like any other.
	// Nil: the principal is kept (CanRead is still asked again).
	Check func(ctx context.Context, auth any) error
	// Every, if positive, re-checks every principal with an open listen
	// each Every: the next round starts Every after the previous one has
	// started the Check of each of its principals (a Check that is still
	// running does not hold the schedule back). Zero: only Recheck
	// re-checks.
	Every time.Duration
	// MaxChecks bounds the Check calls (each with the CanRead calls of its
	// principal) that run at once, over all the rounds of the Access: a
	// round runs on at most that many goroutines. Zero (or less) means
	// 16.
	MaxChecks int
	// CheckTimeout bounds each Check: its context ends between
	// CheckTimeout and 5/4 of it after the Check began (a watchdog per
	// round goroutine ticks every CheckTimeout/4, so that a Check costs no
	// timer of its own). Zero means 30 seconds; negative, no
	// bound. A
	// Check that ignores its context still holds its principal (no other
	// Check for it starts) and one of the MaxChecks slots until it
	// returns.
	CheckTimeout time.Duration
	// Key returns the key that groups the streams of one principal
	// (a user id from the token's claims): its streams are re-checked
	// together, with one Check call. Nil means Auth itself. A key that is
	// not comparable (a map, a slice), or a Key that panics, makes the
	// stream a principal of its own.
	Key func(auth any) any
	// Deliver makes Options.CanRead decide each resource update at delivery
	// too, not only at open: an update for a URI the principal may no
	// longer read is dropped. The verdicts are cached per stream and URI
	// until the principal's next re-check (at most 1,024 per stream), so a
	// steady stream costs one map lookup per update; set Every, or call
	// Recheck when access changes, so that they do not outlive a change. A
	// stream whose updates may call CanRead is not served on streamhttp's
	// taken-over fast path (CanRead may take its time: a writer loop
	// serves many streams).
	Deliver bool

	mu     sync.Mutex
	groups map[any]*principal
	n      int    // streams in groups
	seq    uint64 // streams added so far: a stream's seq orders it
	timer  *time.Timer
	armed  bool
	closed bool
	// ctx ends at Close; sem holds a token per round goroutine at work
	// (each runs one Check at a time). Both are made by the first round.
	ctx    context.Context
	cancel context.CancelFunc
	sem    chan struct{}
	// wg counts the rounds and their goroutines, for Close.
	wg sync.WaitGroup
}

// Defaults of Access.
const (
	// defaultMaxChecks is Access.MaxChecks when it is zero.
	defaultMaxChecks = 16
	// defaultCheckTimeout is Access.CheckTimeout when it is zero.
	defaultCheckTimeout = 30 * time.Second
)

// principal is the group of one principal's streams in an Access. Its
// fields are guarded by the Access's mu, but the atomic ones.
type principal struct {
	key  any
	subs []*life
	// newest is the stream of subs opened last, and auth its Auth: what
	// Check and Recheck's match get (nil when subs is empty).
	newest *life
	auth   any
	// inflight is true while a Check of the principal runs (a round
	// claims it by swapping false for true). At its end, orphan (its
	// streams all ended meanwhile) and waiting (a Recheck waits on wake,
	// which mu guards) make it take the Access's lock, to forget the
	// principal or to wake the Recheck.
	inflight atomic.Bool
	orphan   atomic.Bool
	waiting  atomic.Bool
	wake     chan struct{}
	// gen counts the principal's re-checks: a delivery verdict cached under
	// an older gen is stale.
	gen atomic.Uint64
}

// keyOf returns the group key of auth: Key's, or auth itself, when it is
// comparable; otherwise (and when Key panics) a key of its own.
func (a *Access) keyOf(auth any) (key any) {
	key = auth
	if a.Key != nil && core.SafeCall(func() { key = a.Key(auth) }) != nil {
		key = new(byte)
	}
	if key == nil || reflect.ValueOf(key).Comparable() {
		return key
	}
	return new(byte) // each stream alone
}

// add puts l under its principal and arms the schedule.
func (a *Access) add(l *life, auth any) {
	key := a.keyOf(auth)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.groups == nil {
		a.groups = make(map[any]*principal)
	}
	p := a.groups[key]
	if p == nil {
		p = &principal{key: key}
		a.groups[key] = p
	} else if len(p.subs) == 0 {
		p.orphan.Store(false) // kept for its Check in flight, and back
	}
	a.seq++
	l.auth, l.p, l.slot, l.seq = auth, p, int32(len(p.subs)), a.seq
	p.subs = append(p.subs, l)
	p.newest, p.auth = l, auth
	a.n++
	if a.Every > 0 && !a.armed && !a.closed {
		a.armed = true
		if a.timer == nil {
			a.timer = time.AfterFunc(a.Every, a.tick)
		} else {
			a.timer.Reset(a.Every)
		}
	}
}

// remove takes l out of its principal, which then keeps nothing of it;
// the last stream stops the schedule.
func (a *Access) remove(l *life) {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := l.p
	last := len(p.subs) - 1
	if int(l.slot) != last {
		moved := p.subs[last]
		p.subs[l.slot], moved.slot = moved, l.slot
	}
	p.subs[last] = nil
	p.subs = p.subs[:last]
	if p.newest == l {
		p.newest, p.auth = nil, nil
		for _, o := range p.subs {
			if p.newest == nil || o.seq > p.newest.seq {
				p.newest, p.auth = o, o.auth
			}
		}
	}
	a.n--
	if last == 0 {
		// With a Check in flight, its end forgets p (see done): orphan is
		// set before inflight is read, and done clears inflight before it
		// reads orphan, so one of the two sees the other.
		p.orphan.Store(true)
		if !p.inflight.Load() {
			delete(a.groups, p.key)
		}
	}
	if a.n == 0 && a.armed && a.timer.Stop() {
		a.armed = false
	}
}

// begin registers a round (or Recheck call) with Close, and returns the
// Access's context and its Check slots; ok is false once Close was called.
func (a *Access) begin() (ctx context.Context, sem chan struct{}, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, nil, false
	}
	if a.ctx == nil {
		a.ctx, a.cancel = context.WithCancel(context.Background())
		n := a.MaxChecks
		if n <= 0 {
			n = defaultMaxChecks
		}
		a.sem = make(chan struct{}, n)
	}
	a.wg.Add(1)
	return a.ctx, a.sem, true
}

// tick is one scheduled round: the next is armed once this one has
// started the Check of each of its principals.
func (a *Access) tick() {
	ctx, sem, ok := a.begin()
	if !ok {
		return
	}
	defer a.wg.Done()
	r := a.start(ctx, sem, nil, true)
	select {
	case <-r.dispatched:
	case <-ctx.Done():
	}
	a.mu.Lock()
	if a.n > 0 && !a.closed {
		a.timer.Reset(a.Every)
	} else {
		a.armed = false
	}
	a.mu.Unlock()
}

// Close stops the schedule, ends the context of every Check in flight and
// waits for them (and the CanRead calls of their principals) to return;
// their answers are dropped. It ends no stream: the Access still tracks
// the open ones, End still ends them, but nothing re-checks them any more
// (Recheck returns 0). It is idempotent. A Check that ignores its context
// holds Close until it returns.
func (a *Access) Close() {
	a.mu.Lock()
	a.closed = true
	if a.armed && a.timer.Stop() {
		a.armed = false
	}
	cancel := a.cancel
	a.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	a.wg.Wait()
}

// Recheck re-checks now the principals that match selects (all, when match
// is nil), and returns how many streams it ended: after a change of
// grants, so that the streams it revokes end at once instead of at the
// next round. match is called once per principal, with the Auth Check
// gets, with no lock held, on the calling goroutine; the Checks run
// concurrently (see Access). Recheck returns once every selected
// principal has its verdict, or when ctx ends: then the Checks still
// running get an ended context and their answers are dropped (the streams
// they would have ended are not counted, and stay until the next
// re-check). A principal whose Check is in flight (a scheduled round's)
// is checked again once that one returns, so that the verdict is not one
// begun before the change. Give ctx a deadline when a Check may ignore
// its own context: Recheck waits for such a Check until ctx ends.
func (a *Access) Recheck(ctx context.Context, match func(auth any) bool) int {
	actx, sem, ok := a.begin()
	if !ok {
		return 0
	}
	defer a.wg.Done()
	var only map[*principal]bool
	if match != nil {
		// match is the application's: it runs on the principals and the
		// Auth of their newest stream, copied out under the lock.
		type cand struct {
			p    *principal
			auth any
		}
		a.mu.Lock()
		cs := make([]cand, 0, len(a.groups))
		for _, p := range a.groups {
			if len(p.subs) > 0 {
				cs = append(cs, cand{p, p.auth})
			}
		}
		a.mu.Unlock()
		only = make(map[*principal]bool)
		for _, c := range cs {
			if match(c.auth) {
				only[c.p] = true
			}
		}
		clear(cs) // the credentials are not kept by a running round
		if len(only) == 0 {
			return 0
		}
	}
	// The round's context ends with ctx or at Close.
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(actx, cancel)
	defer stop()
	r := a.start(rctx, sem, only, false)
	select {
	case <-r.done:
	case <-rctx.Done():
	}
	return int(r.ended.Load())
}

// round is one re-check round: up to MaxChecks goroutines (its workers)
// take its principals in turn, each holding one of the Access's slots
// (sem) while it runs.
type round struct {
	a         *Access
	ctx       context.Context
	sem       chan struct{}
	scheduled bool // skip a principal whose Check is in flight
	// ps are the round's principals, with the Auth of their newest stream
	// and their streams (subs[ps[i-1].end:ps[i].end]), copied under the
	// lock in one pass; a worker clears its entries once it is done.
	ps    []round1
	subs  []*life
	next  atomic.Int64
	ended atomic.Int64 // streams ended
	live  atomic.Int32 // workers running
	// dispatched is closed once every principal has been taken by a
	// worker (or the round's context ended); done once every worker has
	// returned.
	dispatched chan struct{}
	once       sync.Once
	done       chan struct{}
}

// round1 is one principal of a round.
type round1 struct {
	p    *principal
	auth any
	end  int
}

// start starts a round, on ctx, over the principals with open streams
// that only holds (all, when nil; but those whose Check is in flight, when
// scheduled), and returns it.
func (a *Access) start(ctx context.Context, sem chan struct{}, only map[*principal]bool, scheduled bool) *round {
	r := &round{a: a, ctx: ctx, sem: sem, scheduled: scheduled,
		dispatched: make(chan struct{}), done: make(chan struct{})}
	a.mu.Lock()
	n, m := len(a.groups), a.n
	if only != nil {
		n, m = len(only), 0
		for p := range only {
			m += len(p.subs)
		}
	}
	r.ps, r.subs = make([]round1, 0, n), make([]*life, 0, m)
	for _, p := range a.groups {
		if len(p.subs) == 0 || only != nil && !only[p] || scheduled && p.inflight.Load() {
			continue
		}
		r.subs = append(r.subs, p.subs...)
		r.ps = append(r.ps, round1{p, p.auth, len(r.subs)})
	}
	a.mu.Unlock()
	workers := min(len(r.ps), cap(sem))
	if workers == 0 {
		close(r.dispatched)
		close(r.done)
		return r
	}
	r.live.Store(int32(workers))
	a.wg.Add(workers) // the caller's begin holds wg above zero
	for range workers {
		go r.work()
	}
	return r
}

// dispatch records that every principal has been taken.
func (r *round) dispatch() { r.once.Do(func() { close(r.dispatched) }) }

// work re-checks the round's principals, one at a time, until none is
// left or the round's context ends. It holds a slot while it runs but
// while it waits for another round's Check.
func (r *round) work() {
	w := worker{a: r.a, round: r.ctx}
	defer func() {
		w.close()
		if r.live.Add(-1) == 0 {
			r.dispatch()
			close(r.done)
		}
		r.a.wg.Done()
	}()
	select {
	case r.sem <- struct{}{}:
	case <-r.ctx.Done():
		r.dispatch()
		return
	}
	for {
		i := int(r.next.Add(1)) - 1
		if i >= len(r.ps) || r.ctx.Err() != nil {
			r.dispatch()
			break
		}
		if i == len(r.ps)-1 {
			r.dispatch()
		}
		from := 0
		if i > 0 {
			from = r.ps[i-1].end
		}
		one := r.ps[i]
		subs := r.subs[from:one.end]
		if !r.one(&w, one.p, one.auth, subs) {
			return // its slot is already given back
		}
		clear(subs) // the round keeps nothing of the principals it is done with
		r.ps[i].auth = nil
	}
	<-r.sem
}

// one re-checks p, whose Auth and streams were auth and subs when the
// round began. It returns false when the round's context ended while it
// waited without its slot.
func (r *round) one(w *worker, p *principal, auth any, subs []*life) bool {
	for !p.inflight.CompareAndSwap(false, true) {
		if r.scheduled {
			return true // its verdict comes with the Check in flight
		}
		wake := r.a.waitFor(p)
		if wake == nil {
			continue // that Check ended meanwhile
		}
		<-r.sem // wait for it without a slot
		select {
		case <-wake:
		case <-r.ctx.Done():
			return false
		}
		select {
		case r.sem <- struct{}{}:
		case <-r.ctx.Done():
			return false
		}
		// The streams and the Auth may have changed meanwhile.
		auth, subs = r.a.snapshot(p, w)
	}
	if p.orphan.Load() {
		// Its streams all ended since the round began (remove sets orphan
		// before it reads inflight, which the claim set before this read):
		// the Access may have forgotten it, or it may have new streams.
		var ok bool
		if auth, subs, ok = r.a.current(p, w); !ok {
			r.a.done(p)
			return true
		}
	}
	if n := r.a.recheckOne(r.ctx, p, auth, subs, w); n > 0 {
		r.ended.Add(int64(n))
	}
	r.a.done(p)
	clear(w.subs) // a snapshot's, if any
	w.subs = w.subs[:0]
	return true
}

// waitFor returns a channel closed when p's Check in flight ends, or nil
// when none is in flight any more. It sets waiting before it reads
// inflight, and done clears inflight before it reads waiting, so that one
// of the two sees the other.
func (a *Access) waitFor(p *principal) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if p.wake == nil {
		p.wake = make(chan struct{})
	}
	p.waiting.Store(true)
	if !p.inflight.Load() {
		return nil
	}
	return p.wake
}

// current is snapshot for a p whose streams all ended once: ok is false
// when p has no stream or the Access has forgotten it.
func (a *Access) current(p *principal, w *worker) (auth any, subs []*life, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.groups[p.key] != p || len(p.subs) == 0 {
		return nil, nil, false
	}
	w.subs = append(w.subs[:0], p.subs...)
	return p.auth, w.subs, true
}

// snapshot copies p's streams (into w's list) and the Auth of its newest.
func (a *Access) snapshot(p *principal, w *worker) (auth any, subs []*life) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.subs = append(w.subs[:0], p.subs...)
	return p.auth, w.subs
}

// done ends p's Check in flight; it forgets p when its streams all ended
// meanwhile, and wakes the Rechecks waiting for it.
func (a *Access) done(p *principal) {
	p.inflight.Store(false)
	if !p.orphan.Load() && !p.waiting.Load() {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p.waiting.Load() {
		p.waiting.Store(false)
		close(p.wake)
		p.wake = nil
	}
	if len(p.subs) == 0 && a.groups[p.key] == p && !p.inflight.Load() {
		delete(a.groups, p.key)
	}
}

// worker is the state of a round's goroutine, reused from one principal
// to the next, so that a round over 10,000 principals does not feed the
// collector: the CanRead answers for the principal at hand, and the
// context Check gets, which ends after CheckTimeout.
//
// The timeout costs a Check two atomic operations, not a timer of its own:
// while the worker runs, its watchdog ticks every CheckTimeout/4 and ends
// the context of a Check it has seen running on checkTicks ticks in a
// row, so between CheckTimeout and 5/4 of it after the Check began.
type worker struct {
	a     *Access
	round context.Context
	subs  []*life
	memo  map[string]bool
	// ctx is the context the Checks get, until the watchdog ends it (with
	// errCheckTimeout as its cause); the next Check then gets a new one.
	ctx    context.Context
	cancel context.CancelCauseFunc
	dog    *watchdog
	n      uint64 // the Checks it ran
}

// watchdog is a worker's timeout clock.
type watchdog struct {
	tick  time.Duration
	timer *time.Timer
	// running holds the number of the worker's Check in flight (from 1),
	// 0 between Checks, timedOut once the watchdog ended the context of
	// the one in flight, closed once the worker returned. The worker sets
	// cancel before it sets a Check's number.
	running atomic.Uint64
	cancel  context.CancelCauseFunc
	mu      sync.Mutex // the ticks' own
	seen    uint64
	ticks   int
}

const (
	timedOut = ^uint64(0)
	closed   = ^uint64(0) - 1
	// checkTicks is how many ticks in a row, a quarter of CheckTimeout
	// apart, a Check is seen running before its context ends.
	checkTicks = 5
)

// fire is a tick of the watchdog.
func (d *watchdog) fire() {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := d.running.Load()
	switch {
	case n == closed:
		return // the worker is gone: tick no more
	case n == 0 || n == timedOut || n != d.seen:
		d.seen, d.ticks = n, 1
	default:
		d.ticks++
		if d.ticks >= checkTicks {
			// cancel is the one set before n was, and the worker sets no
			// other until it sees the swap fail.
			cancel := d.cancel
			if d.running.CompareAndSwap(n, timedOut) {
				cancel(errCheckTimeout)
			}
			d.seen, d.ticks = 0, 0
		}
	}
	d.timer.Reset(d.tick)
}

// errCheckTimeout is the cause of a Check's context that ended after
// Access.CheckTimeout.
var errCheckTimeout = fmt.Errorf("listen: Access.CheckTimeout passed: %w", context.DeadlineExceeded)

// checkCtx is the context a Check gets: its Err is DeadlineExceeded when
// CheckTimeout ended it.
type checkCtx struct{ context.Context }

func (c checkCtx) Err() error {
	err := c.Context.Err()
	if err != nil && context.Cause(c.Context) == errCheckTimeout {
		return context.DeadlineExceeded
	}
	return err
}

// check runs Check for auth, within CheckTimeout, turning a panic into an
// error. n numbers the worker's Checks.
func (w *worker) check(auth any, n uint64) (err error) {
	d := w.a.checkTimeout()
	if d <= 0 {
		return w.a.check(w.round, auth)
	}
	if w.ctx == nil {
		ctx, cancel := context.WithCancelCause(w.round)
		w.ctx, w.cancel = checkCtx{ctx}, cancel
		if w.dog == nil {
			w.dog = &watchdog{tick: max(d/4, 1)}
			w.dog.cancel = cancel
			w.dog.timer = time.AfterFunc(w.dog.tick, w.dog.fire)
		} else {
			w.dog.cancel = cancel
		}
	}
	w.dog.running.Store(n)
	err = w.a.check(w.ctx, auth)
	if !w.dog.running.CompareAndSwap(n, 0) {
		// The watchdog ended this context: the next Check gets a new one.
		w.dog.running.Store(0)
		w.ctx, w.cancel = nil, nil
	}
	return err
}

// close ends the worker's context and its watchdog.
func (w *worker) close() {
	if w.dog != nil {
		w.dog.running.Store(closed)
		w.dog.timer.Stop()
	}
	if w.cancel != nil {
		w.cancel(nil)
	}
	clear(w.subs)
}

// recheckOne re-checks p, whose Auth and streams are auth and subs (see
// Access), on the round's context ctx, and returns how many streams it
// ended.
func (a *Access) recheckOne(ctx context.Context, p *principal, auth any, subs []*life, w *worker) int {
	if len(subs) == 0 {
		return 0
	}
	p.gen.Add(1) // the cached delivery verdicts are stale from now on
	var err error
	if a.Check != nil {
		w.n++
		err = w.check(auth, w.n)
	}
	if ctx.Err() != nil {
		return 0 // the round ended meanwhile: no verdict
	}
	n := 0
	if err != nil {
		reason := err
		if !errors.Is(err, ErrExpired) && !errors.Is(err, ErrRevoked) {
			reason = fmt.Errorf("%w: %w", ErrRevoked, err)
		}
		for _, l := range subs {
			if l.s.end(reason) {
				n++
			}
		}
		return n
	}
	var memo map[string]bool // shared by the principal's streams, when several
	if len(subs) > 1 {
		if w.memo == nil {
			w.memo = make(map[string]bool)
		}
		clear(w.memo)
		memo = w.memo
	}
	for _, l := range subs {
		if l.view != nil && !l.readsAnything(ctx, memo) && l.s.end(ErrRevoked) {
			n++
		}
	}
	return n
}

// check runs Check, turning a panic into an error.
func (a *Access) check(ctx context.Context, auth any) (err error) {
	if p := catch("Access.Check", func() { err = a.Check(ctx, auth) }); p != nil {
		return p
	}
	return err
}

// checkTimeout is CheckTimeout or its default; zero: no bound.
func (a *Access) checkTimeout() time.Duration {
	switch d := a.CheckTimeout; {
	case d == 0:
		return defaultCheckTimeout
	case d < 0:
		return 0
	default:
		return d
	}
}
