package stdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
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

// Listens bound to their principal, over stdio: Options.Auth names a
// connection's principal (here from Serve's context).

type userKey struct{}

// byContext is an Options.Auth that reads the user from Serve's context.
func byContext(ctx context.Context) (any, time.Time) {
	u, _ := ctx.Value(userKey{}).(string)
	return u, time.Time{}
}

// client is one stdio connection of a Server, over pipes.
type client struct {
	t     *testing.T
	in    *io.PipeWriter
	lines chan msg
	done  chan error
}

// connect serves a connection of srv for user (Serve's context carries it).
func connect(t *testing.T, srv *stdio.Server, user string) *client {
	t.Helper()
	c := &client{t: t, lines: make(chan msg, 4096), done: make(chan error, 1)}
	inR, in := io.Pipe()
	outR, outW := io.Pipe()
	c.in = in
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
		for sc.Scan() {
			c.lines <- decode(t, sc.Bytes())
		}
		close(c.lines)
	}()
	ctx := context.WithValue(t.Context(), userKey{}, user)
	go func() {
		err := srv.Serve(ctx, inR, outW)
		outW.Close()
		inR.Close()
		c.done <- err
	}()
	t.Cleanup(func() {
		in.Close()
		<-c.done
	})
	return c
}

func (c *client) send(line string) {
	c.t.Helper()
	_, err := io.WriteString(c.in, line+"\n")
	require.NoError(c.t, err)
}

func (c *client) recv() msg {
	c.t.Helper()
	m, ok := <-c.lines
	require.True(c.t, ok, "output ended")
	return m
}

// listen opens a listen and reads its acknowledgement.
func (c *client) listen(id, filter string) {
	c.t.Helper()
	c.send(listenLine(id, filter))
	requireAck(c.t, c.recv(), id)
}

// requireTeardown reads the server's teardown of listen id: its
// notifications/cancelled with the ending's reason, then its completion
// with the endReason class.
func (c *client) requireTeardown(id, class string) {
	c.t.Helper()
	n := c.recv()
	require.Equal(c.t, spec.MethodCancelled, n.method(), "%s", n.raw)
	var reason string
	n.param("reason", &reason)
	require.Equal(c.t, "Subscription ended: "+class, reason)
	m := c.recv()
	requireCompletion(c.t, m, id)
	var res struct {
		Meta map[string]string `json:"_meta"`
	}
	_ = json.Unmarshal(m.fields["result"], &res)
	require.Equal(c.t, class, res.Meta[spec.MetaEndReason], "%s", m.raw)
}

func hubServer(t *testing.T, hopts hub.Options, opts options) (*hub.Hub, *stdio.Server) {
	t.Helper()
	h, err := hub.New(hopts)
	require.NoError(t, err)
	opts.Listen.Capabilities = testCaps
	if opts.Auth == nil {
		opts.Auth = byContext
	}
	return h, newServer(t, h, opts)
}

// A revoked principal's listen is torn down (notifications/cancelled,
// then the ending); another principal's connection goes on.
func TestRevokedPrincipalOverStdio(t *testing.T) {
	for _, withError := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			var mu sync.Mutex
			revoked := map[any]bool{}
			access := &listen.Access{Check: func(_ context.Context, auth any) error {
				mu.Lock()
				defer mu.Unlock()
				if revoked[auth] {
					return listen.ErrRevoked
				}
				return nil
			}}
			h, srv := hubServer(t, hub.Options{}, options{Listen: listen.Options{Access: access, EndWithError: withError}})
			bob, alice := connect(t, srv, "bob"), connect(t, srv, "alice")
			bob.listen(`1`, `{"toolsListChanged":true}`)
			alice.listen(`1`, `{"toolsListChanged":true}`)
			mu.Lock()
			revoked["bob"] = true
			mu.Unlock()
			assert.Equal(t, 1, access.Recheck(t.Context(), authIs("bob")))
			if !withError {
				bob.requireTeardown(`1`, "revoked")
			} else {
				require.Equal(t, spec.MethodCancelled, bob.recv().method())
				requireError(t, bob.recv(), `1`, spec.CodeEnded, "Subscription ended: access revoked")
			}
			h.ToolsListChanged()
			assert.Equal(t, spec.MethodToolsListChanged, alice.recv().method())
			synctest.Wait()
			assert.Empty(t, bob.lines)
		})
	}
}

