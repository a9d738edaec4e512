package otel_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// chanSource opens streams that are not PollStreams: each Next takes the
// next event from events (ErrClosed once it is closed).
type chanSource struct{ events chan listen.Event }

func (s chanSource) Open(_ context.Context, _ *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return supported, &chanStream{events: s.events, done: make(chan struct{})}, nil
}

type chanStream struct {
	events chan listen.Event
	done   chan struct{}
}

func (s *chanStream) Next() (listen.Event, error) {
	select {
	case ev, ok := <-s.events:
		if !ok {
			return listen.Event{}, listen.ErrClosed
		}
		return ev, nil
	case <-s.done:
		return listen.Event{}, listen.ErrClosed
	}
}

func (s *chanStream) Close(error) { close(s.done) }

func openRequest(t *testing.T, kind string) *listen.Request {
	t.Helper()
	req, err := listen.ParseRequest([]byte(listenBody(`1`, `{"toolsListChanged":true}`)))
	require.NoError(t, err)
	req.Transport.Kind = kind
	return req
}

var opts = &listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}}

// A notification counts once written: a failed write is not counted, on a
// worker-served stream and on a polled hub stream alike.
func TestDeliveredCountsWrittenNotifications(t *testing.T) {
	for _, poll := range []bool{false, true} {
		name := "worker"
		if poll {
			name = "poll"
		}
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m, reader := newMetrics(t)
				events := make(chan listen.Event)
				var src listen.Source = chanSource{events}
				var h *hub.Hub
				if poll {
					var err error
					h, err = hub.New(hub.Options{})
					require.NoError(t, err)
					src = h
				}
				sub, err := listen.Open(t.Context(), m.Source(src), openRequest(t, "test"), opts)
				require.NoError(t, err)
				publish := func() {
					if poll {
						h.ToolsListChanged()
					} else {
						events <- listen.ToolsListChanged()
					}
				}
				writes := make(chan []byte)
				failAt := 3 // the ack is write 1
				n := 0
				served := make(chan error, 1)
				go func() {
					served <- sub.Serve(t.Context(), listen.Sink{Write: func(msg []byte) error {
						n++
						if n == failAt {
							return errors.New("broken pipe")
						}
						writes <- append([]byte(nil), msg...)
						return nil
					}})
				}()
				<-writes // the ack
				publish()
				<-writes
				synctest.Wait()
				want := map[string]int64{
					"mcp.listen.notifications.delivered{mcp.listen.notification.kind=tools_list_changed,mcp.listen.transport=test}": 1,
				}
				assert.Equal(t, want, series(t, reader))
				publish() // its write fails
				reason := <-served
				assert.ErrorIs(t, reason, listen.ErrDisconnected)
				assert.Equal(t, want, series(t, reader), "a failed write is not delivered")
			})
		})
	}
}

// The wrapper keeps a hub stream a PollStream (no worker goroutine), passes
// Open's errors through and keeps a nil source nil.
func TestSourceWrapper(t *testing.T) {
	m, _ := newMetrics(t)
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	_, st, err := m.Source(h).Open(context.Background(), openRequest(t, "test"), listen.Filter{})
	require.NoError(t, err)
	_, ok := st.(listen.PollStream)
	assert.True(t, ok, "a hub stream stays a PollStream")
	_, ok = st.(listen.NotifyStream)
	assert.True(t, ok, "and a NotifyStream")
	st.Close(nil)

	_, st, err = m.Source(chanSource{}).Open(context.Background(), nil, listen.Filter{})
	require.NoError(t, err)
	_, ok = st.(listen.PollStream)
	assert.False(t, ok)

	boom := errors.New("boom")
	_, st, err = m.Source(listen.SourceFunc(func(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
		return nil, nil, boom
	})).Open(context.Background(), nil, nil)
	assert.Nil(t, st)
	assert.Same(t, boom, err)
	assert.Nil(t, m.Source(nil))
}
