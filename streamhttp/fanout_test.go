package streamhttp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// hubPaths are the ways a hub stream is served over HTTP/1.1: on the
// Handler's fast path (Linux: no goroutine per idle stream) and on the
// portable one (a goroutine per taken-over stream), which is what other
// systems get. Every test below runs on both.
var hubPaths = []struct {
	name     string
	portable bool
}{
	{name: "fast"},
	{name: "portable", portable: true},
}

// hubEnv is a Handler serving a hub.Hub on a loopback HTTP/1.1 server,
// reached by raw connections.
type hubEnv struct {
	hub    *hub.Hub
	h      *streamhttp.Handler
	ts     *httptest.Server
	closes chan closed
	// hubCloses counts the hub's stream closes (its OnClose hook).
	hubCloses atomic.Int32
}

func newHubEnv(t testing.TB, portable bool, hopts hub.Options, opts config, sendBuffer int) *hubEnv {
	t.Helper()
	e := &hubEnv{closes: make(chan closed, 4096)}
	hopts.OnClose = func(hub.CloseInfo) { e.hubCloses.Add(1) }
	var err error
	e.hub, err = hub.New(hopts)
	require.NoError(t, err)
	opts.Listen.Capabilities = caps()
	userClose := opts.OnClose
	opts.OnClose = func(sub *listen.Subscription, reason error) {
		if userClose != nil {
			userClose(sub, reason)
		}
		e.closes <- closed{sub.ID().String(), reason}
	}
	e.h = newHandler(t, e.hub, opts)
	if portable {
		streamhttp.Portable(e.h)
	} else if !streamhttp.HasFastPath(e.h) {
		t.Skip("no fast path on " + runtime.GOOS)
	}
	e.ts = httptest.NewUnstartedServer(e.h)
	if sendBuffer > 0 {
		e.ts.Listener = &bufListener{Listener: e.ts.Listener, send: sendBuffer}
	}
	e.ts.Start()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), failsafe)
		defer cancel()
		assert.NoError(t, e.h.Shutdown(ctx))
		e.ts.Close()
	})
	return e
}

// rawListen is a listen on a raw connection.
type rawListen struct {
	conn net.Conn
	br   *bufio.Reader
	resp *http.Response
	s    *sse
}

// dial opens a listen with id (a JSON token) and filter on a new raw
// connection, with extra bytes sent right after the request, and reads the
// response head. rcvBuf, if positive, is the connection's receive buffer.
func (e *hubEnv) dial(t testing.TB, id, filter, extra string, rcvBuf int) *rawListen {
	t.Helper()
	conn, err := net.Dial("tcp", e.ts.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	if rcvBuf > 0 {
		require.NoError(t, conn.(*net.TCPConn).SetReadBuffer(rcvBuf))
	}
	body := listenBody(id, filter)
	_, err = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"+
		"Mcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s%s",
		e.ts.Listener.Addr(), len(body), body, extra)
	require.NoError(t, err)
	return &rawListen{conn: conn}
}

// open reads the response head and the acknowledgement.
func (c *rawListen) open(t testing.TB) *rawListen {
	t.Helper()
	c.br = bufio.NewReader(c.conn)
	resp, err := http.ReadResponse(c.br, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	c.resp = resp
	c.s = newSSE(resp)
	assert.Equal(t, spec.MethodAcknowledged, c.s.message(t)["method"])
	return c
}

// data reads the next message's raw data, skipping comments.
func (c *rawListen) data(t testing.TB) string {
	t.Helper()
	return c.s.event(t).Data
}

// notification is the exact wire form of a list change for subscription id.
func notification(method, id string) string {
	return `{"jsonrpc":"2.0","method":"` + method + `","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":` + id + `}}}`
}

// Every stream gets exactly the notifications its filter selects, in
// order, in the core's exact wire form, then its completion when the hub
// shuts down; the fast path serves them all (and none on the portable one).
func TestHubStreamsDeliver(t *testing.T) {
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{}, config{}, 0)
			tools := e.dial(t, `"tools"`, `{"toolsListChanged":true}`, "", 0).open(t)
			res := e.dial(t, `7`, `{"resourceSubscriptions":["file:///a"],"promptsListChanged":true}`, "", 0).open(t)
			if p.portable {
				assert.Zero(t, streamhttp.FastStreams(e.h))
			} else {
				assert.Equal(t, 2, streamhttp.FastStreams(e.h))
			}
			for range 3 {
				e.hub.ToolsListChanged()
				e.hub.PromptsListChanged()
				_, err := e.hub.ResourceUpdated("file:///a")
				require.NoError(t, err)
				_, err = e.hub.ResourceUpdated("file:///b")
				require.NoError(t, err)
			}
			for range 3 {
				assert.Equal(t, notification(spec.MethodToolsListChanged, `"tools"`), tools.data(t))
				assert.Equal(t, notification(spec.MethodPromptsListChanged, `7`), res.data(t))
				assert.Equal(t, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":7},"uri":"file:///a"}}`, res.data(t))
			}
			require.NoError(t, e.hub.Shutdown(context.Background()))
			for _, c := range []*rawListen{tools, res} {
				assert.Contains(t, c.data(t), `"resultType":"complete"`)
				c.s.end(t)
			}
			for range 2 {
				assert.Equal(t, listen.ErrComplete, recv(t, e.closes, "OnClose").reason)
			}
			assert.EqualValues(t, 2, e.hubCloses.Load(), "each source closed once")
			assert.Zero(t, streamhttp.FastStreams(e.h))
		})
	}
}

