package cluster_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// broker is an in-memory broker: Send records each message and hands a
// copy to every node's Receive, in the sender's goroutine (the tests
// publish from one goroutine, so each node receives from one at a time).
type broker struct {
	mu    sync.Mutex
	nodes []*cluster.Node
	log   []cluster.Message
	// down, while set, makes Send fail.
	down bool
}

func (b *broker) send(m cluster.Message) error {
	b.mu.Lock()
	if b.down {
		b.mu.Unlock()
		return errors.New("broker down")
	}
	m.Data = bytes.Clone(m.Data)
	b.log = append(b.log, m)
	nodes := append([]*cluster.Node(nil), b.nodes...)
	b.mu.Unlock()
	for _, n := range nodes {
		n.Receive(m)
	}
	return nil
}

func (b *broker) captured() []cluster.Message {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]cluster.Message(nil), b.log...)
}

const scope = "mcp.listen.events"

var key = bytes.Repeat([]byte{'k'}, cluster.MinAuthKeyBytes)

// member is one instance: a hub, its node, and a listener on the hub.
type member struct {
	hub    *hub.Hub
	node   *cluster.Node
	stream listen.Stream
	rec    *recorder
}

// join starts an instance on b whose listener selects filter.
func (b *broker) join(t *testing.T, opts cluster.Options, filter listen.Filter) *member {
	t.Helper()
	h, err := hub.New(hub.Options{MaxBuffer: 1000})
	require.NoError(t, err)
	rec := &recorder{}
	if opts.OnDrop == nil && opts.OnResync == nil {
		opts.OnDrop, opts.OnResync = rec.OnDrop, rec.OnResync
	}
	n, err := cluster.NewNode(h, cluster.Transport{Scope: scope, Send: b.send}, opts)
	require.NoError(t, err)
	t.Cleanup(n.Close)
	_, s, err := h.Open(context.Background(), &listen.Request{ID: jsonrpc.StringID("l")}, filter)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close(nil) })
	b.mu.Lock()
	b.nodes = append(b.nodes, n)
	b.mu.Unlock()
	return &member{hub: h, node: n, stream: s, rec: rec}
}

// recorder records drops and resyncs (Options.OnDrop, OnResync).
type recorder struct {
	mu      sync.Mutex
	drops   []cluster.DropInfo
	resyncs []cluster.ResyncInfo
}

func (r *recorder) OnDrop(i cluster.DropInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.drops = append(r.drops, i)
}

func (r *recorder) OnResync(i cluster.ResyncInfo) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resyncs = append(r.resyncs, i)
}

func (r *recorder) dropReasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.drops {
		out = append(out, d.Reason)
	}
	return out
}

func (r *recorder) resyncReasons() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, d := range r.resyncs {
		out = append(out, d.Reason)
	}
	return out
}

const idKey = "com.example/id"

func tagged(ev listen.Event, id string) listen.Event {
	return ev.WithMetadata(map[string]any{idKey: id})
}

// queued returns the ids of what m's listener holds, in order: "" for an
// untagged event (a resync hint).
func (m *member) queued(t *testing.T) []string {
	t.Helper()
	var out []string
	for m.hub.Stats().Queued > 0 {
		ev, err := m.stream.Next()
		require.NoError(t, err)
		id := ""
		if v, ok := ev.Metadata[idKey]; ok {
			id = strings.Trim(fmt.Sprint(v), `"`)
			if raw, ok := v.(json.RawMessage); ok {
				_ = json.Unmarshal(raw, &id)
			}
		}
		out = append(out, id)
	}
	return out
}

var toolsFilter = listen.Filter{spec.KeyToolsListChanged: true}

// An event published on any hub reaches every instance's listeners once:
// the local one from the hub's own fan-out, the others from the broker;
// a node ignores its own messages.
func TestNodeFanOut(t *testing.T) {
	for _, signed := range []bool{false, true} {
		t.Run(fmt.Sprintf("signed=%v", signed), func(t *testing.T) {
			var opts cluster.Options
			if signed {
				opts.AuthKeys = [][]byte{key}
			}
			b := &broker{}
			a, c := b.join(t, opts, toolsFilter), b.join(t, opts, toolsFilter)
			_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "a1"))
			require.NoError(t, err)
			_, err = c.hub.Publish(tagged(listen.ToolsListChanged(), "c1"))
			require.NoError(t, err)
			_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "a2"))
			require.NoError(t, err)
			assert.Equal(t, []string{"a1", "c1", "a2"}, a.queued(t))
			assert.Equal(t, []string{"a1", "c1", "a2"}, c.queued(t))
			st := a.node.Stats()
			assert.Equal(t, uint64(2), st.Published)
			assert.Equal(t, uint64(1), st.Received)
			assert.Equal(t, uint64(2), st.Echoes)
			assert.Zero(t, st.Dropped.Total())
			for _, m := range b.captured() {
				assert.Equal(t, signed, m.Sig != "")
			}
		})
	}
}

