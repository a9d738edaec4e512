package redisbridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/redisbridge"
	"github.com/mcplisten/listen/redisbridge/redistest"
)

// TestRedisRestart: redis-server is stopped and started again on the same
// port, empty (no persistence), while the instances publish. Every
// listener survives; the bridges reconnect and each resynchronises its
// listeners (the stream they were reading is gone); what an instance
// published while Redis was down reaches its own listeners at once and
// the others once Redis is back; events published afterwards reach every
// instance; no listener receives an event twice.
func TestRedisRestart(t *testing.T) {
	srv := redistest.Run(t)
	var ins []*instance
	tools := map[string]*listener{}
	for _, n := range []string{"A", "B", "C"} {
		in := join(t, n, srv.URL(), redisbridge.Options{})
		ins = append(ins, in)
		tools[n] = in.listen(t, toolsOnly)
	}
	_, err := ins[0].hub.Publish(tagged(listen.ToolsListChanged(), "before"))
	require.NoError(t, err)
	for _, in := range ins {
		assert.Equal(t, "before", tools[in.name].next(t).id)
	}

	srv.Stop()
	for _, in := range ins {
		await(t, in.rec.Conns, in.name+" losing Redis", func(c cluster.ConnectionInfo) bool {
			return c.Status == "disconnected"
		})
	}
	// Local listeners are served at once; the entry waits in B's outbox.
	r, err := ins[1].hub.Publish(tagged(listen.ToolsListChanged(), "during"))
	require.NoError(t, err)
	assert.Equal(t, 1, r.Matched)
	assert.Equal(t, "during", tools["B"].next(t).id)

	require.NoError(t, srv.Restart())
	for _, in := range ins {
		await(t, in.rec.Conns, in.name+" reconnecting", func(c cluster.ConnectionInfo) bool {
			return c.Status == "connected"
		})
		ri := await(t, in.rec.Resyncs, in.name+"'s reconnect resync", nil)
		assert.Equal(t, "reconnect", ri.Reason)
	}
	for _, in := range ins {
		_, err := in.hub.Publish(tagged(listen.ToolsListChanged(), "after-"+in.name))
		require.NoError(t, err)
	}
	for _, in := range ins {
		var got []string
		want := []string{"after-A", "after-B", "after-C"}
		if in.name != "B" {
			want = append(want, "during")
		}
		for !hasAll(got, want...) {
			got = append(got, tools[in.name].next(t).id)
		}
		seen := map[string]bool{}
		hints := 0
		for _, id := range got {
			if id == "" {
				hints++
				continue
			}
			assert.False(t, seen[id], "%s got %s twice: %v", in.name, id, got)
			seen[id] = true
		}
		assert.Positive(t, hints, "%s's listener got the resync hint: %v", in.name, got)
		assert.Len(t, seen, len(want), "%s: %v", in.name, got)
		assert.Zero(t, in.bridge.Stats().Dropped.Total())
	}
}

// TestPartitionCatchesUp: one instance is cut off Redis (a TCP proxy in
// front of it) while the others publish; once the proxy is back, it reads
// what it missed from the stream, in order, without a resynchronisation
// (the stream still holds it all, from the last entry it read on), and
// what it published while cut off, kept in its outbox, reaches the
// others. (An instance that had read no entry yet resynchronises: it
// cannot tell.)
func TestPartitionCatchesUp(t *testing.T) {
	srv := redistest.Run(t)
	p := newProxy(t, srv.Addr)
	a := join(t, "A", "redis://"+p.Addr(), redisbridge.Options{})
	b := join(t, "B", srv.URL(), redisbridge.Options{})
	la, lb := a.listen(t, toolsOnly), b.listen(t, toolsOnly)
	_, err := b.hub.Publish(tagged(listen.ToolsListChanged(), "seen")) // A has read an entry
	require.NoError(t, err)
	assert.Equal(t, "seen", la.next(t).id)
	assert.Equal(t, "seen", lb.next(t).id)

	p.Cut()
	await(t, a.rec.Conns, "A losing Redis", func(c cluster.ConnectionInfo) bool { return c.Status == "disconnected" })
	var missed []string
	for i := range 50 {
		id := fmt.Sprint("missed-", i)
		missed = append(missed, id)
		_, err := b.hub.Publish(tagged(listen.ToolsListChanged(), id))
		require.NoError(t, err)
	}
	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "from-A"))
	require.NoError(t, err)
	assert.Equal(t, "from-A", la.next(t).id)
	p.Restore()

	got := ids(la.until(t, "missed-49"))
	assert.Equal(t, missed, got, "A reads what it missed, in order, and no resync hint")
	assert.Equal(t, append(missed, "from-A"), ids(lb.until(t, "from-A")))
	st := a.bridge.Stats()
	assert.Zero(t, st.Resyncs)
	assert.Zero(t, st.Gaps)
	assert.Zero(t, st.PublishErrors, "A's entry waited in its outbox")
	assert.Zero(t, b.bridge.Stats().Gaps)
}

