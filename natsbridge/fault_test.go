package natsbridge_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
)

// TestBrokerRestart stops the NATS server mid-run and starts it again on
// the same port: publishing keeps reaching local listeners while it is
// down, the bridges reconnect, every listener is told to refetch (the
// resync), and cross-instance delivery works again.
func TestBrokerRestart(t *testing.T) {
	ns := startNATS(t, 0)
	port := natsPort(t, ns)
	url := ns.ClientURL()
	var ins []*instance
	for _, name := range []string{"A", "B", "C"} {
		ins = append(ins, newInstance(t, name, connect(t, url), natsOptions()))
	}
	tools := make([]*stream, len(ins))
	res := make([]*stream, len(ins))
	for i, in := range ins {
		tools[i] = in.listen(t, in.name+"-tools", `{"toolsListChanged":true,"promptsListChanged":true}`)
		res[i] = in.listen(t, in.name+"-res", `{"resourceSubscriptions":["`+watched+`"]}`)
	}
	a := ins[0].hub
	_, err := a.Publish(tagged(listen.ToolsListChanged(), "before"))
	require.NoError(t, err)
	for _, s := range tools {
		assert.Equal(t, "before", s.next(t).id)
	}

	// The broker goes away.
	stopNATS(ns)
	for _, in := range ins {
		await(t, in.rec.Conns, in.name+" losing the broker", func(c cluster.ConnectionInfo) bool {
			return c.Status != "connected"
		})
	}

	// Publishing still reaches the local listeners at once.
	r, err := a.Publish(tagged(listen.ToolsListChanged(), "during"))
	require.NoError(t, err)
	assert.Equal(t, 1, r.Matched)
	assert.Equal(t, "during", tools[0].next(t).id)
	r, err = ins[1].hub.Publish(tagged(listen.ResourceUpdated(watched), "during-res"))
	require.NoError(t, err)
	assert.Equal(t, 1, r.Matched)
	assert.Equal(t, "during-res", res[1].next(t).id)

	// The broker comes back on the same port: every bridge reconnects and
	// resynchronises its listeners.
	startNATS(t, port)
	for _, in := range ins {
		ri := await(t, in.rec.Resyncs, in.name+" resync", func(r cluster.ResyncInfo) bool {
			return r.Reason == "reconnect"
		})
		assert.Equal(t, []listen.Kind{listen.KindToolsListChanged, listen.KindPromptsListChanged, listen.KindResourcesListChanged}, ri.Kinds)
	}
	// Each tools+prompts listener is told both lists changed (it may also
	// get "during", flushed from A's reconnect buffer, at most once).
	for i, s := range tools {
		seen := map[string]int{}
		for seen[spec.MethodToolsListChanged] == 0 || seen[spec.MethodPromptsListChanged] == 0 {
			n := s.next(t)
			if n.id == "" {
				seen[n.method]++
				continue
			}
			require.Equal(t, "during", n.id, "instance %s", ins[i].name)
			require.NotEqual(t, 0, i, "A's own event came back to A")
		}
	}

	// Cross-instance delivery works again, from every instance.
	for _, in := range ins {
		_, err := in.hub.Publish(tagged(listen.ToolsListChanged(), "after-"+in.name))
		require.NoError(t, err)
		_, err = in.hub.Publish(tagged(listen.ResourceUpdated(watched), "after-res-"+in.name))
		require.NoError(t, err)
	}
	for i, in := range ins {
		// Read until all three "after" events arrived; count everything.
		for _, s := range []*stream{tools[i], res[i]} {
			got := map[string]int{}
			prefix := "after-"
			if s == res[i] {
				prefix = "after-res-"
			}
			for got[prefix+"A"] == 0 || got[prefix+"B"] == 0 || got[prefix+"C"] == 0 {
				n := s.next(t)
				got[n.id]++
			}
			for _, name := range []string{"A", "B", "C"} {
				assert.Equal(t, 1, got[prefix+name], "%s on %s", prefix+name, in.name)
			}
			assert.LessOrEqual(t, got["during"], 1, in.name)
			assert.LessOrEqual(t, got["during-res"], 1, in.name)
		}
		st := in.bridge.Stats()
		assert.GreaterOrEqual(t, st.Resyncs, uint64(1), in.name)
		assert.Zero(t, st.Dropped.Total(), in.name)
	}
}

