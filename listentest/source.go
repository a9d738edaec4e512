package listentest

import (
	"context"
	"sync"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
)

// SourceFunc adapts a function to listen.Source, for a test whose source is
// a closure.
type SourceFunc func(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error)

// Open calls f.
func (f SourceFunc) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return f(ctx, req, supported)
}

// Source is a listen.Source driven by a test. The zero value is not ready:
// use NewSource. Its fields may be set before the first Open.
type Source struct {
	// BeforeOpen, if set, runs first in every Open, on Open's goroutine,
	// with Open's context and request. A non-nil error fails that Open: it
	// is returned as it is and no stream is made. It may block, to test an
	// Open in progress (watch ctx: it ends when the open is abandoned).
	BeforeOpen func(ctx context.Context, req *listen.Request) error
	// Accept, if set, picks the accepted filter from the supported one; by
	// default the supported filter is accepted as it is.
	Accept func(supported listen.Filter) listen.Filter
	// OpenErr, if set, is returned by Open (after BeforeOpen and Gate).
	OpenErr error
	// Gate, if set, makes Open wait until it is closed (or Open's context
	// ends, which fails the open with the context's error), after
	// BeforeOpen.
	Gate <-chan struct{}

	opened chan *Stream
	closed chan *Stream

	mu      sync.Mutex
	streams []*Stream
	byID    map[string]*Stream
	waiting map[string]chan struct{}
}

var _ listen.Source = (*Source)(nil)

// NewSource returns a Source with no stream yet.
func NewSource() *Source {
	return &Source{
		opened:  make(chan *Stream, 1024),
		closed:  make(chan *Stream, 1024),
		byID:    make(map[string]*Stream),
		waiting: make(map[string]chan struct{}),
	}
}

// Open implements listen.Source. It records the stream under the request
// id's string form (jsonrpc.ID.String; of two open listens whose ids have
// the same string form, such as 1 and "1", Stream finds the later one) and
// announces it on Opened.
func (s *Source) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	if s.BeforeOpen != nil {
		if err := s.BeforeOpen(ctx, req); err != nil {
			return nil, nil, err
		}
	}
	if s.Gate != nil {
		select {
		case <-s.Gate:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	if s.OpenErr != nil {
		return nil, nil, s.OpenErr
	}
	accepted := supported
	if s.Accept != nil {
		accepted = s.Accept(supported)
	}
	st := newStream(req, supported)
	st.src = s
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.byID[st.ID] = st
	if ch, ok := s.waiting[st.ID]; ok {
		close(ch)
		delete(s.waiting, st.ID)
	}
	s.mu.Unlock()
	select {
	case s.opened <- st:
	default: // nobody reads Opened: the stream is still found by ID
	}
	return accepted, st, nil
}

// Opened returns a channel that receives every stream Open creates, in
// order (the first 1,024 unread ones are buffered).
func (s *Source) Opened() <-chan *Stream { return s.opened }

// Closed returns a channel that receives every stream of the Source as it
// is closed (at its first Close), in order (the first 1,024 unread ones are
// buffered): the streams that ended, whichever they are.
func (s *Source) Closed() <-chan *Stream { return s.closed }

// Streams returns the streams opened so far, in order.
func (s *Source) Streams() []*Stream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Stream(nil), s.streams...)
}

// Stream waits until the listen whose id has the string form id has been
// opened, and returns its stream; nil if ctx ends first.
func (s *Source) Stream(ctx context.Context, id string) *Stream {
	s.mu.Lock()
	if st, ok := s.byID[id]; ok {
		s.mu.Unlock()
		return st
	}
	ch, ok := s.waiting[id]
	if !ok {
		ch = make(chan struct{})
		s.waiting[id] = ch
	}
	s.mu.Unlock()
	select {
	case <-ch:
	case <-ctx.Done():
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

type item struct {
	ev  listen.Event
	err error
}

// Stream is one stream opened by a Source. Send, End and Fail queue what
// the next Next calls return, in order; the queue is unbounded.
type Stream struct {
	// ID is the listen request id's string form (jsonrpc.ID.String).
	ID string
	// RequestID is the listen request's id as it came: its exact JSON
	// token, which tells 1 from "1" (RequestID.Raw()).
	RequestID jsonrpc.ID
	// Supported is a copy of the filter Open was given.
	Supported listen.Filter
	// Transport is the request's transport kind.
	Transport string
	// Auth is what the transport's authentication put in the request.
	Auth any

	src    *Source
	nexts  chan struct{}
	closed chan struct{}
	wake   chan struct{}

	mu      sync.Mutex
	queue   []item
	reason  error
	closes  int
	pulling bool
}

var _ listen.Stream = (*Stream)(nil)

func newStream(req *listen.Request, supported listen.Filter) *Stream {
	return &Stream{
		ID:        req.ID.String(),
		RequestID: req.ID,
		Supported: core.FilterClone(supported),
		Transport: req.Transport.Kind,
		Auth:      req.Auth,
		nexts:     make(chan struct{}, 1024),
		closed:    make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
}

// Send queues ev for a Next.
func (st *Stream) Send(ev listen.Event) { st.push(item{ev: ev}) }

// End queues the graceful end: that Next returns listen.ErrClosed.
func (st *Stream) End() { st.push(item{err: listen.ErrClosed}) }

// Fail queues a failure: that Next returns err.
func (st *Stream) Fail(err error) { st.push(item{err: err}) }

func (st *Stream) push(it item) {
	st.mu.Lock()
	st.queue = append(st.queue, it)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// Next implements listen.Stream: it returns the first queued item, blocking
// until there is one or the stream is closed (then listen.ErrClosed). Every
// call is announced on Nexts when it starts. Two calls in flight at once
// break the contract: the second one panics.
func (st *Stream) Next() (listen.Event, error) {
	select {
	case st.nexts <- struct{}{}:
	default:
	}
	st.mu.Lock()
	if st.pulling {
		st.mu.Unlock()
		panic("listentest: two Next calls in flight on one stream")
	}
	st.pulling = true
	st.mu.Unlock()
	defer func() {
		st.mu.Lock()
		st.pulling = false
		st.mu.Unlock()
	}()
	for {
		st.mu.Lock()
		if len(st.queue) > 0 {
			it := st.queue[0]
			st.queue = st.queue[1:]
			st.mu.Unlock()
			return it.ev, it.err
		}
		st.mu.Unlock()
		select {
		case <-st.wake:
		case <-st.closed:
			return listen.Event{}, listen.ErrClosed
		}
	}
}

// Close implements listen.Stream. The first call records reason, closes
// Closed, releases a blocked Next and announces the stream on its Source's
// Closed; every call is counted.
func (st *Stream) Close(reason error) {
	st.mu.Lock()
	st.closes++
	first := st.closes == 1
	if first {
		st.reason = reason
	}
	st.mu.Unlock()
	if first {
		close(st.closed)
		select {
		case st.src.closed <- st:
		default: // nobody reads the Source's Closed
		}
	}
}

// Nexts returns a channel that receives a value each time a Next starts
// (the first 1,024 unread ones are buffered): wait on it to know that the
// subscription is pulling.
func (st *Stream) Nexts() <-chan struct{} { return st.nexts }

// Closed returns a channel closed by the first Close.
func (st *Stream) Closed() <-chan struct{} { return st.closed }

// Reason returns the reason of the first Close, or nil while open.
func (st *Stream) Reason() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.reason
}

// Closes returns how many times Close was called (the subscription's guard
// calls it exactly once).
func (st *Stream) Closes() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.closes
}
