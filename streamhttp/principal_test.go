package streamhttp_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// Listens bound to their principal, over every way the Handler serves a
// hub stream: the taken-over fast path (Linux), a taken-over connection on
// a goroutine of its own, inside net/http, and HTTP/2.

var servePaths = []struct {
	name       string
	portable   bool
	noTakeover bool
	h2         bool
}{
	{name: "HTTP/1.1 fast path"},
	{name: "HTTP/1.1 taken over", portable: true},
	{name: "HTTP/1.1 inside net/http", noTakeover: true},
	{name: "HTTP/2", h2: true},
}

// pathEnv serves a hub with opts on one serve path.
func pathEnv(t *testing.T, path int, hopts hub.Options, opts config) (*env, *hub.Hub) {
	t.Helper()
	p := servePaths[path]
	h, err := hub.New(hopts)
	require.NoError(t, err)
	opts.NoTakeover = p.noTakeover
	e := newEnvOn(t, h, &opts, envConfig{http2: p.h2})
	if p.portable {
		streamhttp.Portable(e.h)
	}
	if path == 0 && !streamhttp.HasFastPath(e.h) {
		t.Skip("no fast path on " + runtime.GOOS)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		_ = h.Shutdown(ctx)
		assert.NoError(t, e.h.Shutdown(ctx))
	})
	return e, h
}

// listenAs opens a listen as user (X-User) with filter, and reads its
// acknowledgement.
func (e *env) listenAs(t *testing.T, id, user, filter string) *sse {
	t.Helper()
	resp := e.do(t, http.MethodPost, listenBody(`"`+id+`"`, filter), headers("X-User", user))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := newSSE(resp)
	require.Equal(t, spec.MethodAcknowledged, s.message(t)["method"])
	return s
}

// ending reads the terminal message and returns its reason: the endReason
// of a completion, or the data.reason of a -32050 error.
func ending(t *testing.T, s *sse) string {
	t.Helper()
	m := s.message(t)
	if res, ok := m["result"].(map[string]any); ok {
		require.Equal(t, "complete", res["resultType"])
		r, _ := res["_meta"].(map[string]any)[spec.MetaEndReason].(string)
		return "completion:" + r
	}
	e := m["error"].(map[string]any)
	require.Equal(t, jsonrpc.ID{}, jsonrpc.ID{}) // the id is checked by the caller's SSE
	assert.Equal(t, fmt.Sprint(spec.CodeEnded), fmt.Sprint(e["code"]))
	return "error:" + e["data"].(map[string]any)["reason"].(string)
}

// A revoked principal's streams end with the distinguishable ending (in
// both forms), counted in Stats and given to OnClose; the other
// principals' streams go on.
func TestRevokedPrincipalsStreamsEnd(t *testing.T) {
	for i, p := range servePaths {
		for _, withError := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/error=%v", p.name, withError), func(t *testing.T) {
				var mu sync.Mutex
				revoked := map[string]bool{}
				access := &listen.Access{Check: func(_ context.Context, auth any) error {
					mu.Lock()
					defer mu.Unlock()
					if revoked[auth.(string)] {
						return listen.ErrRevoked
					}
					return nil
				}}
				e, h := pathEnv(t, i, hub.Options{}, config{
					Authenticate: byUser,
					Listen:       listen.Options{Capabilities: caps(), Access: access, EndWithError: withError},
				})
				bob := e.listenAs(t, "b", "bob", `{"toolsListChanged":true}`)
				alice := e.listenAs(t, "a", "alice", `{"toolsListChanged":true}`)
				mu.Lock()
				revoked["bob"] = true
				mu.Unlock()
				assert.Equal(t, 1, access.Recheck(t.Context(), authIs("bob")))
				want := map[bool]string{false: "completion:revoked", true: "error:revoked"}[withError]
				assert.Equal(t, want, ending(t, bob))
				bob.end(t)
				c := recv(t, e.closes, "OnClose")
				assert.ErrorIs(t, c.reason, listen.ErrRevoked)
				assert.Equal(t, uint64(1), e.h.Server().Stats().Revoked)

				h.ToolsListChanged()
				assert.Equal(t, spec.MethodToolsListChanged, alice.message(t)["method"], "alice's stream goes on")
			})
		}
	}
}