// An idle stream on the fast path costs no goroutine; on the portable path
// it costs two (its writer and its reader).
func TestHubStreamsIdleGoroutines(t *testing.T) {
	const n = 50
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{}, config{}, 0)
			warm := e.dial(t, `"warm"`, `{"toolsListChanged":true}`, "", 0).open(t)
			e.hub.ToolsListChanged()
			warm.data(t)
			// The goroutines that serve one open stream (on the fast path:
			// its hang-up watcher, shared by every stream).
			before := goleak.IgnoreCurrent()
			base := runtime.NumGoroutine()
			conns := make([]*rawListen, n)
			for i := range conns {
				conns[i] = e.dial(t, fmt.Sprintf(`"s%d"`, i), `{"toolsListChanged":true}`, "", 0).open(t)
			}
			e.hub.ToolsListChanged()
			for _, c := range append(conns, warm) {
				assert.Equal(t, spec.MethodToolsListChanged, jsonOf(t, c.data(t)).(map[string]any)["method"])
			}
			if p.portable {
				assert.GreaterOrEqual(t, runtime.NumGoroutine()-base, 2*n-5, "two per stream")
				return
			}
			// Every stream has been written to and is idle: no goroutine
			// is left but those that were there before (goleak waits for
			// the writer loops that just ran dry, and for net/http's
			// connection goroutines after the takeover, to end).
			assert.NoError(t, goleak.Find(before), "goroutines for %d more idle streams", n)
		})
	}
}

// An idle stream gets keep-alives, each reported to OnKeepAlive.
func TestHubStreamsKeepAlive(t *testing.T) {
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			kept := make(chan string, 64)
			e := newHubEnv(t, p.portable, hub.Options{}, config{
				KeepAlive:   20 * time.Millisecond,
				OnKeepAlive: func(sub *listen.Subscription) { kept <- sub.ID().Raw() },
			}, 0)
			c := e.dial(t, `"k"`, `{"toolsListChanged":true}`, "", 0).open(t)
			for range 3 {
				f, err := c.s.frame()
				require.NoError(t, err)
				assert.True(t, f.IsComment)
				assert.Equal(t, "keep-alive", f.Comment)
				assert.Equal(t, `"k"`, recv(t, kept, "OnKeepAlive"))
			}
			e.hub.ToolsListChanged()
			assert.Equal(t, notification(spec.MethodToolsListChanged, `"k"`), c.data(t))
		})
	}
}

// A client that hangs up is noticed: its stream ends as Disconnected and
// its source is closed exactly once; the others go on.
func TestHubStreamsHangUp(t *testing.T) {
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{}, config{}, 0)
			stay := e.dial(t, `"stay"`, `{"toolsListChanged":true}`, "", 0).open(t)
			gone := e.dial(t, `"gone"`, `{"toolsListChanged":true}`, "", 0).open(t)
			require.NoError(t, gone.conn.Close())
			c := recv(t, e.closes, "OnClose")
			assert.Equal(t, "gone", c.id)
			assert.ErrorIs(t, c.reason, listen.ErrDisconnected)
			assert.EqualValues(t, 1, e.hubCloses.Load())
			assert.Equal(t, listen.Stats{Active: 1, Opened: 2, Closed: 1}, e.h.Server().Stats())
			e.hub.ToolsListChanged()
			assert.Equal(t, notification(spec.MethodToolsListChanged, `"stay"`), stay.data(t))
		})
	}
}

