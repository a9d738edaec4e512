package upstream

import (
	"context"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
)

// Defaults of ListenerOptions.
const (
	defaultMinBackoff     = 100 * time.Millisecond
	defaultMaxBackoff     = 30 * time.Second
	defaultRelistInterval = 200 * time.Millisecond
)

// ListenerOptions configure how a Feed keeps each of its upstream listens
// open.
type ListenerOptions struct {
	// Open configures each listen (client info and capabilities, the ack
	// timeout).
	Open OpenOptions
	// MinBackoff and MaxBackoff bound the wait before a re-listen: the
	// first after a loss is at once, the next ones wait MinBackoff, then
	// twice as long each time, up to MaxBackoff, each chosen at random
	// in its upper half (jitter). A listen that ended within a second of
	// its acknowledgement does not reset the waits: an upstream that
	// completes or drops every listen at once is listened to at most
	// once per MaxBackoff. Zero means 100 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// RelistInterval is the least time between two re-listens for a
	// filter change (the URIs the hub's listeners watch): changes within
	// it are coalesced into one re-listen, so a burst of changes costs at
	// most one re-listen per interval. Zero means 200 ms.
	RelistInterval time.Duration
}

// listenerConfig configures a listener: the Feed's ListenerOptions, what
// to listen for, and the callbacks. Every callback is called one at a
// time (never two at once), on a goroutine of the listener's, and must not
// call Close; a callback that panics is recovered, and the panic ignored.
type listenerConfig struct {
	ListenerOptions
	// filter is what to listen for; an empty filter holds no listen
	// (until SetFilter sets one). filterf, if set, is called instead for
	// the filter at each (re-)listen (and must not call the listener), and
	// poke tells of its changes.
	filter  listen.Filter
	filterf func() listen.Filter
	// onNotification receives every notification of the listen, in order.
	onNotification func(Notification)
	// onAck is told of every acknowledged listen: the first, each one
	// after a gap (Ack.Gap set), and each re-listen for a new filter;
	// before any notification of that listen. Stats counts the listen
	// once onAck has returned.
	onAck func(Ack)
	// onLoss is told when an acknowledged listen ends (the connection
	// dropped or went silent, the upstream completed it or sent an error,
	// or broke the protocol), as soon as that is noticed.
	onLoss func(error)
}

// Ack describes an acknowledged listen of a Feed (FeedOptions.OnAck).
type Ack struct {
	// Accepted is the filter the upstream acknowledged.
	Accepted listen.Filter
	// Gap, when not nil, says that notifications may have been lost
	// before this listen: the previous one ended, or listens failed
	// before this one.
	Gap *Gap
	// Relisten: this listen replaced an open one for a new filter; the
	// previous one was closed only after this acknowledgement, so
	// nothing was missed for what both filters name (a notification
	// sent during the overlap may come twice).
	Relisten bool
}

// Gap is a time a Feed had no acknowledged listen for a filter.
type Gap struct {
	// Err is why: how the previous listen ended, or why the first
	// attempt failed.
	Err error
	// Since is when the loss was noticed.
	Since time.Time
	// Attempts counts the listens tried until the one acknowledged.
	Attempts int
	// Backoff is the wait before the listen acknowledged (zero for the
	// first attempt after a loss): once the upstream is reachable again,
	// it is acknowledged at most this wait plus the listen's round trips
	// later.
	Backoff time.Duration
}

// ListenerStats are the counters of one of a Feed's listens to an
// upstream (UpstreamStats.Lists, Resources).
type ListenerStats struct {
	// Open counts the listens open now: 0 or 1, 2 during a re-listen.
	Open int
	// Listens counts the acknowledged listens, Relistens those of them
	// made for a new filter, Gaps those made after a gap, and Failures
	// the attempts that failed.
	Listens, Relistens, Gaps, Failures uint64
}