// An event the broker cannot carry is published nowhere: the hub's
// Publish returns the node's error.
func TestNodeRefusesWhatItCannotSend(t *testing.T) {
	b := &broker{}
	a := b.join(t, cluster.Options{MaxMessageBytes: 1024}, listen.Filter{"k": true})
	c := b.join(t, cluster.Options{}, listen.Filter{"k": true})
	_, err := a.hub.Publish(listen.ExtensionEvent("x.y/z", listen.Filter{"k": true}, strings.Repeat("x", 2000)))
	assert.ErrorIs(t, err, cluster.ErrTooLarge)
	_, err = a.hub.Publish(listen.ExtensionEvent("x.y/z", listen.Filter{"k": true}, func() {}))
	assert.ErrorIs(t, err, cluster.ErrEncode)
	assert.Empty(t, a.queued(t))
	assert.Empty(t, c.queued(t))
	assert.Equal(t, uint64(2), a.node.Stats().Rejected)

	// A broker failure is counted, not returned: the local listeners are
	// served.
	b.down = true
	_, err = a.hub.Publish(listen.ExtensionEvent("x.y/z", listen.Filter{"k": true}, "small"))
	require.NoError(t, err)
	assert.Len(t, a.queued(t), 1)
	assert.Equal(t, uint64(1), a.node.Stats().PublishErrors)
}

// Replay protection survives a restart: messages captured from a running
// cluster and published again to a node started afterwards (a restarted
// instance, with the same key) deliver nothing: each is held back as
// stamped before the node started (Drops.Replayed) and asks for a loss
// resync, since it might be a genuine message of an instance whose clock
// is behind (here one resync, ResyncInterval folding the rest); once they
// are older than Freshness they are stale, and cause nothing.
func TestNodeReplayAfterRestart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opts := cluster.Options{AuthKeys: [][]byte{key}}
		b := &broker{}
		a := b.join(t, opts, toolsFilter)
		c := b.join(t, opts, toolsFilter)
		for i := range 5 {
			_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), fmt.Sprint("e", i)))
			require.NoError(t, err)
			time.Sleep(time.Millisecond)
		}
		require.Len(t, c.queued(t), 5)
		captured := b.captured()
		require.Len(t, captured, 5)

		time.Sleep(time.Second) // c restarts: a fresh node, a fresh hub
		fresh := (&broker{}).join(t, opts, toolsFilter)
		for _, m := range captured {
			fresh.node.Receive(m)
		}
		time.Sleep(cluster.DefaultResyncInterval)
		synctest.Wait()
		assert.Equal(t, []string{"", ""}, fresh.queued(t), "two resyncs (the first at once, the others folded), no replayed event")
		st := fresh.node.Stats()
		assert.Equal(t, uint64(5), st.Dropped.Replayed)
		assert.Zero(t, st.Received)
		assert.Equal(t, []string{"loss", "loss"}, fresh.rec.resyncReasons())

		// The same copies, delivered more than Freshness later: stale.
		time.Sleep(cluster.DefaultFreshness)
		later := (&broker{}).join(t, opts, toolsFilter)
		for _, m := range captured {
			later.node.Receive(m)
		}
		assert.Empty(t, later.queued(t))
		assert.Equal(t, uint64(5), later.node.Stats().Dropped.Stale)
		assert.Empty(t, later.rec.resyncReasons())

		// A genuine message of a's, stamped after the restart, is
		// delivered, and a replay of it is dropped.
		b.nodes = append(b.nodes, fresh.node)
		_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "new"))
		require.NoError(t, err)
		assert.Equal(t, []string{"new"}, fresh.queued(t))
		last := b.captured()[len(b.captured())-1]
		fresh.node.Receive(last)
		assert.Empty(t, fresh.queued(t))
		assert.Equal(t, uint64(6), fresh.node.Stats().Dropped.Replayed)
	})
}