// Bytes a client sends after its listen request end the stream at once, as
// Disconnected with ErrUnexpectedBytes, whether they come with the request
// or later; the server reads no more of them and closes the connection
// (it used to read them one byte per system call for as long as they
// came).
func TestTrailingBytesEndTheStream(t *testing.T) {
	paths := append(hubPaths[:len(hubPaths):len(hubPaths)], struct {
		name     string
		portable bool
	}{name: "blocking source", portable: true})
	for _, p := range paths {
		for _, when := range []string{"with the request", "after the acknowledgement"} {
			t.Run(p.name+"/"+when, func(t *testing.T) {
				e := newHubEnv(t, p.portable, hub.Options{}, config{}, 0)
				if p.name == "blocking source" {
					// A Source whose streams block in Next.
					src := listentest.NewSource()
					e.h = newHandler(t, src, config{
						Listen:  listen.Options{Capabilities: caps()},
						OnClose: func(sub *listen.Subscription, reason error) { e.closes <- closed{sub.ID().String(), reason} },
					})
					e.ts.Config.Handler = e.h
				}
				stay := e.dial(t, `"stay"`, `{"toolsListChanged":true}`, "", 0).open(t)
				var c *rawListen
				if when == "with the request" {
					c = e.dial(t, `"t"`, `{"toolsListChanged":true}`, "GET / HTTP/1.1\r\n\r\n", 0)
				} else {
					c = e.dial(t, `"t"`, `{"toolsListChanged":true}`, "", 0).open(t)
					_, err := c.conn.Write(make([]byte, 64<<10))
					require.NoError(t, err)
				}
				got := recv(t, e.closes, "OnClose")
				assert.Equal(t, "t", got.id)
				assert.ErrorIs(t, got.reason, listen.ErrDisconnected)
				assert.ErrorIs(t, got.reason, streamhttp.ErrUnexpectedBytes)
				// The server closed the connection: the client's reads end
				// (EOF, or a reset for the bytes it never read).
				require.NoError(t, c.conn.SetReadDeadline(time.Now().Add(failsafe)))
				_, err := io.Copy(io.Discard, c.conn)
				if err != nil {
					assert.ErrorIs(t, err, syscall.ECONNRESET, "not a timeout")
				}
				assert.Equal(t, listen.Stats{Active: 1, Opened: 2, Closed: 1}, e.h.Server().Stats())
				_ = stay
			})
		}
	}
}

// Shutdown sends every stream its completion and waits for every end; no
// goroutine is left (goleak checks after the tests).
func TestHubStreamsShutdown(t *testing.T) {
	const n = 20
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{}, config{}, 0)
			conns := make([]*rawListen, n)
			for i := range conns {
				conns[i] = e.dial(t, fmt.Sprintf(`"s%d"`, i), `{"toolsListChanged":true}`, "", 0).open(t)
			}
			require.NoError(t, e.h.Shutdown(context.Background()))
			for _, c := range conns {
				assert.Contains(t, c.data(t), `"resultType":"complete"`)
				c.s.end(t)
			}
			for range n {
				assert.Equal(t, listen.ErrShutdown, recv(t, e.closes, "OnClose").reason)
			}
			assert.Equal(t, listen.Stats{Opened: n, Closed: n, Draining: true}, e.h.Server().Stats())
			assert.EqualValues(t, n, e.hubCloses.Load())
			assert.Zero(t, streamhttp.FastStreams(e.h))
		})
	}
}

