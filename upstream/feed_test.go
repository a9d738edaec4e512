package upstream_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/testkit"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
	"github.com/mcplisten/listen/upstream"
)

// feedAck is one acknowledgement an upstream listen of a Feed got.
type feedAck struct {
	name      string
	resources bool
	ack       upstream.Ack
}

// gateway is a Feed, its hub and the gateway's listen endpoint.
type gateway struct {
	feed *upstream.Feed
	hub  *hub.Hub
	URL  string
	acks chan feedAck
}

func newGateway(t *testing.T, ups ...upstream.Upstream) *gateway {
	t.Helper()
	acks := make(chan feedAck, 1000)
	feed, err := upstream.NewFeed(upstream.FeedOptions{
		Upstreams: ups,
		Listener:  upstream.ListenerOptions{MinBackoff: 20 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, RelistInterval: 50 * time.Millisecond},
		OnAck:     func(name string, resources bool, a upstream.Ack) { acks <- feedAck{name, resources, a} },
	})
	require.NoError(t, err)
	h, err := hub.New(hub.Options{OnAttach: feed.Attach, OnDetach: feed.Detach})
	require.NoError(t, err)
	require.NoError(t, feed.Start(h))
	handler, err := streamhttp.New(listen.NewServer(h, listen.Options{CapabilitiesFor: feed.Capabilities}), streamhttp.Options{})
	require.NoError(t, err)
	ts := httptest.NewServer(handler)
	t.Cleanup(func() {
		feed.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = handler.Shutdown(ctx)
		ts.Close()
	})
	return &gateway{feed: feed, hub: h, URL: ts.URL, acks: acks}
}

// waitAcks waits for the list listen's acknowledgement of each upstream
// named.
func (g *gateway) waitAcks(t *testing.T, names ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	for len(want) > 0 {
		a := testkit.Recv(t, g.acks, wait)
		if !a.resources {
			delete(want, a.name)
		}
	}
}

// listen opens a downstream listen on the gateway.
func (g *gateway) listen(t *testing.T, f listen.Filter) *upstream.Stream {
	t.Helper()
	st, err := upstream.Open(context.Background(), &upstream.HTTP{URL: g.URL}, f, upstream.OpenOptions{})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return st
}

// upTo reads st's notifications up to the sentinel's update, and returns
// them as "method uri" strings.
func upTo(t *testing.T, st *upstream.Stream) []string {
	t.Helper()
	var got []string
	for {
		n, err := st.Next()
		require.NoError(t, err)
		if n.URI == sentinel {
			return got
		}
		got = append(got, strings.TrimSpace(n.Method+" "+n.URI))
	}
}

// sentinel is a URI of no upstream's: the tests publish it into the
// gateway's hub to mark the end of what they expect.
const sentinel = "gw://sentinel"

func withSentinel(f listen.Filter) listen.Filter {
	uris, _ := f[spec.KeyResourceSubscriptions].([]any)
	f[spec.KeyResourceSubscriptions] = append(uris, sentinel)
	return f
}

func uris(us ...string) []any {
	out := make([]any, len(us))
	for i, u := range us {
		out[i] = u
	}
	return out
}

// Two upstreams with the same URI, each in its namespace: every
// downstream listen gets what it asked for, from either, and nothing else;
// the gateway's acknowledgement follows the upstreams' capabilities.
func TestFeedTwoUpstreams(t *testing.T) {
	a := newServer(t, all, 0)
	b := newServer(t, listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true}, 0)
	g := newGateway(t,
		upstream.Upstream{Name: "a", Transport: &upstream.HTTP{URL: a.URL}, Map: upstream.SchemePrefix("a")},
		upstream.Upstream{Name: "b", Transport: &upstream.HTTP{URL: b.URL}, Map: upstream.SchemePrefix("b")},
	)
	g.waitAcks(t, "a", "b")

	tools := g.listen(t, withSentinel(listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: uris("a+file:///x", "b+file:///x")}))
	prompts := g.listen(t, withSentinel(listen.Filter{spec.KeyPromptsListChanged: true, spec.KeyResourceSubscriptions: uris("b+file:///x")}))
	assert.Equal(t, listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: uris("a+file:///x", "b+file:///x", sentinel)}, tools.Accepted())
	// Each upstream watches file:///x once its resource listen is acknowledged.
	require.Eventually(t, func() bool {
		s := g.feed.Stats()
		return s[0].Watched == 1 && s[1].Watched == 1 && s[0].Resources.Listens > 0 && s[1].Resources.Listens > 0 && s[1].Resources.Open == 1
	}, wait, 5*time.Millisecond)
	require.Eventually(t, func() bool { return a.hub.Stats().Subscriptions == 2 && b.hub.Stats().Subscriptions == 2 }, wait, 5*time.Millisecond)

	a.hub.PromptsListChanged()
	_, err := a.hub.ResourceUpdated("file:///x")
	require.NoError(t, err)
	b.hub.ToolsListChanged()
	_, err = b.hub.ResourceUpdated("file:///x")
	require.NoError(t, err)
	_, err = a.hub.ResourceUpdated("file:///y") // watched by nobody
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		s := g.feed.Stats()
		return s[0].Published+s[1].Published == 4
	}, wait, 5*time.Millisecond)
	_, err = g.hub.ResourceUpdated(sentinel)
	require.NoError(t, err)

	assert.ElementsMatch(t, []string{"notifications/resources/updated a+file:///x", "notifications/tools/list_changed", "notifications/resources/updated b+file:///x"}, upTo(t, tools))
	assert.ElementsMatch(t, []string{"notifications/prompts/list_changed", "notifications/resources/updated b+file:///x"}, upTo(t, prompts))

	caps, err := g.feed.Capabilities(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, all, caps)
}

