package redisbridge_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/redisbridge"
	"github.com/mcplisten/listen/redisbridge/redistest"
	"github.com/mcplisten/listen/spec"
)

// Three instances on one real redis-server, each with listeners of
// different filters: every event published on any hub reaches each
// listener that selects it exactly once, in its publisher's order, and
// nothing else; a bridge ignores its own entries.
func TestFanOut(t *testing.T) {
	srv := redistest.Run(t)
	var ins []*instance
	for _, n := range []string{"A", "B", "C"} {
		ins = append(ins, join(t, n, srv.URL(), redisbridge.Options{}))
	}
	tools := map[string]*listener{}
	res := map[string]*listener{}
	for _, in := range ins {
		tools[in.name] = in.listen(t, toolsOnly)
		res[in.name] = in.listen(t, listen.Filter{spec.KeyResourceSubscriptions: []any{watched}})
	}
	const rounds = 20
	for i := range rounds {
		for _, in := range ins {
			_, err := in.hub.Publish(tagged(listen.ToolsListChanged(), fmt.Sprint(in.name, i)))
			require.NoError(t, err)
			_, err = in.hub.Publish(tagged(listen.ResourceUpdated(watched), fmt.Sprint("r", in.name, i)))
			require.NoError(t, err)
		}
	}
	for _, in := range ins {
		_, err := in.hub.Publish(tagged(listen.PromptsListChanged(), "nobody asked"))
		require.NoError(t, err)
		_, err = in.hub.Publish(tagged(listen.ToolsListChanged(), "end"+in.name))
		require.NoError(t, err)
		_, err = in.hub.Publish(tagged(listen.ResourceUpdated(watched), "rend"+in.name))
		require.NoError(t, err)
	}
	// Each listener reads until it has every publisher's last event: the
	// entries of different publishers interleave in any order, those of
	// one publisher arrive in its order.
	collect := func(l *listener, prefix string) []string {
		var got []string
		for !hasAll(got, prefix+"endA", prefix+"endB", prefix+"endC") {
			got = append(got, l.next(t).id)
		}
		return got
	}
	for _, in := range ins {
		for prefix, l := range map[string]*listener{"": tools[in.name], "r": res[in.name]} {
			got := collect(l, prefix)
			assert.Len(t, got, 3*rounds+3, in.name)
			next := map[byte]int{}
			for _, id := range got {
				id = id[len(prefix):]
				if len(id) > 3 && id[:3] == "end" {
					assert.Equal(t, rounds, next[id[3]], "%s: %s's events before its last: %v", in.name, id[3:], got)
					continue
				}
				var i int
				_, err := fmt.Sscanf(id[1:], "%d", &i)
				require.NoError(t, err, id)
				assert.Equal(t, next[id[0]], i, "%s: %v", in.name, got)
				next[id[0]] = i + 1
			}
		}
		assert.Empty(t, tools[in.name].notes, "nothing more, nothing else")
		assert.Empty(t, res[in.name].notes)
		st := in.bridge.Stats()
		assert.Equal(t, uint64(2*rounds+3), st.Published, in.name)
		assert.GreaterOrEqual(t, st.Received, uint64(2*(2*rounds+2)), in.name)
		assert.Zero(t, st.Dropped.Total())
		assert.Zero(t, st.Gaps)
		assert.Zero(t, st.Resyncs)
	}
}

// The hub refuses, publishing nothing anywhere, what the stream cannot
// carry; options are checked; Close is idempotent and leaves the hub to
// publish locally.
func TestOptionsAndErrors(t *testing.T) {
	srv := redistest.Run(t)
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	for name, o := range map[string]redisbridge.Options{
		"short stream":   {StreamLength: 10},
		"space":          {Stream: "mcp listen"},
		"outbox < msg":   {OutboxBytes: 1000, Options: cluster.Options{MaxMessageBytes: 4096}},
		"read < msg":     {ReadBytes: 1000, Options: cluster.Options{MaxMessageBytes: 4096}},
		"read < default": {ReadBytes: 1000},
		"tiny messages":  {Options: cluster.Options{MaxMessageBytes: 10}},
		"short key":      {Options: cluster.Options{AuthKeys: [][]byte{[]byte("password")}}},
		"negative fresh": {Options: cluster.Options{Freshness: -1}},
	} {
		_, err := redisbridge.Connect(srv.URL(), h, o)
		assert.ErrorIs(t, err, cluster.ErrInvalidOptions, name)
	}
	_, err = redisbridge.New(nil, h, redisbridge.Options{})
	assert.ErrorIs(t, err, cluster.ErrInvalidOptions)
	_, err = redisbridge.Connect(srv.URL(), nil, redisbridge.Options{})
	assert.ErrorIs(t, err, cluster.ErrInvalidOptions)
	_, err = redisbridge.Connect("http://not-redis", h, redisbridge.Options{})
	assert.Error(t, err)
	_, err = redisbridge.Connect("redis://127.0.0.1:1", h, redisbridge.Options{})
	assert.Error(t, err, "an unreachable Redis fails New")

	in := join(t, "A", srv.URL(), redisbridge.Options{Stream: "acme:mcp", Options: cluster.Options{MaxMessageBytes: 1024}})
	assert.Equal(t, "acme:mcp", in.bridge.Stream())
	assert.Len(t, in.bridge.ID(), 22)
	assert.Same(t, in.hub, in.bridge.Hub())
	_, err = redisbridge.Connect(srv.URL(), in.hub, redisbridge.Options{})
	assert.ErrorIs(t, err, hub.ErrRelayJoined)

	l := in.listen(t, listen.Filter{"k": true})
	_, err = in.hub.Publish(listen.ExtensionEvent("x.y/z", listen.Filter{"k": true}, string(make([]byte, 2000))))
	assert.ErrorIs(t, err, cluster.ErrTooLarge)
	_, err = in.hub.Publish(listen.ExtensionEvent("x.y/z", listen.Filter{"k": true}, func() {}))
	assert.ErrorIs(t, err, cluster.ErrEncode)
	assert.Empty(t, l.notes)
	assert.Equal(t, uint64(2), in.bridge.Stats().Rejected)

	require.NoError(t, in.bridge.Close())
	require.NoError(t, in.bridge.Close())
	assert.ErrorIs(t, in.bridge.Resync(), cluster.ErrClosed)
	in.hub.ToolsListChanged() // local only now
	assert.Zero(t, in.bridge.Stats().Published)
}
