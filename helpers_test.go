package listen_test

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// testSource is the test double of the reference's TestSubscriptionHub: Open
// accepts the supported filter verbatim (or what accept returns) and reports
// it; every Next reports on nexts; Close records its reason and releases a
// blocked Next. Tests drive streams with emit, complete and fail.
type testSource struct {
	accept func(supported listen.Filter) listen.Filter

	opened chan listen.Filter
	nexts  chan struct{}

	mu      sync.Mutex
	streams []*testStream
	seen    []*listen.Request
}

func newTestSource() *testSource {
	return &testSource{opened: make(chan listen.Filter, 16), nexts: make(chan struct{}, 64)}
}

var _ listen.Source = (*testSource)(nil)

func (s *testSource) Open(_ context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	acc := supported
	if s.accept != nil {
		acc = s.accept(supported)
	}
	st := &testStream{src: s, items: make(chan item, 16), closed: make(chan struct{}), closes: make(chan error, 4)}
	s.mu.Lock()
	s.streams = append(s.streams, st)
	s.seen = append(s.seen, req)
	s.mu.Unlock()
	select {
	case s.opened <- supported:
	default:
	}
	return acc, st, nil
}

func (s *testSource) last() *testStream {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.streams[len(s.streams)-1]
}

type item struct {
	ev  listen.Event
	err error
}

type testStream struct {
	src    *testSource
	items  chan item
	closed chan struct{}
	once   sync.Once
	closes chan error // every Close call's reason
	mu     sync.Mutex
	count  int
}

func (st *testStream) Next() (listen.Event, error) {
	select {
	case st.src.nexts <- struct{}{}:
	default:
	}
	select {
	case it := <-st.items:
		return it.ev, it.err
	case <-st.closed:
		return listen.Event{}, listen.ErrClosed
	}
}

func (st *testStream) Close(reason error) {
	st.mu.Lock()
	st.count++
	st.mu.Unlock()
	st.closes <- reason
	st.once.Do(func() { close(st.closed) })
}

func (st *testStream) closeCount() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.count
}

func (st *testStream) emit(ev listen.Event) { st.items <- item{ev: ev} }
func (st *testStream) complete()            { st.items <- item{err: listen.ErrClosed} }
func (st *testStream) fail(err error)       { st.items <- item{err: err} }

// allCaps advertises every core capability.
var allCaps = listen.Capabilities{
	ToolsListChanged:     true,
	PromptsListChanged:   true,
	ResourcesListChanged: true, ResourcesSubscribe: true,
}

// request builds a 2026-07-28 listen request with id and filter.
func request(id jsonrpc.ID, f listen.Filter) *listen.Request {
	return &listen.Request{
		ID:                 id,
		ProtocolVersion:    spec.ProtocolVersion,
		Notifications:      f,
		ClientCapabilities: map[string]any{},
		Transport:          listen.Transport{Kind: "direct"},
	}
}

// decode parses a wire message for assertions.
func decode(t testing.TB, msg []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(msg, &m), "message: %s", msg)
	return m
}

// openSub opens a subscription on src with every capability.
func openSub(t testing.TB, src listen.Source, id jsonrpc.ID, f listen.Filter) *listen.Subscription {
	t.Helper()
	sub, err := listen.Open(context.Background(), src, request(id, f), &listen.Options{Capabilities: allCaps})
	require.NoError(t, err)
	return sub
}

func errEOF() error { return io.EOF }

// mustCapabilities reads a server/discover capabilities object.
func mustCapabilities(doc string) listen.Capabilities {
	c, err := listen.CapabilitiesFrom(doc)
	if err != nil {
		panic(err)
	}
	return c
}

// authIs matches the principals whose Auth is v (Access.Recheck).
func authIs(v any) func(any) bool { return func(a any) bool { return a == v } }

// waitExited waits until w's goroutine has exited: its Outcomes is closed
// (any outcome still in it is discarded).
func waitExited(w *listen.Worker) {
	for range w.Outcomes() {
	}
}

// admit is Begin(req.Auth) and Slot.Admit in one step: the admitted slot,
// or the refusal.
func admit(srv *listen.Server, req *listen.Request) (*listen.Slot, error) {
	sl := srv.Begin(req.Auth)
	if err := sl.Admit(context.Background(), req); err != nil {
		return nil, err
	}
	return sl, nil
}
