package listen

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"time"
)

// Access binds listens to their principal (Request.Auth) for their whole
// life: it re-evaluates the principal's access on a schedule and on
// demand, ending the streams of a principal that lost it, and (with
// Deliver) checks CanRead when each resource update is delivered, not only
// at open. Set one Access as Options.Access of every transport of a server
// (HTTP, stdio, the go-sdk adapter): it sees all their listens. The zero
// Access does nothing but track them (End works on it); set its fields
// before the first listen opens and leave them afterwards.
//
// A re-check of a principal (on the Every schedule, or by Recheck) calls
// Check once for all its streams, and:
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
// The streams of one principal are those whose Auth has the same Key. The
// schedule is one timer per Access, armed while listens are open: an idle
// stream costs no goroutine and no timer of its own.
type Access struct {
	// Check re-evaluates a principal's access: nil keeps its streams, an
	// error ends them (see above; a panic counts as an error). It gets the
	// Auth of one of the principal's streams, on the goroutine of the
	// schedule's timer or of the Recheck call, one principal after
	// another; it may run concurrently with itself (a schedule and a
	// Recheck). Nil: the principal is kept (CanRead is still asked again).
	Check func(ctx context.Context, auth any) error
	// Every, if positive, re-checks every principal with an open listen
	// each Every (the next round starts Every after the previous one
	// ended). Zero: only Recheck re-checks.
	Every time.Duration
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
	// taken-over fast path (CanRead may take its time; see
	// Subscription.Poller).
	Deliver bool

	mu     sync.Mutex
	groups map[any]*principal
	n      int // streams in groups
	timer  *time.Timer
	armed  bool
}

// principal is the group of one principal's streams in an Access.
type principal struct {
	key  any
	auth any // the Auth of its first stream: what Check gets
	subs []*life
	// gen counts the principal's re-checks: a delivery verdict cached under
	// an older gen is stale.
	gen atomic.Uint64
}

// keyOf returns the group key of auth: Key's, or auth itself, when it is
// comparable; otherwise (and when Key panics) a key of its own.
func (a *Access) keyOf(auth any) (key any) {
	key = auth
	if a.Key != nil {
		defer func() {
			if recover() != nil {
				key = new(byte)
			}
		}()
		key = a.Key(auth)
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
		p = &principal{key: key, auth: auth}
		a.groups[key] = p
	}
	l.auth, l.p, l.slot = auth, p, int32(len(p.subs))
	p.subs = append(p.subs, l)
	a.n++
	if a.Every > 0 && !a.armed {
		a.armed = true
		if a.timer == nil {
			a.timer = time.AfterFunc(a.Every, a.tick)
		} else {
			a.timer.Reset(a.Every)
		}
	}
}

// remove takes l out of its principal; the last stream stops the schedule.
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
	a.n--
	if last == 0 {
		delete(a.groups, p.key)
	}
	if len(a.groups) == 0 && a.armed && a.timer.Stop() {
		a.armed = false
	}
}

// tick is one scheduled round.
func (a *Access) tick() {
	a.recheck(context.Background(), nil)
	a.mu.Lock()
	if len(a.groups) > 0 {
		a.timer.Reset(a.Every)
	} else {
		a.armed = false
	}
	a.mu.Unlock()
}

// Recheck re-checks now, on the calling goroutine, the principals that
// match selects (all, when match is nil), and returns how many streams it
// ended: after a change of grants, so that the streams it revokes end at
// once instead of at the next round. match is called once per principal,
// with the Auth Check gets, with no lock held.
func (a *Access) Recheck(ctx context.Context, match func(auth any) bool) int {
	if match == nil {
		return a.recheck(ctx, nil)
	}
	// match is the application's: it runs on the principals copied out,
	// before the round takes the lock again for their streams.
	a.mu.Lock()
	ps := make([]*principal, 0, len(a.groups))
	for _, p := range a.groups {
		ps = append(ps, p)
	}
	a.mu.Unlock()
	selected := make(map[*principal]bool)
	for _, p := range ps {
		if match(p.auth) { // p.auth never changes
			selected[p] = true
		}
	}
	if len(selected) == 0 {
		return 0
	}
	return a.recheck(ctx, func(p *principal) bool { return selected[p] })
}

// End ends, with reason (ErrRevoked when nil; see Subscription.End), every
// open stream whose Auth match selects, and returns how many. match runs on
// the calling goroutine, once per stream, with no lock held. It is the
// by-hand form of a re-check: after revoking a credential, make the
// transport's authentication refuse it, then End its streams.
func (a *Access) End(match func(auth any) bool, reason error) int {
	if reason == nil {
		reason = ErrRevoked
	}
	n := 0
	for _, l := range a.streams() {
		if match(l.auth) && l.s.end(reason) {
			n++
		}
	}
	return n
}

// streams returns every stream, copied under the lock.
func (a *Access) streams() []*life {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*life, 0, a.n)
	for _, p := range a.groups {
		out = append(out, p.subs...)
	}
	return out
}

// recheck re-checks the principals only selects (all: nil; it runs under
// the lock) and returns how many streams it ended.
func (a *Access) recheck(ctx context.Context, only func(*principal) bool) int {
	// One pass under the lock copies the principals and their streams;
	// the calls out (Check, CanRead) run after it.
	var r round
	a.mu.Lock()
	r.ps = make([]round1, 0, len(a.groups))
	r.subs = make([]*life, 0, a.n)
	for _, p := range a.groups {
		if only == nil || only(p) {
			r.subs = append(r.subs, p.subs...)
			r.ps = append(r.ps, round1{p, len(r.subs)})
		}
	}
	a.mu.Unlock()
	n, from := 0, 0
	for _, p := range r.ps {
		n += a.recheckOne(ctx, p.p, r.subs[from:p.end], &r)
		from = p.end
	}
	return n
}

// round is the scratch space of one re-check round: it allocates its
// lists once, not per principal, so that a round over 10,000 principals
// does not feed the collector.
type round struct {
	ps   []round1
	subs []*life         // the streams of ps, in order
	memo map[string]bool // CanRead's answers for the principal at hand
}

// round1 is one principal of a round: its streams end at subs[end].
type round1 struct {
	p   *principal
	end int
}

// recheckOne re-checks one principal, whose streams were subs (see
// Access).
func (a *Access) recheckOne(ctx context.Context, p *principal, subs []*life, r *round) int {
	p.gen.Add(1) // the cached delivery verdicts are stale from now on
	var err error
	if a.Check != nil {
		err = a.check(ctx, p.auth)
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
		if r.memo == nil {
			r.memo = make(map[string]bool)
		}
		clear(r.memo)
		memo = r.memo
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
	defer func() {
		if v := recover(); v != nil {
			err = newPanicError("Access.Check", v)
		}
	}()
	return a.Check(ctx, auth)
}