// A scheduled re-check and a lifetime bound keep the fast path's promise:
// no goroutine per idle stream (raw connections: a client of its own
// would count its goroutines).
func TestRecheckAndLifetimeKeepIdleStreamsGoroutineFree(t *testing.T) {
	const n = 50
	access := &listen.Access{Every: time.Hour, Check: func(context.Context, any) error { return nil }}
	e := newHubEnv(t, false, hub.Options{}, config{
		Listen: listen.Options{Access: access, MaxLifetime: time.Hour},
	}, 0)
	warm := e.dial(t, `"warm"`, `{"toolsListChanged":true}`, "", 0).open(t)
	e.hub.ToolsListChanged()
	warm.data(t)
	before := goleak.IgnoreCurrent()
	conns := make([]*rawListen, n)
	for i := range conns {
		conns[i] = e.dial(t, fmt.Sprintf(`"s%d"`, i), `{"toolsListChanged":true}`, "", 0).open(t)
	}
	e.hub.ToolsListChanged()
	for _, c := range append(conns, warm) {
		assert.Equal(t, spec.MethodToolsListChanged, jsonOf(t, c.data(t)).(map[string]any)["method"])
	}
	assert.Equal(t, n+1, streamhttp.FastStreams(e.h), "every stream is on the fast path")
	assert.NoError(t, goleak.Find(before), "goroutines for %d idle streams with a lifetime and a re-check schedule", n)
}

// With Access.Deliver, an update for a URI the principal may no longer
// read is not delivered once its access was re-checked; the others are.
func TestDeliveryCheckDropsWhatThePrincipalMayNotRead(t *testing.T) {
	for i, p := range servePaths {
		t.Run(p.name, func(t *testing.T) {
			var mu sync.Mutex
			denied := map[string]bool{}
			access := &listen.Access{Deliver: true}
			e, h := pathEnv(t, i, hub.Options{}, config{
				Authenticate: byUser,
				Listen: listen.Options{Capabilities: caps(), Access: access,
					CanRead: func(_ context.Context, req *listen.Request, uri string) bool {
						mu.Lock()
						defer mu.Unlock()
						return !denied[req.Auth.(string)+" "+uri]
					}},
			})
			s := e.listenAs(t, "d", "dora", `{"toolsListChanged":true,"resourceSubscriptions":["file:///a","file:///b"]}`)
			assert.Zero(t, streamhttp.FastStreams(e.h), "a stream whose updates ask CanRead is not a fast stream")
			_, _ = h.ResourceUpdated("file:///a")
			assert.Equal(t, "file:///a", s.message(t)["params"].(map[string]any)["uri"])

			mu.Lock()
			denied["dora file:///a"] = true
			mu.Unlock()
			access.Recheck(t.Context(), authIs("dora"))
			_, _ = h.ResourceUpdated("file:///a")
			_, _ = h.ResourceUpdated("file:///b")
			h.ToolsListChanged()
			assert.Equal(t, "file:///b", s.message(t)["params"].(map[string]any)["uri"], "file:///a is no longer delivered")
			assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
		})
	}
}

// A stream with MaxLifetime ends with the completion, reason lifetime, no
// earlier than MaxLifetime-LifetimeJitter.
func TestLifetimeEndsTheStreamWithTheCompletion(t *testing.T) {
	const lifetime, jitter = 300 * time.Millisecond, 100 * time.Millisecond
	for i, p := range servePaths {
		t.Run(p.name, func(t *testing.T) {
			e, _ := pathEnv(t, i, hub.Options{}, config{
				Listen: listen.Options{Capabilities: caps(), MaxLifetime: lifetime, LifetimeJitter: jitter},
			})
			start := time.Now()
			s := e.listenAs(t, "l", "", `{"toolsListChanged":true}`)
			assert.Equal(t, "completion:lifetime", ending(t, s))
			assert.GreaterOrEqual(t, time.Since(start), lifetime-jitter)
			s.end(t)
			assert.ErrorIs(t, recv(t, e.closes, "OnClose").reason, listen.ErrLifetime)
			assert.Equal(t, uint64(1), e.h.Server().Stats().Lifetime)
		})
	}
}

