package hub_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// A hub stream is a listen.PollStream: Serve pulls it without a worker
// goroutine. A waiting poller counts as a delivery, like a blocked Next.
func TestPollingAHubStream(t *testing.T) {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	_, st, err := h.Open(context.Background(), nil, listen.Filter{"toolsListChanged": true})
	require.NoError(t, err)
	ps, ok := st.(listen.PollStream)
	require.True(t, ok)

	_, ok, err = ps.TryNext()
	require.NoError(t, err)
	assert.False(t, ok, "nothing queued yet")
	ready := ps.Ready()
	select {
	case <-ready:
		t.Fatal("woken before any event")
	default:
	}

	r := h.ToolsListChanged()
	assert.Equal(t, hub.Report{Matched: 1, Delivered: 1}, r, "a waiting poller is a delivery")
	<-ready
	ev, ok, err := ps.TryNext()
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, listen.KindToolsListChanged, ev.Kind)

	// Not polling now: the next publications queue, in order.
	h.ToolsListChanged()
	r = h.ToolsListChanged()
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, r)
	for range 2 {
		_, ok, err = ps.TryNext()
		require.NoError(t, err)
		require.True(t, ok)
	}
	assert.Equal(t, 0, h.Stats().Queued)

	_, ok, _ = ps.TryNext() // waiting again
	require.False(t, ok)
	st.Close(listen.ErrComplete)
	<-ready // Close wakes the poller
	_, ok, err = ps.TryNext()
	assert.True(t, ok)
	assert.ErrorIs(t, err, listen.ErrClosed)
	assert.Equal(t, 0, h.Stats().Subscriptions)
}

func TestPollingSeesComplete(t *testing.T) {
	h, _ := hub.New(hub.Options{})
	_, st, err := h.Open(context.Background(), nil, listen.Filter{"toolsListChanged": true})
	require.NoError(t, err)
	ps := st.(listen.PollStream)
	h.ToolsListChanged()
	_, ok, _ := ps.TryNext()
	require.True(t, ok)
	_, ok, _ = ps.TryNext()
	require.False(t, ok)
	h.Complete()
	<-ps.Ready()
	_, ok, err = ps.TryNext()
	assert.True(t, ok)
	assert.ErrorIs(t, err, listen.ErrClosed, "a completed listener with an empty queue ends")
	st.Close(listen.ErrComplete)
}
