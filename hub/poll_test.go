package hub_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// readyChan makes ns signal a channel where it calls its notify function.
func readyChan(ns listen.NotifyStream) <-chan struct{} {
	ready := make(chan struct{}, 1)
	ns.SetNotify(func() {
		select {
		case ready <- struct{}{}:
		default:
		}
	})
	return ready
}

// A hub stream is a listen.NotifyStream: Serve pulls it without a worker
// goroutine. A waiting poller counts as a delivery, like a blocked Next.
func TestPollingAHubStream(t *testing.T) {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	_, st, err := h.Open(context.Background(), nil, listen.Filter{"toolsListChanged": true})
	require.NoError(t, err)
	ps, ok := st.(listen.NotifyStream)
	require.True(t, ok)
	ready := readyChan(ps)

	_, ok, err = ps.TryNext()
	require.NoError(t, err)
	assert.False(t, ok, "nothing queued yet")
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
	ps := st.(listen.NotifyStream)
	ready := readyChan(ps)
	h.ToolsListChanged()
	_, ok, _ := ps.TryNext()
	require.True(t, ok)
	_, ok, _ = ps.TryNext()
	require.False(t, ok)
	h.Complete()
	<-ready
	_, ok, err = ps.TryNext()
	assert.True(t, ok)
	assert.ErrorIs(t, err, listen.ErrClosed, "a completed listener with an empty queue ends")
	st.Close(listen.ErrComplete)
}

// A hub stream is a listen.NotifyStream: with SetNotify, a publication to a
// waiting poller, Complete and Close call the function (after the
// listener's lock is released: it may pull right away); a publication to a
// stream that is not waiting queues and calls nothing.
func TestNotifyingAHubStream(t *testing.T) {
	h := newHub(t, hub.Options{})
	_, st, err := h.Open(context.Background(), nil, listen.Filter{"toolsListChanged": true})
	require.NoError(t, err)
	ns, ok := st.(listen.NotifyStream)
	require.True(t, ok)
	var got []listen.Kind
	notified := 0
	ns.SetNotify(func() {
		notified++
		// Not under the listener's lock: pulling here does not deadlock.
		if ev, ok, err := ns.TryNext(); ok && err == nil {
			got = append(got, ev.Kind)
		}
	})

	_, ok, err = ns.TryNext()
	require.NoError(t, err)
	require.False(t, ok)
	assert.Equal(t, hub.Report{Matched: 1, Delivered: 1}, h.ToolsListChanged(), "a waiting poller is a delivery")
	assert.Equal(t, 1, notified)
	assert.Equal(t, []listen.Kind{listen.KindToolsListChanged}, got, "pulled from inside notify")

	// Not waiting (the last TryNext found an event): this one queues.
	assert.Equal(t, hub.Report{Matched: 1, Buffered: 1}, h.ToolsListChanged())
	assert.Equal(t, 1, notified)
	_, ok, _ = ns.TryNext()
	require.True(t, ok)
	_, ok, _ = ns.TryNext()
	require.False(t, ok)

	h.Complete()
	assert.Equal(t, 2, notified, "Complete notifies")
	_, ok, err = ns.TryNext()
	assert.True(t, ok)
	assert.ErrorIs(t, err, listen.ErrClosed)
	st.Close(listen.ErrComplete)
	assert.Equal(t, 3, notified, "Close notifies")
}