// A credential that expires (Options.Auth's expiry) and a lifetime bound
// end their listens, each with its reason, at their time.
func TestExpiryAndLifetimeOverStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, srv := hubServer(t, hub.Options{}, options{Listen: listen.Options{MaxLifetime: time.Hour, LifetimeJitter: time.Nanosecond}, Options: stdio.Options{Auth: func(ctx context.Context) (any, time.Time) {
			if ctx.Value(userKey{}) == "expiring" {
				return "expiring", start.Add(10 * time.Minute)
			}
			return "other", time.Time{}
		}}})
		e, l := connect(t, srv, "expiring"), connect(t, srv, "other")
		e.listen(`"e"`, `{"toolsListChanged":true}`)
		l.listen(`"l"`, `{"toolsListChanged":true}`)
		e.requireTeardown(`"e"`, "expired")
		assert.Equal(t, 10*time.Minute, time.Since(start))
		l.requireTeardown(`"l"`, "lifetime")
		assert.InDelta(t, float64(time.Hour), float64(time.Since(start)), float64(time.Millisecond))
	})
}

// Access.Deliver drops an update its principal may no longer read;
// Options.Scopes keeps another tenant's events away; Disabled refuses a
// listen with -32601 and leaves the other methods alone.
func TestDeliveryScopesAndDisabledOverStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		denied := map[string]bool{}
		access := &listen.Access{Deliver: true}
		h, srv := hubServer(t, hub.Options{}, options{Listen: listen.Options{
			Access: access,
			Scopes: func(req *listen.Request) []string { return []string{"tenant:" + req.Auth.(string)} },
			CanRead: func(_ context.Context, req *listen.Request, uri string) bool {
				mu.Lock()
				defer mu.Unlock()
				return !denied[uri]
			},
		}})
		a, g := connect(t, srv, "acme"), connect(t, srv, "globex")
		a.listen(`1`, `{"toolsListChanged":true,"resourceSubscriptions":["file:///a","file:///b"]}`)
		g.listen(`1`, `{"toolsListChanged":true}`)

		_, _ = h.Publish(listen.ToolsListChanged().WithScope("tenant:acme"))
		h.ToolsListChanged()
		assert.Equal(t, spec.MethodToolsListChanged, a.recv().method())
		assert.Equal(t, spec.MethodToolsListChanged, a.recv().method())
		assert.Equal(t, spec.MethodToolsListChanged, g.recv().method())
		synctest.Wait()
		assert.Empty(t, g.lines, "globex got acme's tools change once only: the unscoped one")

		mu.Lock()
		denied["file:///a"] = true
		mu.Unlock()
		access.Recheck(t.Context(), authIs("acme"))
		_, _ = h.ResourceUpdated("file:///a")
		_, _ = h.ResourceUpdated("file:///b")
		var uri string
		a.recv().param("uri", &uri)
		assert.Equal(t, "file:///b", uri)

		off := newServer(t, h, options{Listen: listen.Options{Capabilities: testCaps, Disabled: true}})
		o := connect(t, off, "")
		o.send(listenLine(`9`, `{"toolsListChanged":true}`))
		requireError(t, o.recv(), `9`, jsonrpc.CodeMethodNotFound, core.ListenDisabled)
		o.send(requestLine(`10`, "tools/list"))
		requireError(t, o.recv(), `10`, jsonrpc.CodeMethodNotFound, "Method not found: tools/list")
	})
}

// A client that stops reading falls behind a hub with EndListener: once it
// reads again it gets what was written, then the teardown.
func TestFellBehindOverStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, srv := hubServer(t, hub.Options{MaxBuffer: 3, Overflow: hub.EndListener}, options{Options: stdio.Options{WriteTimeout: time.Hour}})
		c := connect(t, srv, "slow")
		c.listen(`1`, `{"toolsListChanged":true}`)
		// The reader goroutine's channel holds 4096 lines: fill it, then
		// the pipe, then the listener's queue.
		ended := 0
		for n := 0; ended == 0; n++ {
			require.Less(t, n, 10000)
			ended = h.ToolsListChanged().Ended
			synctest.Wait()
		}
		for {
			m := c.recv()
			if m.method() == spec.MethodToolsListChanged {
				continue
			}
			require.Equal(t, spec.MethodCancelled, m.method())
			break
		}
		m := c.recv()
		requireCompletion(t, m, `1`)
		assert.True(t, strings.Contains(string(m.raw), `"fell_behind"`), "%s", m.raw)
	})
}

// The hub reports a URI attached while a stdio listen watches it, and
// detached when the client cancels it.
func TestAttachDetachOverStdio(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []string
		_, srv := hubServer(t, hub.Options{
			OnAttach: func(w hub.Watch) { events = append(events, "+"+w.URI) },
			OnDetach: func(w hub.Watch) { events = append(events, "-"+w.URI) },
		}, options{})
		c := connect(t, srv, "")
		c.listen(`1`, `{"resourceSubscriptions":["file:///a"]}`)
		synctest.Wait()
		assert.Equal(t, []string{"+file:///a"}, events)
		c.send(cancelLine(`1`, "done"))
		synctest.Wait()
		assert.Equal(t, []string{"+file:///a", "-file:///a"}, events)
	})
}

// authIs matches the principals whose Auth is v (listen.Access.Recheck).
func authIs(v any) func(any) bool { return func(a any) bool { return a == v } }
