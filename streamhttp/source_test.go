package streamhttp_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/mcplisten/listen"
)

// failsafe bounds every wait of a test: it never synchronises anything, it
// only turns a hang into a failure.
const failsafe = 30 * time.Second

// recv receives from ch or fails the test after failsafe.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(failsafe):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// testSource is a listen.Source driven by the test, after snodo's
// TestSubscriptionSource: Open accepts the supported filter verbatim (or
// what Accept returns) and reports the new stream on Opens; every Next
// reports on the stream's Nexts; Close records its reason, closes Closed and
// releases a blocked Next with ErrClosed. Tests drive each stream with Emit,
// Complete and Fail; values queue when no Next is waiting.
type testSource struct {
	// Opens receives every stream Open created, in order.
	Opens chan *testStream
	// Entered, if set, receives the request when Open starts.
	Entered chan *listen.Request
	// Gate, if set, makes Open wait until it is closed.
	Gate chan struct{}
	// OpenErr, if set, is returned by Open (after Gate).
	OpenErr error
	// Accept, if set, picks the accepted filter from the supported one.
	Accept func(supported listen.Filter) listen.Filter
	// Inspect, if set, is called with the request at the start of Open.
	Inspect func(req *listen.Request)

	mu   sync.Mutex
	byID map[string]*testStream
	ids  map[string]chan struct{}
}

var _ listen.Source = (*testSource)(nil)

func newTestSource() *testSource {
	return &testSource{
		Opens: make(chan *testStream, 64),
		byID:  make(map[string]*testStream),
		ids:   make(map[string]chan struct{}),
	}
}

func (s *testSource) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	if s.Inspect != nil {
		s.Inspect(req)
	}
	if s.Entered != nil {
		s.Entered <- req
	}
	if s.Gate != nil {
		<-s.Gate
	}
	if s.OpenErr != nil {
		return nil, nil, s.OpenErr
	}
	accepted := supported
	if s.Accept != nil {
		accepted = s.Accept(supported)
	}
	st := &testStream{
		ID:        req.ID.String(),
		Supported: supported.Clone(),
		Kind:      req.Transport.Kind,
		Auth:      req.Auth,
		Nexts:     make(chan struct{}, 4096),
		Closed:    make(chan struct{}),
		stop:      make(chan struct{}),
		wake:      make(chan struct{}, 1),
	}
	s.mu.Lock()
	s.byID[st.ID] = st
	ch := s.ids[st.ID]
	if ch == nil {
		ch = make(chan struct{})
		s.ids[st.ID] = ch
	}
	close(ch)
	s.mu.Unlock()
	s.Opens <- st
	return accepted, st, nil
}

// stream waits for the stream of the listen whose id is id.
func (s *testSource) stream(t testing.TB, id string) *testStream {
	t.Helper()
	s.mu.Lock()
	ch := s.ids[id]
	if ch == nil {
		ch = make(chan struct{})
		s.ids[id] = ch
	}
	s.mu.Unlock()
	recv(t, ch, "the stream of listen "+id)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.byID[id]
}

// opened returns how many streams were opened so far.
func (s *testSource) opened() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byID)
}

type item struct {
	ev  listen.Event
	err error
}

// testStream is one opened stream of a testSource.
type testStream struct {
	ID        string
	Supported listen.Filter
	Kind      string
	Auth      any
	// Nexts receives one value per Next call.
	Nexts chan struct{}
	// Closed is closed once Close has returned.
	Closed chan struct{}

	stop chan struct{}
	wake chan struct{}

	mu     sync.Mutex
	queue  []item
	closed bool
	reason error
}

var _ listen.Stream = (*testStream)(nil)

func (st *testStream) push(it item) {
	st.mu.Lock()
	st.queue = append(st.queue, it)
	st.mu.Unlock()
	select {
	case st.wake <- struct{}{}:
	default:
	}
}

// Emit queues an event.
func (st *testStream) Emit(ev listen.Event) { st.push(item{ev: ev}) }

// Complete queues a graceful end.
func (st *testStream) Complete() { st.push(item{err: listen.ErrClosed}) }

// Fail queues a failure.
func (st *testStream) Fail(err error) { st.push(item{err: err}) }

func (st *testStream) Next() (listen.Event, error) {
	st.Nexts <- struct{}{}
	for {
		st.mu.Lock()
		if st.closed {
			st.mu.Unlock()
			return listen.Event{}, listen.ErrClosed
		}
		if len(st.queue) > 0 {
			it := st.queue[0]
			st.queue = st.queue[1:]
			st.mu.Unlock()
			return it.ev, it.err
		}
		st.mu.Unlock()
		select {
		case <-st.wake:
		case <-st.stop:
		}
	}
}

func (st *testStream) Close(reason error) {
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return
	}
	st.closed = true
	st.reason = reason
	st.mu.Unlock()
	close(st.stop)
	close(st.Closed)
}

// Reason waits for Close and returns its reason.
func (st *testStream) Reason(t testing.TB) error {
	t.Helper()
	recv(t, st.Closed, "the close of stream "+st.ID)
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.reason
}

// next waits for one more Next call.
func (st *testStream) next(t testing.TB) {
	t.Helper()
	recv(t, st.Nexts, "a Next call on stream "+st.ID)
}
