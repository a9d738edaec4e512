package natsbridge_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/spec"
)

// connectVia dials through p with fast reconnects and extra options.
func connectVia(t testing.TB, url string, extra ...nats.Option) *nats.Conn {
	t.Helper()
	opts := append([]nats.Option{
		nats.ReconnectWait(50 * time.Millisecond),
		nats.ReconnectJitter(0, 0),
		nats.MaxReconnects(-1),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}),
	}, extra...)
	nc, err := nats.Connect(url, opts...)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// partition cuts A off the broker (B and C stay connected) and waits until
// A's bridge saw it.
func partition(t *testing.T, p *proxy, a *instance) {
	t.Helper()
	p.Cut()
	await(t, a.rec.Conns, "A losing the broker", func(c cluster.ConnectionInfo) bool {
		return c.Status != "connected"
	})
}

// TestPartitionBuffered: an instance cut off the broker keeps serving its
// own listeners; what it publishes meanwhile is buffered by nats.go and
// reaches the other instances once after it reconnects.
func TestPartitionBuffered(t *testing.T) {
	ns := startNATS(t, 0)
	p := newProxy(t, ns.Addr().String())
	a := newInstance(t, "A", connectVia(t, "nats://"+p.Addr()), natsOptions())
	b := newInstance(t, "B", connect(t, ns.ClientURL()), natsOptions())
	c := newInstance(t, "C", connect(t, ns.ClientURL()), natsOptions())
	sa := a.listen(t, "A-tools", `{"toolsListChanged":true}`)
	sb := b.listen(t, "B-tools", `{"toolsListChanged":true}`)
	sc := c.listen(t, "C-tools", `{"toolsListChanged":true}`)

	partition(t, p, a)
	r, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "buffered"))
	require.NoError(t, err)
	assert.Equal(t, 1, r.Matched)
	assert.Equal(t, "buffered", sa.next(t).id)
	out := await(t, a.rec.Outs, "A's publish", nil)
	assert.NoError(t, out.Err, "nats.go buffers while reconnecting")

	p.Restore()
	await(t, a.rec.Resyncs, "A's reconnect resync", func(r cluster.ResyncInfo) bool {
		return r.Reason == "reconnect"
	})
	for _, s := range []*stream{sb, sc} {
		assert.Equal(t, "buffered", s.next(t).id)
	}
	// A's own listener got its resync; B and C lost nothing, so no resync
	// there: their next notification is the next event.
	n := sa.next(t)
	assert.Equal(t, spec.MethodToolsListChanged, n.method)
	assert.Empty(t, n.id)
	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "next"))
	require.NoError(t, err)
	for _, s := range []*stream{sa, sb, sc} {
		assert.Equal(t, "next", s.next(t).id)
	}
	for _, in := range []*instance{b, c} {
		st := in.bridge.Stats()
		assert.Zero(t, st.Gaps, in.name)
		assert.Zero(t, st.Resyncs, in.name)
		assert.Equal(t, uint64(2), st.Received, in.name)
	}
	assert.Equal(t, uint64(1), a.bridge.Stats().Syncs)
}

// TestPartitionLost: with nats.go's reconnect buffer off, what an instance
// publishes while cut off reaches only its own listeners and counts as a
// publish error; after it reconnects its sync message shows the gap to the
// others, which tell their listeners to refetch.
func TestPartitionLost(t *testing.T) {
	ns := startNATS(t, 0)
	p := newProxy(t, ns.Addr().String())
	a := newInstance(t, "A", connectVia(t, "nats://"+p.Addr(), nats.ReconnectBufSize(-1)), natsOptions())
	b := newInstance(t, "B", connect(t, ns.ClientURL()), natsOptions())
	sa := a.listen(t, "A-tools", `{"toolsListChanged":true}`)
	sb := b.listen(t, "B-tools", `{"toolsListChanged":true}`)

	_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "first"))
	require.NoError(t, err)
	assert.Equal(t, "first", sa.next(t).id)
	assert.Equal(t, "first", sb.next(t).id)

	partition(t, p, a)
	r, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "lost"))
	require.NoError(t, err, "a NATS failure is not a failure of the local delivery")
	assert.Equal(t, 1, r.Matched)
	assert.Equal(t, "lost", sa.next(t).id)
	out := await(t, a.rec.Outs, "A's failed publish", func(i cluster.PublishOutInfo) bool { return i.Err != nil })
	assert.ErrorIs(t, out.Err, nats.ErrReconnectBufExceeded)
	assert.Equal(t, uint64(1), a.bridge.Stats().PublishErrors)

	p.Restore()
	ri := await(t, b.rec.Resyncs, "B's loss resync", nil)
	assert.Equal(t, "loss", ri.Reason)
	seen := map[string]bool{}
	for !seen[spec.MethodToolsListChanged] {
		n := sb.next(t)
		require.Empty(t, n.id, "B must never see the lost event")
		seen[n.method] = true
	}
	st := b.bridge.Stats()
	assert.Equal(t, uint64(1), st.Gaps)
	assert.Equal(t, uint64(1), st.Received)
}