// With keys, a message from a clock too far ahead is stale too, and an
// envelope without a timestamp is refused; without keys stamps are not
// checked.
func TestNodeFreshness(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sign := func(data string) cluster.Message {
			return cluster.Message{Data: []byte(data), Sig: refSignature(key, scope, []byte(data))}
		}
		now := time.Now().UnixMilli()
		ahead := fmt.Sprintf(`{"v":1,"o":"p","n":1,"t":%d,"k":"tools"}`, now+cluster.DefaultFreshness.Milliseconds()+1)
		unstamped := `{"v":1,"o":"q","n":1,"k":"tools"}`
		edge := fmt.Sprintf(`{"v":1,"o":"r","n":1,"t":%d,"k":"tools"}`, now+cluster.DefaultFreshness.Milliseconds())

		m := (&broker{}).join(t, cluster.Options{AuthKeys: [][]byte{key}}, toolsFilter)
		for _, d := range []string{ahead, unstamped, edge} {
			m.node.Receive(sign(d))
		}
		assert.Equal(t, []string{"stale", "stale"}, m.rec.dropReasons())
		assert.Len(t, m.queued(t), 1, "a stamp at the edge of the window is accepted")

		open := (&broker{}).join(t, cluster.Options{}, toolsFilter)
		for _, d := range []string{ahead, unstamped} {
			open.node.Receive(cluster.Message{Data: []byte(d)})
		}
		assert.Len(t, open.queued(t), 2)
	})
}

// Lost messages (a gap in an origin's numbers) resynchronise the
// listeners after the event that revealed them, at most once per
// ResyncInterval; a reconnect resynchronises at once and folds a pending
// loss resync into it.
func TestNodeLossResync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &broker{}
		a := b.join(t, cluster.Options{}, toolsFilter)
		c := b.join(t, cluster.Options{Resync: []listen.Kind{listen.KindToolsListChanged}}, toolsFilter)
		publish := func(id string) {
			_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), id))
			require.NoError(t, err)
		}
		publish("1")
		b.down = true
		publish("lost")
		b.down = false
		publish("3")
		assert.Equal(t, []string{"1", "3", ""}, c.queued(t), "the resync follows the event that revealed the gap")
		b.down = true
		publish("lost")
		b.down = false
		publish("5")
		assert.Equal(t, []string{"5"}, c.queued(t), "within the interval the resync waits")
		time.Sleep(cluster.DefaultResyncInterval)
		synctest.Wait()
		assert.Equal(t, []string{""}, c.queued(t))

		b.down = true
		publish("lost")
		b.down = false
		publish("7") // a loss resync is due at the end of the interval
		c.node.Reconnected()
		time.Sleep(2 * cluster.DefaultResyncInterval)
		synctest.Wait()
		assert.Equal(t, []string{"7", ""}, c.queued(t), "the reconnect resync covers the pending one")
		assert.Equal(t, []string{"loss", "loss", "reconnect"},
			c.rec.resyncReasons())
		assert.Equal(t, uint64(3), c.node.Stats().Gaps)

		// After the reconnect, c's sync message tells a of c's next number.
		assert.Equal(t, uint64(1), c.node.Stats().Syncs)
	})
}

// Close leaves the hub: later publications stay local.
func TestNodeClose(t *testing.T) {
	b := &broker{}
	a := b.join(t, cluster.Options{}, toolsFilter)
	c := b.join(t, cluster.Options{}, toolsFilter)
	a.node.Close()
	a.node.Close()
	_, err := a.hub.Publish(listen.ToolsListChanged())
	require.NoError(t, err)
	assert.Len(t, a.queued(t), 1)
	assert.Empty(t, c.queued(t))
	assert.ErrorIs(t, a.node.Resync(), cluster.ErrClosed)
	require.NoError(t, c.node.Resync())
	assert.Len(t, c.queued(t), 1, "the default resync kinds, of which the listener takes tools")

	_, err = cluster.NewNode(c.hub, cluster.Transport{Scope: scope, Send: b.send}, cluster.Options{})
	assert.ErrorIs(t, err, hub.ErrRelayJoined)
	_, err = cluster.NewNode(a.hub, cluster.Transport{Send: b.send}, cluster.Options{})
	assert.ErrorIs(t, err, cluster.ErrInvalidOptions)
	_, err = cluster.NewNode(a.hub, cluster.Transport{Scope: scope, Send: b.send}, cluster.Options{Freshness: -1})
	assert.ErrorIs(t, err, cluster.ErrInvalidOptions)
}

// refSignature computes a signature as the package documentation defines
// it, with crypto/hmac alone.
func refSignature(key []byte, scope string, data []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(scope + "\n"))
	mac.Write(data)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil))
}