// Scoped publications reach only their tenant's streams.
func TestScopedPublicationsReachTheirTenantOverHTTP(t *testing.T) {
	for i, p := range servePaths {
		t.Run(p.name, func(t *testing.T) {
			e, h := pathEnv(t, i, hub.Options{}, config{
				Authenticate: byUser,
				Listen: listen.Options{Capabilities: caps(),
					Scopes: func(req *listen.Request) []string { return []string{"tenant:" + req.Auth.(string)} }},
			})
			a := e.listenAs(t, "a", "acme", `{"toolsListChanged":true,"promptsListChanged":true}`)
			g := e.listenAs(t, "g", "globex", `{"toolsListChanged":true,"promptsListChanged":true}`)
			r, _ := h.Publish(listen.ToolsListChanged().WithScope("tenant:acme"))
			assert.Equal(t, 1, r.Matched)
			h.PromptsListChanged() // unscoped: both
			assert.Equal(t, spec.MethodToolsListChanged, a.message(t)["method"])
			assert.Equal(t, spec.MethodPromptsListChanged, a.message(t)["method"])
			assert.Equal(t, spec.MethodPromptsListChanged, g.message(t)["method"], "globex never saw acme's tools change")
		})
	}
}

// A hub with EndListener ends a stream whose client stopped reading: once
// it reads again it gets what was written, then the fell-behind ending.
func TestFellBehindEndsTheStreamOverHTTP(t *testing.T) {
	for i, p := range servePaths {
		t.Run(p.name, func(t *testing.T) {
			overflowed := make(chan struct{}, 1)
			e, h := pathEnv(t, i, hub.Options{MaxBuffer: 4, Overflow: hub.EndListener, OnOverflow: endedHook(overflowed)},
				config{WriteTimeout: failsafe, Listen: listen.Options{Capabilities: caps()}})
			s := e.listenAs(t, "slow", "", `{"toolsListChanged":true}`)
			// Publish until the hub ends the listener: the client reads
			// nothing meanwhile, so the socket buffers fill up, then the
			// listener's queue.
			big := map[string]any{"pad": string(make([]byte, 32<<10))}
			for n := 0; ; n++ {
				require.Less(t, n, 100000, "never overflowed")
				h.Publish(listen.ToolsListChanged().WithParams(big))
				select {
				case <-overflowed:
				default:
					continue
				}
				break
			}
			for {
				m := s.message(t)
				if m["method"] == spec.MethodToolsListChanged {
					continue
				}
				assert.Equal(t, "fell_behind", m["result"].(map[string]any)["_meta"].(map[string]any)[spec.MetaEndReason])
				break
			}
			assert.ErrorIs(t, recv(t, e.closes, "OnClose").reason, listen.ErrFellBehind)
			assert.Equal(t, uint64(1), e.h.Server().Stats().FellBehind)
		})
	}
}

