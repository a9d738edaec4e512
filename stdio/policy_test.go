package stdio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/stdio"
)

// The listen policy the listen.Server owns, seen over stdio: its hooks'
// panics, its admission (per key, a Quota), EndStreams and its paced drain.

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// A panicking OnOpen is recovered and logged to the listen.Server's Logger:
// the listen is acknowledged and served, the connection and the process go
// on.
func TestOnOpenPanicIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs syncBuffer
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{
			Logger: slog.New(slog.NewTextHandler(&logs, nil)),
			OnOpen: func(*listen.Subscription) { panic("a hook bug is contained") },
		}})
		st := h.openListen(`1`)
		st.Send(listen.ToolsListChanged())
		m := h.recv()
		require.Equal(t, spec.MethodToolsListChanged, m.method(), "%s", m.raw)
		require.Equal(t, `1`, m.subID())
		assert.Contains(t, logs.String(), "OnOpen panicked")
		assert.Contains(t, logs.String(), "a hook bug is contained")
		assert.Equal(t, listen.Stats{Active: 1, Opened: 1}, h.ls.Stats())

		h.send(cancelLine(`1`, "bye"))
		requireReason(t, h.closedReason(), `1`, listen.ErrCancelled)
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// quotaFunc adapts a function to listen.Quota.
type quotaFunc func(ctx context.Context, req *listen.Request) (func(), error)

func (f quotaFunc) Acquire(ctx context.Context, req *listen.Request) (func(), error) {
	return f(ctx, req)
}

// A Quota's refusal reaches the stdio client as the JSON-RPC error of its
// listen (a *jsonrpc.Error as it is, any other error as -32603 "Internal
// error"), is reported to OnRefuse, and the connection goes on; an
// admitted listen's quota is released when its stream ends.
func TestQuotaRefusalReachesTheClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const msgTenant = "Tenant subscription quota exhausted"
		released := make(chan string, 4)
		var refused []error
		quota := quotaFunc(func(_ context.Context, req *listen.Request) (func(), error) {
			switch req.ID.Raw() {
			case `"over"`:
				return nil, jsonrpc.NewError(jsonrpc.CodeInternalError, msgTenant).WithCause(listen.ErrOverQuota)
			case `"broken"`:
				return nil, errors.New("quota store unreachable")
			}
			id := req.ID.Raw()
			return func() { released <- id }, nil
		})
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{
			Quota:    quota,
			OnRefuse: func(_ *listen.Request, err error) { refused = append(refused, err) },
		}})
		h.openListen(`"in"`)

		h.send(listenLine(`"over"`, `{"toolsListChanged":true}`))
		requireError(t, h.recv(), `"over"`, jsonrpc.CodeInternalError, msgTenant)
		h.send(listenLine(`"broken"`, `{"toolsListChanged":true}`))
		requireError(t, h.recv(), `"broken"`, jsonrpc.CodeInternalError, "Internal error")
		require.Len(t, refused, 2)
		require.ErrorIs(t, refused[0], listen.ErrOverQuota)
		require.NotErrorIs(t, refused[1], listen.ErrOverQuota)
		require.Equal(t, listen.Stats{Active: 1, Opened: 1, Refused: 2}, h.ls.Stats())

		// The connection goes on; the quota is released once the stream ended.
		h.send(requestLine(`7`, "tools/list"))
		requireError(t, h.recv(), `7`, jsonrpc.CodeMethodNotFound, "Method not found: tools/list")
		require.Empty(t, released)
		h.send(cancelLine(`"in"`, "bye"))
		require.Equal(t, `"in"`, <-released)
		rest, err := h.closeInput()
		require.NoError(t, err)
		require.Empty(t, rest)
	})
}

// MaxStreamsPerKey counts every stdio listen against one key, whatever its
// connection, unless StreamKey tells them apart (here by the connection's
// principal, Options.Auth).
func TestMaxStreamsPerKeyOverStdio(t *testing.T) {
	for _, tc := range []struct {
		name      string
		key       func(*listen.Request) string
		bobRefuse bool
	}{
		{"one key for every stdio listen", nil, true},
		{"StreamKey by principal", func(req *listen.Request) string { return req.Auth.(string) }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, srv := hubServer(t, hub.Options{}, options{Listen: listen.Options{MaxStreamsPerKey: 1, StreamKey: tc.key}})
				alice, bob := connect(t, srv, "alice"), connect(t, srv, "bob")
				alice.listen(`1`, `{"toolsListChanged":true}`)
				alice.send(listenLine(`2`, `{"toolsListChanged":true}`))
				requireError(t, alice.recv(), `2`, jsonrpc.CodeInternalError, core.TooManyForKey)
				bob.send(listenLine(`1`, `{"toolsListChanged":true}`))
				if tc.bobRefuse {
					requireError(t, bob.recv(), `1`, jsonrpc.CodeInternalError, core.TooManyForKey)
				} else {
					requireAck(t, bob.recv(), `1`)
				}
			})
		})
	}
}