// A scoped event crosses the broker with its scope: on every instance it
// reaches the listeners of that scope only; an unscoped one reaches all.
func TestNodeScopedEvents(t *testing.T) {
	b := &broker{}
	a := b.join(t, cluster.Options{}, toolsFilter)
	c := b.join(t, cluster.Options{}, toolsFilter)
	open := func(m *member, scopes ...string) listen.Stream {
		_, s, err := m.hub.Open(context.Background(), &listen.Request{ID: jsonrpc.StringID("s"), Scopes: scopes}, toolsFilter)
		require.NoError(t, err)
		t.Cleanup(func() { s.Close(nil) })
		return s
	}
	acme, globex := open(c, "tenant:acme"), open(c, "tenant:globex")
	_, err := a.hub.Publish(tagged(listen.ToolsListChanged(), "acme-only").WithScope("tenant:acme"))
	require.NoError(t, err)
	_, err = a.hub.Publish(tagged(listen.ToolsListChanged(), "all"))
	require.NoError(t, err)
	next := func(s listen.Stream) string {
		ev, err := s.Next()
		require.NoError(t, err)
		var id string
		_ = json.Unmarshal(ev.Metadata[idKey].(json.RawMessage), &id)
		return id + "@" + ev.Scope
	}
	assert.Equal(t, "acme-only@tenant:acme", next(acme))
	assert.Equal(t, "all@", next(acme))
	assert.Equal(t, "all@", next(globex), "globex never saw acme's event")
	assert.Equal(t, []string{"all"}, c.queued(t), "an unscoped listener gets unscoped events only")
	for _, m := range b.captured() {
		if strings.Contains(string(m.Data), "acme-only") {
			assert.Contains(t, string(m.Data), `"a":"tenant:acme"`)
		}
	}
}

// Stats.DroppedBytes counts the bytes of every dropped message, those a
// bridge skipped unread (Node.Dropped) too, which OnDrop reports like the
// ones Receive drops.
func TestNodeDroppedBytes(t *testing.T) {
	b := &broker{}
	a := b.join(t, cluster.Options{AuthKeys: [][]byte{key}, MaxMessageBytes: 1024}, listen.Filter{"k": true})
	a.node.Receive(cluster.Message{Data: []byte(`{"v":1}`)})               // unauthenticated
	a.node.Receive(cluster.Message{Data: bytes.Repeat([]byte{'x'}, 2000)}) // too large
	a.node.Dropped(cluster.DropInfo{Reason: "too_large", Count: 1, Bytes: 5000})
	st := a.node.Stats()
	assert.Equal(t, cluster.Drops{Unauthenticated: 1, TooLarge: 2}, st.Dropped)
	assert.Equal(t, uint64(7+2000+5000), st.DroppedBytes)
	assert.Equal(t, []string{"unauthenticated", "too_large", "too_large"},
		a.rec.dropReasons())
	assert.Equal(t, 5000, a.rec.drops[2].Bytes)
}

// Node.Dropped counts what a bridge reports under its reason and tells
// OnDrop and the Logger; a slow consumer's drops resynchronise the
// listeners; no count, or a reason the package does not define, is
// ignored; a panicking OnDrop is recovered and counted.
func TestNodeDropped(t *testing.T) {
	b := &broker{}
	var logs bytes.Buffer
	var seen []cluster.DropInfo
	a := b.join(t, cluster.Options{
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		OnDrop: func(i cluster.DropInfo) {
			seen = append(seen, i)
			if i.Bytes == 13 {
				panic("hook")
			}
		},
		OnResync: func(i cluster.ResyncInfo) {
			seen = append(seen, cluster.DropInfo{Reason: i.Reason})
		},
	}, toolsFilter)
	a.node.Dropped(cluster.DropInfo{Reason: "slow_consumer", Count: 40})
	a.node.Dropped(cluster.DropInfo{Reason: "slow_consumer"})
	a.node.Dropped(cluster.DropInfo{Reason: "future", Count: 1})
	a.node.Dropped(cluster.DropInfo{Reason: "too_large", Count: 1, Bytes: 13})
	assert.Equal(t, []cluster.DropInfo{
		{Reason: "slow_consumer", Count: 40},
		{Reason: string("loss")},
		{Reason: "too_large", Count: 1, Bytes: 13},
	}, seen)
	assert.Equal(t, []string{""}, a.queued(t), "the slow consumer's resync")
	st := a.node.Stats()
	assert.Equal(t, cluster.Drops{SlowConsumer: 40, TooLarge: 1}, st.Dropped)
	assert.Equal(t, uint64(13), st.DroppedBytes)
	assert.Equal(t, uint64(1), st.Panics)
	assert.Contains(t, logs.String(), `msg="cluster drop" reason=slow_consumer count=40`)
}
