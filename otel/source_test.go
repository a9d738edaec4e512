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
	"github.com/mcplisten/listen/listentest"
)

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
				ts := listentest.NewSource() // its streams are not NotifyStreams
				var src listen.Source = ts
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
						ts.Streams()[0].Send(listen.ToolsListChanged())
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
					"mcp.listen.streams.open{mcp.listen.transport=test}":                                                            0,
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

// The wrapper keeps a hub stream a NotifyStream (no worker goroutine),
// passes Open's errors through and keeps a nil source nil.
func TestSourceWrapper(t *testing.T) {
	m, _ := newMetrics(t)
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	_, st, err := m.Source(h).Open(context.Background(), openRequest(t, "test"), listen.Filter{})
	require.NoError(t, err)
	_, ok := st.(listen.NotifyStream)
	assert.True(t, ok, "a hub stream stays a NotifyStream")
	st.Close(nil)

	// A stream that is not a NotifyStream, opened with a nil request (the
	// inner source does not need it; the wrapper copes without a transport
	// kind).
	ts := listentest.NewSource()
	inner := listentest.SourceFunc(func(ctx context.Context, _ *listen.Request, f listen.Filter) (listen.Filter, listen.Stream, error) {
		return ts.Open(ctx, openRequest(t, "test"), f)
	})
	_, st, err = m.Source(inner).Open(context.Background(), nil, listen.Filter{})
	require.NoError(t, err)
	_, ok = st.(listen.NotifyStream)
	assert.False(t, ok)
	st.Close(nil)

	boom := errors.New("boom")
	ts.OpenErr = boom
	_, st, err = m.Source(inner).Open(context.Background(), nil, nil)
	assert.Nil(t, st)
	assert.Same(t, boom, err)
	assert.Nil(t, m.Source(nil))
}