// An upstream that can send only some kinds: the gateway in front of it
// never promises the others.
func TestFeedCapabilitiesFollowUpstreams(t *testing.T) {
	b := newServer(t, listen.Capabilities{ToolsListChanged: true}, 0)
	g := newGateway(t, upstream.Upstream{Name: "b", Transport: &upstream.HTTP{URL: b.URL}})
	g.waitAcks(t, "b")
	st := g.listen(t, listen.Filter{spec.KeyToolsListChanged: true, spec.KeyPromptsListChanged: true})
	assert.Equal(t, listen.Filter{spec.KeyToolsListChanged: true}, st.Accepted())

	configured := listen.Capabilities{PromptsListChanged: true}
	g2 := newGateway(t, upstream.Upstream{Name: "c", Transport: &upstream.HTTP{URL: b.URL}, Capabilities: &configured})
	caps, err := g2.feed.Capabilities(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, configured, caps, "configured capabilities are known before any acknowledgement")
}

// After a gap, each downstream listen gets a hint of what it listens to
// from that upstream, and nothing else.
func TestFeedHintsAfterGap(t *testing.T) {
	a := newServer(t, all, 0)
	b := newServer(t, all, 0)
	p := testkit.NewProxy(t, strings.TrimPrefix(a.URL, "http://"))
	g := newGateway(t,
		upstream.Upstream{Name: "a", Transport: &upstream.HTTP{URL: "http://" + p.Addr()}, Map: upstream.SchemePrefix("a")},
		upstream.Upstream{Name: "b", Transport: &upstream.HTTP{URL: b.URL}, Map: upstream.SchemePrefix("b")},
	)
	g.waitAcks(t, "a", "b")
	d1 := g.listen(t, withSentinel(listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: uris("a+file:///x", "b+file:///x")}))
	d2 := g.listen(t, withSentinel(listen.Filter{spec.KeyPromptsListChanged: true}))
	d3 := g.listen(t, withSentinel(listen.Filter{spec.KeyResourceSubscriptions: uris("b+file:///y")}))
	for {
		a := testkit.Recv(t, g.acks, wait)
		if a.name == "a" && a.resources {
			break
		}
	}

	p.Cut()
	p.Restore()
	gaps := map[bool]bool{}
	for len(gaps) < 2 {
		x := testkit.Recv(t, g.acks, wait)
		if x.name == "a" && x.ack.Gap != nil {
			gaps[x.resources] = true
		}
	}
	_, err := g.hub.ResourceUpdated(sentinel)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"notifications/tools/list_changed", "notifications/resources/updated a+file:///x"}, upTo(t, d1))
	assert.ElementsMatch(t, []string{"notifications/prompts/list_changed"}, upTo(t, d2))
	assert.Empty(t, upTo(t, d3))
	s := g.feed.Stats()
	assert.Equal(t, uint64(4), s[0].Hints, "tools, prompts, resources list changes and one URI")
	assert.Zero(t, s[1].Hints)
}