// A stream's end follows the one order of every path: its slot is free
// and counted before OnClose runs, and its client sees the end of the
// response only after OnClose has returned.
func TestHubStreamsEndOrder(t *testing.T) {
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			var e *hubEnv
			inOnClose := make(chan listen.Stats, 1)
			release := make(chan struct{})
			e = newHubEnv(t, p.portable, hub.Options{}, config{
				OnClose: func(*listen.Subscription, error) {
					inOnClose <- e.h.Server().Stats()
					<-release
				},
			}, 0)
			c := e.dial(t, `"o"`, `{}`, "", 0).open(t)
			require.NoError(t, e.hub.Shutdown(context.Background()))
			assert.Contains(t, c.data(t), `"resultType":"complete"`)
			assert.Equal(t, listen.Stats{Opened: 1, Closed: 1}, recv(t, inOnClose, "OnClose"))
			// OnClose is blocked: the connection is still open (a read
			// waits for its deadline instead of seeing the end).
			require.NoError(t, c.conn.SetReadDeadline(time.Now().Add(50*time.Millisecond)))
			_, err := c.br.ReadByte()
			assert.ErrorIs(t, err, os.ErrDeadlineExceeded)
			close(release)
			require.NoError(t, c.conn.SetReadDeadline(time.Now().Add(failsafe)))
			_, err = c.br.ReadByte()
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, listen.ErrComplete, recv(t, e.closes, "OnClose").reason)
		})
	}
}

// A client that reads slowly is served by the slow path while the others
// are not held up: it gets every notification in order once it reads (the
// hub queues them meanwhile), then the path goes back to normal.
func TestHubStreamsSlowReader(t *testing.T) {
	const rounds = 40
	pad := strings.Repeat("x", 32<<10)
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{MaxBuffer: 2 * rounds}, config{KeepAlive: time.Hour}, 16<<10) // no keep-alive to hide a lost wake-up
			slow := e.dial(t, `"slow"`, `{"toolsListChanged":true}`, "", 16<<10).open(t)
			fast := e.dial(t, `"fast"`, `{"toolsListChanged":true}`, "", 0).open(t)
			// Three bursts: each sends the slow client's stream to the slow
			// path and, once read, back.
			for burst := range 3 {
				for i := range rounds {
					_, err := e.hub.Publish(listen.ToolsListChanged().WithParams(map[string]any{"seq": i, "burst": burst, "pad": pad}))
					require.NoError(t, err)
					assert.Contains(t, fast.data(t), fmt.Sprintf(`"seq":%d`, i), "the reading client is not held up")
				}
				for i := range rounds {
					d := slow.data(t)
					assert.Contains(t, d, fmt.Sprintf(`"burst":%d,"pad":"x`, burst))
					assert.True(t, strings.HasSuffix(d, fmt.Sprintf(`"seq":%d}}`, i)), "in order")
				}
			}
			e.hub.ToolsListChanged()
			assert.Equal(t, notification(spec.MethodToolsListChanged, `"slow"`), slow.data(t))
			assert.Equal(t, notification(spec.MethodToolsListChanged, `"fast"`), fast.data(t))
		})
	}
}