// TestBadMessages publishes garbage, an unknown version, an invalid event
// and an oversized message raw on the subject: each is dropped and counted
// under its reason, and the bridge keeps delivering.
func TestBadMessages(t *testing.T) {
	ns := startNATS(t, 0)
	opts := natsbridge.Options{Options: cluster.Options{MaxMessageBytes: 4096}}
	a := newInstance(t, "A", connect(t, ns.ClientURL()), opts)
	b := newInstance(t, "B", connect(t, ns.ClientURL()), opts)
	s := b.listen(t, "B-tools", `{"toolsListChanged":true}`)
	raw := connect(t, ns.ClientURL())
	subject := b.bridge.Subject()
	assert.Equal(t, "mcp.listen.events", subject)

	cases := []struct {
		data   string
		reason string
	}{
		{"not json at all", "malformed"},
		{``, "malformed"},
		{`[1,2,3]`, "malformed"},
		{`{"o":"x","n":1,"k":"tools"}`, "malformed"},             // no version
		{`{"v":1,"n":1,"k":"tools"}`, "malformed"},               // no origin
		{`{"v":1,"o":"x","k":"tools"}`, "malformed"},             // no sequence
		{`{"v":1,"o":"x","n":1,"k":"bogus"}`, "malformed"},       // unknown kind
		{`{"v":1,"o":"x","n":1,"k":"tools"} {}`, "malformed"},    // trailing data
		{`{"v":1,"o":"x","n":"1","k":"tools"}`, "malformed"},     // mistyped
		{`{"v":2,"o":"x","n":1,"k":"tools"}`, "unknown_version"}, // a later version
		{`{"v":2,"o":{"new":"layout"},"n":[1]}`, "unknown_version"},
		{`{"v":"1","o":"x","n":1,"k":"tools"}`, "unknown_version"},
		{`{"v":1,"o":"x","n":1,"k":"updated","u":"not a uri"}`, "invalid_event"},
		{`{"v":1,"o":"x","n":2,"k":"tools","u":"file:///a"}`, "invalid_event"},
		{`{"v":1,"o":"x","n":3,"k":"ext","x":"com.example/tasks","s":{}}`, "invalid_event"},
		{`{"v":1,"o":"x","n":4,"k":"tools","m":{"pad":"` + strings.Repeat("x", 8192) + `"}}`, "too_large"},
	}
	for _, c := range cases {
		require.NoError(t, raw.Publish(subject, []byte(c.data)))
	}
	require.NoError(t, raw.Flush())
	for _, in := range []*instance{a, b} {
		for _, c := range cases {
			d := await(t, in.rec.Drops, fmt.Sprintf("%s dropping %.40q", in.name, c.data), nil)
			assert.Equal(t, c.reason, d.Reason, "%s: %.60q", in.name, c.data)
			assert.Equal(t, 1, d.Count)
			assert.Equal(t, len(c.data), d.Bytes)
		}
		st := in.bridge.Stats()
		assert.Equal(t, cluster.Drops{TooLarge: 1, Malformed: 9, UnknownVersion: 3, InvalidEvent: 3}, st.Dropped, in.name)
		assert.Equal(t, uint64(len(cases)), st.Dropped.Total())
		assert.Zero(t, st.Received)
	}

	// The bridges keep delivering.
	_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "still-alive"))
	require.NoError(t, err)
	n := s.next(t)
	assert.Equal(t, "still-alive", n.id)
	assert.Equal(t, uint64(1), b.bridge.Stats().Received)
}

// TestGapResync: a peer's missing sequence numbers make the bridge tell its
// listeners to refetch.
func TestGapResync(t *testing.T) {
	ns := startNATS(t, 0)
	b := newInstance(t, "B", connect(t, ns.ClientURL()), natsbridge.Options{Options: cluster.Options{Resync: []listen.Kind{listen.KindToolsListChanged}}})
	s := b.listen(t, "B-tools", `{"toolsListChanged":true}`)
	raw := connect(t, ns.ClientURL())
	env := func(n int, id string) []byte {
		return fmt.Appendf(nil, `{"v":1,"o":"peer","n":%d,"k":"tools","m":{%q:%q}}`, n, "com.example/id", id)
	}
	require.NoError(t, raw.Publish(b.bridge.Subject(), env(1, "one")))
	require.NoError(t, raw.Publish(b.bridge.Subject(), env(2, "two")))
	require.NoError(t, raw.Publish(b.bridge.Subject(), env(5, "five"))) // 3 and 4 are lost
	assert.Equal(t, "one", s.next(t).id)
	assert.Equal(t, "two", s.next(t).id)
	assert.Equal(t, "five", s.next(t).id)
	ri := await(t, b.rec.Resyncs, "the loss resync", nil)
	assert.Equal(t, "loss", ri.Reason)
	assert.Equal(t, []listen.Kind{listen.KindToolsListChanged}, ri.Kinds)
	n := s.next(t)
	assert.Equal(t, spec.MethodToolsListChanged, n.method)
	assert.Empty(t, n.id, "the resync notification")
	st := b.bridge.Stats()
	assert.Equal(t, uint64(2), st.Gaps)
	assert.Equal(t, uint64(3), st.Received)
	assert.Equal(t, uint64(1), st.Resyncs)
}