// TestTrimmedResync: an instance cut off for longer than the stream keeps
// (StreamLength entries) finds, once back, that the entries after the last
// one it read were trimmed: it resynchronises its listeners, then reads
// on.
func TestTrimmedResync(t *testing.T) {
	srv := redistest.Run(t)
	p := newProxy(t, srv.Addr)
	opts := redisbridge.Options{StreamLength: 100} // the least
	a := join(t, "A", "redis://"+p.Addr(), opts)
	b := join(t, "B", srv.URL(), opts)
	la := a.listen(t, toolsOnly)
	_, err := b.hub.Publish(tagged(listen.ToolsListChanged(), "seen"))
	require.NoError(t, err)
	assert.Equal(t, "seen", la.next(t).id)

	p.Cut()
	await(t, a.rec.Conns, "A losing Redis", func(c cluster.ConnectionInfo) bool { return c.Status == "disconnected" })
	for i := range 1000 {
		_, err := b.hub.Publish(tagged(listen.ToolsListChanged(), fmt.Sprint("m", i)))
		require.NoError(t, err)
	}
	_, err = b.hub.Publish(tagged(listen.ToolsListChanged(), "last"))
	require.NoError(t, err)
	await(t, b.rec.Outs, "B's last publication", func(i cluster.PublishOutInfo) bool { return i.Seq == 1002 })
	p.Restore()
	ri := await(t, a.rec.Resyncs, "A's resync", nil)
	assert.Equal(t, "reconnect", ri.Reason)
	got := la.until(t, "last")
	assert.Less(t, len(got), 1000, "the trimmed entries are not delivered")
	assert.Empty(t, got[0].id, "the resync hint comes first")
}

// TestForeignEntries: entries a plain Redis client appends that no bridge
// wrote are dropped and counted, each as what it is, and the reader goes
// on: one larger than MaxMessageBytes (not decoded), one without the
// envelope field, one whose envelope is no JSON; a well-formed envelope
// appended after them is delivered.
func TestForeignEntries(t *testing.T) {
	srv := redistest.Run(t)
	in := join(t, "A", srv.URL(), redisbridge.Options{Options: cluster.Options{MaxMessageBytes: 1024}})
	l := in.listen(t, toolsOnly)
	c := raw(t, srv.URL())
	stream := in.bridge.Stream()
	big := fmt.Appendf(nil, `{"v":1,"o":"p","n":1,"k":"tools","m":{"pad":%q}}`, strings.Repeat("x", 4096))
	xadd(t, c, stream, big, "")
	require.NoError(t, c.XAdd(context.Background(), &redis.XAddArgs{Stream: stream, Values: []any{"other", "field"}}).Err())
	xadd(t, c, stream, []byte("not json"), "")
	for _, want := range []string{"too_large", "malformed", "malformed"} {
		d := await(t, in.rec.Drops, "a drop", nil)
		assert.Equal(t, want, d.Reason)
	}
	xadd(t, c, stream, toolsEnvelope("p", 2, "good"), "")
	assert.Equal(t, "good", l.next(t).id)
	assert.Equal(t, cluster.Drops{TooLarge: 1, Malformed: 2}, in.bridge.Stats().Dropped)
}