// endedHook signals when a publication ended a listener.
func endedHook(ch chan struct{}) func(hub.OverflowInfo) {
	return func(i hub.OverflowInfo) {
		if i.Ended > 0 {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
}

// The hub reports the first listen on a URI and the last one leaving,
// whatever the path: a client that disconnects detaches its URIs.
func TestAttachDetachOverHTTP(t *testing.T) {
	for i, p := range servePaths {
		t.Run(p.name, func(t *testing.T) {
			events := make(chan string, 16)
			e, _ := pathEnv(t, i, hub.Options{
				OnAttach: func(w hub.Watch) { events <- "+" + w.URI },
				OnDetach: func(w hub.Watch) { events <- "-" + w.URI },
			}, config{Listen: listen.Options{Capabilities: caps()}})
			s := e.listenAs(t, "w", "", `{"resourceSubscriptions":["file:///a"]}`)
			assert.Equal(t, "+file:///a", recv(t, events, "attach"))
			s2 := e.listenAs(t, "w2", "", `{"resourceSubscriptions":["file:///a"]}`)
			s2.resp.Body.Close()
			recv(t, e.closes, "OnClose")
			select {
			case ev := <-events:
				t.Fatalf("the URI is still watched: %s", ev)
			default:
			}
			s.resp.Body.Close() // the client disconnects
			assert.Equal(t, "-file:///a", recv(t, events, "detach"))
		})
	}
}

// With Listen.Disabled every listen gets 404 and -32601, and the Handler's
// Front still routes every other request.
func TestDisabledListenOverHTTP(t *testing.T) {
	other := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	e := newEnvOn(t, listenSourceNeverOpened{t}, &config{Listen: listen.Options{Capabilities: caps(), Disabled: true}},
		envConfig{wrap: func(h http.Handler) http.Handler { return streamhttp.Front(h, other) }})
	resp := e.do(t, http.MethodPost, listenBody(`1`, `{"toolsListChanged":true}`), listenHeaders())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	b := readError(t, resp)
	assert.Equal(t, jsonrpc.CodeMethodNotFound, b.Error.Code)
	assert.Equal(t, core.ListenDisabled, b.Error.Message)
	hdr := listenHeaders()
	hdr.Set("Mcp-Method", "tools/list")
	resp = e.do(t, http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, hdr)
	assert.Equal(t, http.StatusTeapot, resp.StatusCode)
}

type listenSourceNeverOpened struct{ t *testing.T }

func (s listenSourceNeverOpened) Open(context.Context, *listen.Request, listen.Filter) (listen.Filter, listen.Stream, error) {
	s.t.Error("the source was opened")
	return nil, nil, nil
}

// BenchmarkDeliveryCheck publishes one resource update to N open hub
// streams over loopback HTTP/1.1 and waits until every client has read it,
// without a delivery check (on the fast path, and on the portable path),
// and with Access.Deliver (CanRead at delivery, cached: such streams are
// served on the portable path). The clients run in the same process:
// compare the rows with each other.
//
//	go test -run '^$' -bench DeliveryCheck -benchmem -count 5 ./streamhttp
func BenchmarkDeliveryCheck(b *testing.B) {
	const n = 1000
	for _, v := range []struct {
		name     string
		portable bool
		check    bool
	}{{"no-check/fast", false, false}, {"no-check/portable", true, false}, {"check/portable", true, true}} {
		b.Run(v.name, func(b *testing.B) {
			lo := listen.Options{}
			if v.check {
				lo.Access = &listen.Access{Deliver: true}
				lo.CanRead = func(context.Context, *listen.Request, string) bool { return true }
			}
			e := newHubEnv(b, v.portable, hub.Options{}, config{MaxStreams: n + 16, KeepAlive: failsafe, Listen: lo}, 0)
			var got atomic.Int64
			var wg sync.WaitGroup
			conns := make([]*rawListen, n)
			for i := range conns {
				c := e.dial(b, fmt.Sprintf(`"s%d"`, i), `{"resourceSubscriptions":["file:///a"]}`, "", 0).open(b)
				conns[i] = c
				wg.Go(func() {
					for {
						line, err := c.br.ReadSlice('\n')
						if err != nil {
							return
						}
						if bytes.Contains(line, []byte("resources/updated")) {
							got.Add(1)
						}
					}
				})
			}
			b.Cleanup(func() {
				for _, c := range conns {
					c.conn.Close()
				}
				wg.Wait()
			})
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				want := int64(n) * int64(i+1)
				_, _ = e.hub.ResourceUpdated("file:///a")
				for got.Load() < want {
					runtime.Gosched()
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/notification")
		})
	}
}

// authIs matches the principals whose Auth is v (listen.Access.Recheck).
func authIs(v any) func(any) bool { return func(a any) bool { return a == v } }