// Upstream watches follow the downstream listens: one upstream URI per
// watched gateway URI, however many listens watch it, released when the
// last leaves; a burst of opens is coalesced into few re-listens.
func TestFeedWatchesFollowListens(t *testing.T) {
	a := newServer(t, all, 0)
	g := newGateway(t, upstream.Upstream{Name: "a", Transport: &upstream.HTTP{URL: a.URL}})
	g.waitAcks(t, "a")
	st := func() upstream.UpstreamStats { return g.feed.Stats()[0] }

	var streams []*upstream.Stream
	const n = 50
	for i := range n {
		streams = append(streams, g.listen(t, listen.Filter{spec.KeyResourceSubscriptions: uris(fmt.Sprintf("file:///%d", i%10), "file:///shared")}))
	}
	require.Eventually(t, func() bool { return st().Watched == 11 }, wait, 5*time.Millisecond)
	require.Eventually(t, func() bool { return a.hub.Stats().Subscriptions == 2 }, wait, 5*time.Millisecond, "one list listen, one resource listen")
	assert.Less(t, st().Resources.Relistens, uint64(n/2), "the opens were coalesced")

	for _, s := range streams[:n-1] {
		s.Close()
	}
	require.Eventually(t, func() bool { return st().Watched == 2 }, wait, 5*time.Millisecond, "file:///9 and file:///shared remain")
	streams[n-1].Close()
	require.Eventually(t, func() bool { return st().Watched == 0 && st().Resources.Open == 0 && a.hub.Stats().Subscriptions == 1 }, wait, 5*time.Millisecond,
		"the last listen gone, the resource listen is released")
}

// An upstream listen names at most spec.MaxResourceSubscriptions URIs: the
// rest are counted as unwatched, and watched once room is made.
func TestFeedURILimit(t *testing.T) {
	a := newServer(t, all, 0)
	feed, err := upstream.NewFeed(upstream.FeedOptions{Upstreams: []upstream.Upstream{{Name: "a", Transport: &upstream.HTTP{URL: a.URL}}}})
	require.NoError(t, err)
	defer feed.Close()
	for i := range spec.MaxResourceSubscriptions + 1 {
		feed.Attach(hub.Watch{URI: fmt.Sprintf("file:///%04d", i)})
	}
	h, err := hub.New(hub.Options{OnAttach: feed.Attach, OnDetach: feed.Detach})
	require.NoError(t, err)
	require.NoError(t, feed.Start(h))
	require.Eventually(t, func() bool {
		s := feed.Stats()[0]
		return s.Resources.Listens == 1 && s.Watched == spec.MaxResourceSubscriptions && s.Unwatched == 1
	}, wait, 5*time.Millisecond)
	feed.Detach(hub.Watch{URI: "file:///0000"})
	require.Eventually(t, func() bool {
		s := feed.Stats()[0]
		return s.Resources.Relistens == 1 && s.Watched == spec.MaxResourceSubscriptions && s.Unwatched == 0
	}, wait, 5*time.Millisecond)
}

// A callback that panics takes nothing down: the notifications keep
// coming.
func TestListenerCallbackPanics(t *testing.T) {
	s := newServer(t, all, 0)
	got := make(chan struct{}, 10)
	l := upstream.NewListener(&upstream.HTTP{URL: s.URL}, upstream.ListenerConfig{
		Filter: listen.Filter{spec.KeyToolsListChanged: true},
		OnAck:  func(upstream.Ack) { panic("a broken callback") },
		OnNotification: func(upstream.Notification) {
			got <- struct{}{}
			panic("a broken callback")
		},
	})
	defer l.Close()
	require.Eventually(t, func() bool { return l.Stats().Listens == 1 }, wait, 5*time.Millisecond)
	s.hub.ToolsListChanged()
	testkit.Recv(t, got, wait)
	s.hub.ToolsListChanged()
	testkit.Recv(t, got, wait)
}

// A stdio upstream whose process dies: the Feed dials it again, listens
// again and hints the listens watching it.
func TestFeedStdioRestart(t *testing.T) {
	s := newStdioServer(t)
	tr := &upstream.Stdio{Dial: s.dial}
	defer tr.Close()
	g := newGateway(t, upstream.Upstream{Name: "s", Transport: tr, Map: upstream.SchemePrefix("s")})
	g.waitAcks(t, "s")
	d := g.listen(t, withSentinel(listen.Filter{spec.KeyPromptsListChanged: true, spec.KeyResourceSubscriptions: uris("s+file:///a")}))
	for {
		if a := testkit.Recv(t, g.acks, wait); a.resources {
			break
		}
	}
	_, err := s.hub.ResourceUpdated("file:///a")
	require.NoError(t, err)
	n, err := d.Next()
	require.NoError(t, err)
	assert.Equal(t, "s+file:///a", n.URI)

	s.kill()
	gaps := map[bool]bool{}
	for len(gaps) < 2 {
		if a := testkit.Recv(t, g.acks, wait); a.ack.Gap != nil {
			gaps[a.resources] = true
		}
	}
	_, err = g.hub.ResourceUpdated(sentinel)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"notifications/prompts/list_changed", "notifications/resources/updated s+file:///a"}, upTo(t, d))
	assert.Equal(t, 2, s.dials)
}