// listen.Server.EndStreams ends the listens of one principal over stdio:
// notifications/cancelled with the ending's reason, then the completion
// with the endReason class; another principal's listen goes on.
func TestEndStreamsOverStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ls := hubServerWith(t)
		srv, err := stdio.New(ls, stdio.Options{Auth: byContext})
		require.NoError(t, err)
		alice, bob := connect(t, srv, "alice"), connect(t, srv, "bob")
		alice.listen(`1`, `{"toolsListChanged":true}`)
		alice.listen(`2`, `{"promptsListChanged":true}`)
		bob.listen(`1`, `{"toolsListChanged":true}`)

		n := ls.EndStreams(func(auth any) bool { return auth == "alice" }, listen.ErrRevoked)
		require.Equal(t, 2, n)
		// The two teardowns may interleave; each is in order.
		got := map[string][]msg{}
		for range 4 {
			m := alice.recv()
			got[m.tag()] = append(got[m.tag()], m)
		}
		for _, id := range []string{`1`, `2`} {
			require.Len(t, got[id], 2, id)
			m := got[id][0]
			require.Equal(t, spec.MethodCancelled, m.method(), "%s", m.raw)
			var reason string
			m.param("reason", &reason)
			require.Equal(t, "Subscription ended: revoked", reason)
			requireCompletion(t, got[id][1], id)
		}

		h.ToolsListChanged()
		m := bob.recv()
		require.Equal(t, spec.MethodToolsListChanged, m.method(), "%s", m.raw)
		synctest.Wait()
		require.Equal(t, uint64(2), ls.Stats().Revoked)
	})
}

// hubServerWith returns a hub and a listen.Server serving it, for test
// capabilities.
func hubServerWith(t *testing.T) (*hub.Hub, *listen.Server) {
	t.Helper()
	h, err := hub.New(hub.Options{})
	require.NoError(t, err)
	return h, listen.NewServer(h, listen.Options{Capabilities: testCaps})
}

// Shutdown's drain is paced over listen.Options.DrainWindow on stdio too:
// reading stops at once; each listen, on every connection, gets
// notifications/cancelled then its completion at its own point of the
// window (one share of it each, in random order), and the listens not yet
// ended go on receiving notifications until then.
func TestPacedDrainOverStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window, n = 8 * time.Second, 4
		share := window / n
		h := start(t, t.Context(), nil, &options{Listen: listen.Options{DrainWindow: window}})
		h2 := h.another(t.Context())
		for i := range n {
			c := h
			if i%2 == 1 {
				c = h2
			}
			c.openListen(fmt.Sprint(i))
		}

		start := time.Now()
		shut := make(chan error, 1)
		go func() { shut <- h.srv.Shutdown(context.Background()) }()
		synctest.Wait()
		require.True(t, h.ls.Stats().Draining)

		open := map[string]*harness{`0`: h, `1`: h2, `2`: h, `3`: h2}
		lines := map[*harness]chan msg{h: h.lines, h2: h2.lines}
		for k := range n {
			// The next teardown, on whichever connection. A connection's
			// output ends once its last listen ended.
			var c *harness
			var m msg
			for c == nil {
				var ok bool
				select {
				case m, ok = <-lines[h]:
					c = h
				case m, ok = <-lines[h2]:
					c = h2
				}
				if !ok {
					lines[c], c = nil, nil
				}
			}
			elapsed := time.Since(start)
			require.Equal(t, spec.MethodCancelled, m.method(), "%s", m.raw)
			var reason string
			m.param("reason", &reason)
			require.Equal(t, stdio.ShutdownReason, reason)
			id := m.subID()
			requireCompletion(t, c.recv(), id)
			require.Same(t, open[id], c, "listen %s on its own connection", id)
			delete(open, id)
			assert.GreaterOrEqual(t, elapsed, time.Duration(k)*share, "teardown %d at %v", k, elapsed)
			assert.LessOrEqual(t, elapsed, time.Duration(k+1)*share, "teardown %d at %v", k, elapsed)

			// The listens not yet ended are still served.
			for _, st := range h.src.Streams() {
				if open[st.RequestID.Raw()] != nil {
					st.Send(listen.ToolsListChanged())
				}
			}
			for _, c := range []*harness{h, h2} {
				want, got := map[string]bool{}, map[string]bool{}
				for id, on := range open {
					if on == c {
						want[id] = true
					}
				}
				for range want {
					m := c.recv()
					require.Equal(t, spec.MethodToolsListChanged, m.method(), "%s", m.raw)
					got[m.subID()] = true
				}
				require.Equal(t, want, got)
			}
		}
		require.NoError(t, <-shut)
		require.LessOrEqual(t, time.Since(start), window)
		for _, c := range []*harness{h, h2} {
			rest, err := c.wait()
			require.ErrorIs(t, err, stdio.ErrServerClosed)
			require.Empty(t, rest)
		}
		require.Equal(t, listen.Stats{Opened: n, Closed: n, Draining: true}, h.ls.Stats())
	})
}