// listener keeps one listen open on an upstream: it re-listens after
// every loss, with jittered exponential backoff, reports each gap, and
// follows filter changes with coalesced re-listens.
//
// It owns one goroutine, started by newListener, plus one per open listen
// (two during a re-listen), all ended when Close returns.
type listener struct {
	t    Transport
	opts listenerConfig

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu      sync.Mutex
	filter  listen.Filter
	changed chan struct{} // cap 1: SetFilter's signal

	cbMu sync.Mutex // callbacks one at a time

	open                               atomic.Int64
	listens, relistens, gaps, failures atomic.Uint64
}

// newListener starts listening on t as opts say.
func newListener(t Transport, opts listenerConfig) *listener {
	if opts.MinBackoff <= 0 {
		opts.MinBackoff = defaultMinBackoff
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = defaultMaxBackoff
	}
	opts.MaxBackoff = max(opts.MaxBackoff, opts.MinBackoff)
	if opts.RelistInterval <= 0 {
		opts.RelistInterval = defaultRelistInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{t: t, opts: opts, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		filter: core.FilterClone(opts.filter), changed: make(chan struct{}, 1)}
	go l.run() // ends at Close
	return l
}

// SetFilter changes what the listener listens for: a re-listen follows,
// at most one per RelistInterval (changes in between are coalesced). An
// empty filter closes the listen. f must not be modified afterwards.
func (l *listener) SetFilter(f listen.Filter) {
	l.mu.Lock()
	l.filter = f
	l.mu.Unlock()
	l.poke()
}

// poke signals a change of the filter.
func (l *listener) poke() {
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// Close ends the listen and waits for the listener's goroutines. It is
// idempotent.
func (l *listener) Close() {
	l.cancel()
	<-l.done
}

// Stats returns the listener's counters.
func (l *listener) Stats() ListenerStats {
	return ListenerStats{Open: int(l.open.Load()), Listens: l.listens.Load(), Relistens: l.relistens.Load(),
		Gaps: l.gaps.Load(), Failures: l.failures.Load()}
}

func (l *listener) wanted() listen.Filter {
	if l.opts.filterf != nil {
		return l.opts.filterf()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.filter
}

// call runs a callback, one at a time, recovering a panic.
func (l *listener) call(f func()) {
	l.cbMu.Lock()
	defer l.cbMu.Unlock()
	_ = core.SafeCall(f)
}

// active is an open listen and its reader.
type active struct {
	s      *Stream
	filter listen.Filter
	ended  chan error // the reader's end (cap 1); nil error after Close
	done   chan struct{}
}

func (l *listener) start(s *Stream, filter listen.Filter) *active {
	a := &active{s: s, filter: filter, ended: make(chan error, 1), done: make(chan struct{})}
	l.open.Add(1)
	go func() { // ends when the stream ends or is closed
		defer close(a.done)
		defer l.open.Add(-1)
		for {
			n, err := s.Next()
			if err != nil {
				a.ended <- err
				return
			}
			if f := l.opts.onNotification; f != nil {
				l.call(func() { f(n) })
			}
		}
	}()
	return a
}

func (a *active) stop() {
	a.s.Close()
	<-a.done
}

// stableAfter is how long a listen must have lasted for the next
// re-listen after its loss to be immediate.
const stableAfter = time.Second

// backoff is the wait before attempt n (0: none).
func (l *listener) backoff(n int) time.Duration {
	if n <= 0 {
		return 0
	}
	d := l.opts.MinBackoff
	for i := 1; i < n && d < l.opts.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, l.opts.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// sleep waits d, or less if the listener closes (false then).
func (l *listener) sleep(d time.Duration) bool {
	if d <= 0 {
		return l.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.ctx.Done():
		return false
	}
}

func (l *listener) run() {
	defer close(l.done)
	var cur *active
	defer func() {
		if cur != nil {
			cur.stop()
		}
	}()
	var gap *Gap
	attempt := 0 // the backoff step of the next attempt
	tries := 0   // attempts since the last ack
	flaps := 0   // listens in a row that ended within stableAfter of their ack
	var ackedAt time.Time
	var lastRelist time.Time
	var retry <-chan time.Time // a failed re-listen's next try
	for {
		if l.ctx.Err() != nil {
			return
		}
		if cur == nil {
			want := l.wanted()
			if len(want) == 0 {
				select {
				case <-l.ctx.Done():
					return
				case <-l.changed:
					continue
				}
			}
			wait := l.backoff(attempt)
			if !l.sleep(wait) {
				return
			}
			tries++
			s, err := Open(l.ctx, l.t, want, l.opts.Open)
			if err != nil {
				if l.ctx.Err() != nil {
					return
				}
				l.failures.Add(1)
				attempt++
				if gap == nil {
					gap = &Gap{Err: err, Since: time.Now()}
				}
				gap.Attempts = tries
				continue
			}
			ackedAt = time.Now()
			ack := Ack{Accepted: s.Accepted(), Gap: gap}
			if gap != nil {
				gap.Attempts, gap.Backoff = tries, wait
			}
			// Counted before the ack is reported, so that whoever sees the
			// ack or a notification after it sees it in Stats too.
			l.listens.Add(1)
			if gap != nil {
				l.gaps.Add(1)
			}
			if f := l.opts.onAck; f != nil {
				l.call(func() { f(ack) })
			}
			cur = l.start(s, want)
			gap, attempt, tries, retry = nil, 0, 0, nil
			continue
		}
		select {
		case <-l.ctx.Done():
			return
		case err := <-cur.ended:
			<-cur.done
			cur = nil
			gap = &Gap{Err: err, Since: time.Now()}
			// A listen that ends soon after its acknowledgement (an
			// upstream that completes every listen at once, one that
			// accepts and drops) is listened to again with growing
			// waits, not at once each time.
			if time.Since(ackedAt) < stableAfter {
				flaps++
			} else {
				flaps = 0
			}
			attempt = flaps
			if f := l.opts.onLoss; f != nil {
				l.call(func() { f(err) })
			}
		case <-retry:
			retry = nil
			l.relisten(&cur, &lastRelist, &retry)
		case <-l.changed:
			l.relisten(&cur, &lastRelist, &retry)
		}
	}
}

// relisten replaces *cur by a listen for the wanted filter, once
// RelistInterval has passed since the last: make before break. A failure
// keeps *cur and arms *retry.
func (l *listener) relisten(cur **active, last *time.Time, retry *<-chan time.Time) {
	if reflect.DeepEqual(l.wanted(), (*cur).filter) {
		return
	}
	if wait := time.Until(last.Add(l.opts.RelistInterval)); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		case err := <-(*cur).ended: // lost meanwhile: the main loop re-opens
			(*cur).ended <- err
			return
		}
	}
	want := l.wanted()
	*last = time.Now()
	if len(want) == 0 {
		(*cur).stop()
		*cur = nil
		return
	}
	s, err := Open(l.ctx, l.t, want, l.opts.Open)
	if err != nil {
		if l.ctx.Err() == nil {
			l.failures.Add(1)
			*retry = time.After(l.backoff(1))
		}
		return
	}
	old := *cur
	ack := Ack{Accepted: s.Accepted(), Relisten: true}
	select {
	case err := <-old.ended: // it ended before the new one's ack
		ack.Gap = &Gap{Err: err, Since: time.Now(), Attempts: 1}
		if f := l.opts.onLoss; f != nil {
			l.call(func() { f(err) })
		}
	default:
	}
	l.listens.Add(1)
	l.relistens.Add(1)
	if ack.Gap != nil {
		l.gaps.Add(1)
	}
	if f := l.opts.onAck; f != nil {
		l.call(func() { f(ack) })
	}
	*cur = l.start(s, want)
	old.stop()
	*retry = nil
}