// Plain list changes, which the hub hands to a fast stream itself (no
// round through the subscription), keep their order with the events that
// take the usual way (a resource update, a list change with params), also
// while the client does not read and the stream is on its slow path; the
// client gets every one, a last one that nothing follows, and the
// completion.
func TestHubStreamsMixedEventsKeepOrder(t *testing.T) {
	const n = 2000
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{MaxBuffer: 2 * n}, config{KeepAlive: time.Hour}, 16<<10)
			c := e.dial(t, `"m"`, `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,"resourceSubscriptions":["file:///a"]}`, "", 16<<10).open(t)
			want := make([]string, 0, n)
			for i := range n {
				var ev listen.Event
				switch i % 5 {
				case 0:
					ev = listen.ToolsListChanged()
				case 1:
					ev = listen.PromptsListChanged()
				case 2:
					ev = listen.ResourceUpdated("file:///a")
				case 3:
					ev = listen.ResourcesListChanged()
				default:
					ev = listen.ToolsListChanged().WithParams(map[string]any{"seq": i})
				}
				r, err := e.hub.Publish(ev)
				require.NoError(t, err)
				require.Equal(t, 1, r.Matched)
				require.Zero(t, r.Dropped)
				switch i % 5 {
				case 0:
					want = append(want, notification(spec.MethodToolsListChanged, `"m"`))
				case 1:
					want = append(want, notification(spec.MethodPromptsListChanged, `"m"`))
				case 2:
					want = append(want, `{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"m"},"uri":"file:///a"}}`)
				case 3:
					want = append(want, notification(spec.MethodResourcesListChanged, `"m"`))
				default:
					want = append(want, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"m"},"seq":%d}}`, i))
				}
			}
			read := func() {
				t.Helper()
				for i, w := range want {
					if got := c.data(t); got != w {
						require.Equal(t, w, got, "message %d", i)
					}
				}
				want = want[:0]
			}
			read()
			if trips, _ := streamhttp.SlowPathTrips(e.h); !p.portable {
				assert.NotZero(t, trips, "the stream went to the slow path")
			}
			// Then plain list changes only, unread until the socket is
			// full. (Whether the one that fills it was taken by the
			// stream itself or handed over depends on timing: each way,
			// the order holds.)
			for range n / 2 {
				require.Zero(t, e.hub.ToolsListChanged().Dropped)
				want = append(want, notification(spec.MethodToolsListChanged, `"m"`))
			}
			read()
			// And a last one, which nothing follows.
			e.hub.PromptsListChanged()
			assert.Equal(t, notification(spec.MethodPromptsListChanged, `"m"`), c.data(t))
			require.NoError(t, e.hub.Shutdown(context.Background()))
			assert.Contains(t, c.data(t), `"resultType":"complete"`)
			assert.Equal(t, listen.ErrComplete, recv(t, e.closes, "OnClose").reason)
		})
	}
}

// A client that stops reading is cut by the write deadline (Disconnected,
// os.ErrDeadlineExceeded) and costs the others nothing meanwhile.
func TestHubStreamsStalledClient(t *testing.T) {
	const writeTimeout = 2 * time.Second
	pad := strings.Repeat("x", 64<<10)
	for _, p := range hubPaths {
		t.Run(p.name, func(t *testing.T) {
			e := newHubEnv(t, p.portable, hub.Options{}, config{WriteTimeout: writeTimeout, KeepAlive: failsafe}, 16<<10)
			stalled := e.dial(t, `"stalled"`, `{"toolsListChanged":true}`, "", 16<<10)
			readers := make([]*rawListen, 3)
			for i := range readers {
				readers[i] = e.dial(t, fmt.Sprintf(`"r%d"`, i), `{"toolsListChanged":true}`, "", 0).open(t)
			}
			var slowest time.Duration
			var c closed
			deadline := time.Now().Add(failsafe)
		rounds:
			for seq := 0; ; seq++ {
				start := time.Now()
				_, err := e.hub.Publish(listen.ToolsListChanged().WithParams(map[string]any{"seq": seq, "pad": pad}))
				require.NoError(t, err)
				for _, r := range readers {
					require.Contains(t, r.data(t), fmt.Sprintf(`"seq":%d`, seq))
				}
				slowest = max(slowest, time.Since(start))
				select {
				case c = <-e.closes:
					break rounds
				default:
					require.True(t, time.Now().Before(deadline), "the stalled client was never cut")
				}
			}
			assert.Equal(t, "stalled", c.id)
			assert.ErrorIs(t, c.reason, listen.ErrDisconnected)
			assert.ErrorIs(t, c.reason, os.ErrDeadlineExceeded, "cut by its write deadline")
			assert.Less(t, slowest, writeTimeout, "no reader waited for the stalled client")
			_ = stalled
		})
	}
}

// HTTP/2, NoTakeover and a Source whose Next blocks keep today's path:
// nothing of theirs is on the fast path.
func TestFastPathOnlyForHubStreamsTakenOver(t *testing.T) {
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		src  listen.Source
		opts config
		cfg  envConfig
	}{
		{"HTTP/2", h, config{}, envConfig{http2: true}},
		{"NoTakeover", h, config{NoTakeover: true}, envConfig{}},
		{"blocking Next", nil, config{}, envConfig{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e *env
			if tc.src != nil {
				e = newEnvOn(t, tc.src, &tc.opts, tc.cfg)
			} else {
				e = newEnv(t, nil, &tc.opts, tc.cfg)
			}
			s := e.listen(t, `"x"`, `{"toolsListChanged":true}`)
			s.message(t)
			assert.Zero(t, streamhttp.FastStreams(e.h))
			if tc.src != nil {
				h.ToolsListChanged()
			} else {
				streamOf(t, e.src, "x").Send(listen.ToolsListChanged())
			}
			assert.Equal(t, spec.MethodToolsListChanged, s.message(t)["method"])
			require.NoError(t, e.h.Shutdown(context.Background()))
			assert.Contains(t, fmt.Sprint(s.message(t)["result"]), "complete")
			s.end(t)
		})
	}
	require.NoError(t, h.Shutdown(context.Background()))
}
