package reliability_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcplisten/listen"
)

// plan scripts one listen of a faultSource (by its id token).
type plan struct {
	// openPanic makes Open panic.
	openPanic bool
	// canReadPanics makes Options.CanRead panic (the fixtures route
	// CanRead to the source's canRead).
	canReadPanics bool
	// openGate, if set, makes Open wait until it is released. With
	// openHonoursCtx, Open gives up when its ctx ends and returns the
	// context's cause instead of a stream.
	openGate       *gate
	openHonoursCtx bool
	// openErrWithStream, if set, is returned by Open together with a
	// stream (which the core must close).
	openErrWithStream error
	// events are returned by the first Nexts, one each.
	events []listen.Event
	// nextPanicAt is the 1-based Next call that panics (0: none).
	nextPanicAt int
	// feed, if set, is read by the Nexts after events (until Close).
	feed chan listen.Event
	// end is what the Nexts after events return; nil blocks until Close,
	// which is the Stream contract.
	end error
	// nextGate, if set, makes the Nexts after events wait for it alone,
	// ignoring Close (a source breaking the Stream contract).
	nextGate *gate
	// closePanic makes Close panic (after recording its call).
	closePanic bool
	// closeGate, if set, makes Close wait until it is released.
	closeGate *gate
}

// openCall is one entry into Source.Open.
type openCall struct {
	id  string
	ctx context.Context
}

// faultSource is a listen.Source scripted per listen id by plans. Unknown
// ids get the zero plan: Next blocks until Close.
type faultSource struct {
	mu      sync.Mutex
	plans   map[string]*plan
	streams []*faultStream

	entered keyed[openCall]     // every Open entry, by id
	opened  keyed[*faultStream] // every stream Open returned, by id
	opens   atomic.Int64        // Open calls
}

var _ listen.Source = (*faultSource)(nil)

func newFaultSource() *faultSource {
	return &faultSource{plans: make(map[string]*plan)}
}

// script sets the plan of the listen whose id token is id.
func (s *faultSource) script(id string, p plan) *plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.plans[id] = &p
	return &p
}

func (s *faultSource) planOf(id string) *plan {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := s.plans[id]; p != nil {
		return p
	}
	return &plan{}
}

func (s *faultSource) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	s.opens.Add(1)
	id := req.ID.Raw()
	p := s.planOf(id)
	s.entered.put(id, openCall{id: id, ctx: ctx})
	if p.openPanic {
		panic("reliability: Source.Open panics")
	}
	if p.openGate != nil {
		if p.openHonoursCtx {
			select {
			case <-p.openGate.ch:
			case <-ctx.Done():
			}
			// The context's end wins over a gate opened meanwhile (a
			// teardown opens every gate).
			if ctx.Err() != nil {
				return nil, nil, context.Cause(ctx)
			}
		} else {
			p.openGate.wait()
		}
	}
	st := &faultStream{id: id, p: p, done: make(chan struct{}), closeEntered: make(chan struct{}), closed: make(chan struct{}), nexts: make(chan int, 1024)}
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.mu.Unlock()
	s.opened.put(id, st)
	if p.openErrWithStream != nil {
		return supported, st, p.openErrWithStream
	}
	return supported, st, nil
}

// canRead is the fixtures' Options.CanRead: every URI is readable, unless
// the listen's plan makes it panic.
func (s *faultSource) canRead(_ context.Context, req *listen.Request, _ string) bool {
	if s.planOf(req.ID.Raw()).canReadPanics {
		panic("reliability: Options.CanRead panics")
	}
	return true
}

// all returns every stream opened so far.
func (s *faultSource) all() []*faultStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*faultStream(nil), s.streams...)
}

// stream waits for the stream of the listen id.
func (s *faultSource) stream(t testing.TB, id string) *faultStream {
	t.Helper()
	return recv(t, s.opened.ch(id), "the stream of "+id)
}

// enteredOpen waits for Open to be entered for id.
func (s *faultSource) enteredOpen(t testing.TB, id string) openCall {
	t.Helper()
	return recv(t, s.entered.ch(id), "Source.Open of "+id)
}

// faultStream is one opened stream of a faultSource. It records every Next
// and Close.
type faultStream struct {
	id string
	p  *plan

	nextCalls atomic.Int64
	nexts     chan int // the index of every Next call (1-based)
	nextsOut  atomic.Int64

	closes       atomic.Int64
	mu           sync.Mutex
	reason       error
	closeEntered chan struct{} // closed when the first Close starts
	closed       chan struct{} // closed when the first Close has released Next
	done         chan struct{} // releases a blocked Next
}

var _ listen.Stream = (*faultStream)(nil)

func (st *faultStream) Next() (listen.Event, error) {
	n := int(st.nextCalls.Add(1))
	defer st.nextsOut.Add(1)
	// The call is announced (waitNext) only after the check for a close
	// that came first: a test that saw call n announced and then closes
	// the stream knows that call n goes on to its plan (a gate that
	// ignores Close blocks it), rather than returning at this check.
	announce := func() {
		select {
		case st.nexts <- n:
		default:
		}
	}
	select {
	case <-st.done:
		announce()
		return listen.Event{}, listen.ErrClosed
	default:
	}
	announce()
	p := st.p
	if p.nextPanicAt == n {
		panic("reliability: Stream.Next panics")
	}
	if n <= len(p.events) {
		return p.events[n-1], nil
	}
	if p.nextGate != nil {
		p.nextGate.wait()
		return listen.Event{}, listen.ErrClosed
	}
	if p.end != nil {
		return listen.Event{}, p.end
	}
	select {
	case ev := <-p.feed: // a nil feed blocks
		return ev, nil
	case <-st.done:
		return listen.Event{}, listen.ErrClosed
	}
}

func (st *faultStream) Close(reason error) {
	if st.closes.Add(1) != 1 {
		return // a second Close: counted, checked by the tests
	}
	st.mu.Lock()
	st.reason = reason
	st.mu.Unlock()
	close(st.closeEntered)
	st.p.closeGate.wait()
	close(st.done)
	close(st.closed)
	if st.p.closePanic {
		panic("reliability: Stream.Close panics")
	}
}

// waitNext waits for the n-th Next call.
func (st *faultStream) waitNext(t testing.TB, n int) {
	t.Helper()
	for {
		if got := recv(t, st.nexts, "Next call "+st.id); got >= n {
			return
		}
	}
}

// reasonAfterClose waits for Close and returns its reason.
func (st *faultStream) reasonAfterClose(t testing.TB) error {
	t.Helper()
	await(t, st.closeEntered, "the close of "+st.id)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.reason
}
