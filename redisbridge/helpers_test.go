package redisbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/cluster/clustertest"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/redisbridge"
	"github.com/mcplisten/listen/spec"
)

// TestMain checks for leaked goroutines. go-redis starts one redial
// goroutine per connection pool whose dial failed; it notices the pool's
// Close within a second (it sleeps between dials), after the test that
// closed it may have ended.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// failsafe bounds every wait of a test.
const failsafe = 10 * time.Second

// idKey is the _meta key tests tag their events with.
const idKey = "com.example/id"

const watched = "file:///project/config.json"

// recorder records a bridge's hooks (clustertest.Recorder).
type recorder = clustertest.Recorder

// record sets o's hooks to a new recorder's.
func record(o *cluster.Options) *recorder { return clustertest.Record(o) }

// await receives from ch until ok accepts a value, failing after failsafe.
func await[T any](t testing.TB, ch <-chan T, what string, ok func(T) bool) T {
	t.Helper()
	return clustertest.Await(t, ch, failsafe, what, ok)
}

// instance is one MCP server instance: a hub and its bridge.
type instance struct {
	name   string
	hub    *hub.Hub
	bridge *redisbridge.Bridge
	rec    *recorder
}

// join starts an instance on the Redis at url; it is closed with the test.
func join(t testing.TB, name, url string, opts redisbridge.Options) *instance {
	t.Helper()
	rec := record(&cluster.Options{})
	if opts.OnPublishOut == nil && opts.OnReceive == nil && opts.OnDrop == nil && opts.OnResync == nil && opts.OnConnection == nil {
		rec = record(&opts.Options)
	}
	h, err := hub.New(hub.Options{MaxBuffer: 4096})
	require.NoError(t, err)
	b, err := redisbridge.Connect(url, h, opts)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return &instance{name: name, hub: h, bridge: b, rec: rec}
}

// note is one event a listener received: its kind, URI and test id.
type note struct {
	kind listen.Kind
	uri  string
	id   string // "" for an untagged event (a resync hint)
}

// listener is a stream of the hub (as listen.Open opens it), read by a
// goroutine into notes.
type listener struct {
	notes chan note
}

// listen opens a listener on in's hub with filter, belonging to scopes
// (as listen.Open opens it once Options.Scopes named them); it is closed
// with the test.
func (in *instance) listen(t testing.TB, filter listen.Filter, scopes ...string) *listener {
	t.Helper()
	_, s, err := in.hub.Open(context.Background(), &listen.Request{ID: jsonrpc.StringID(in.name), Scopes: scopes}, filter)
	require.NoError(t, err)
	l := &listener{notes: make(chan note, 1<<16)}
	done := make(chan struct{})
	// Ends when the stream is closed (cleanup below waits for it).
	go func() {
		defer close(done)
		for {
			ev, err := s.Next()
			if err != nil {
				return
			}
			l.notes <- note{kind: ev.Kind, uri: ev.URI, id: idOf(ev)}
		}
	}()
	t.Cleanup(func() {
		s.Close(nil)
		<-done
	})
	return l
}

// idOf returns an event's test id: a string set locally, or the raw JSON
// string of a received event.
func idOf(ev listen.Event) string {
	switch v := ev.Metadata[idKey].(type) {
	case string:
		return v
	case json.RawMessage:
		var s string
		_ = json.Unmarshal(v, &s)
		return s
	}
	return ""
}

// next returns the listener's next event, failing after failsafe.
func (l *listener) next(t testing.TB) note {
	t.Helper()
	return await(t, l.notes, "a notification", nil)
}

// until reads events up to and including the one with test id fence.
func (l *listener) until(t testing.TB, fence string) []note {
	t.Helper()
	var got []note
	for {
		n := l.next(t)
		got = append(got, n)
		if n.id == fence {
			return got
		}
	}
}

// ids returns the test ids of notes ("" for hints).
func ids(ns []note) []string {
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.id
	}
	return out
}

func tagged(ev listen.Event, id string) listen.Event {
	return ev.WithMetadata(map[string]any{idKey: id})
}

// raw is a plain go-redis client (a peer that is no bridge); it is closed
// with the test.
func raw(t testing.TB, url string) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(url)
	require.NoError(t, err)
	o.MaxRetries = -1
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// hasAll reports whether want are all in got.
func hasAll(got []string, want ...string) bool {
	s := strings.Join(got, "\x00") + "\x00"
	for _, w := range want {
		if !strings.Contains(s, w+"\x00") {
			return false
		}
	}
	return true
}

var toolsOnly = listen.Filter{spec.KeyToolsListChanged: true}
