package mcpgo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/mcpgo"
	"github.com/mcplisten/listen/stdio"
)

// mcp-go's StdioServer has one session per process: the stdio tests run
// one at a time (none calls t.Parallel).

// pipeClient is the client end of one stdio connection served by an
// mcpgo.Stdio.
type pipeClient struct {
	t      testing.TB
	in     *io.PipeWriter
	out    *feed
	served chan error
}

// startStdio serves s over pipes with x.
func startStdio(t testing.TB, ctx context.Context, x *mcpgo.Stdio) *pipeClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &pipeClient{t: t, in: inW, out: lineFeed(t, outR), served: make(chan error, 1)}
	go func() {
		err := x.Serve(ctx, inR, outW)
		_ = outW.Close()
		c.served <- err
	}()
	return c
}

func (c *pipeClient) send(b []byte) {
	c.t.Helper()
	_, err := c.in.Write(append(b, '\n'))
	require.NoError(c.t, err)
}

// listen sends a listen with the id token and returns its acknowledgement.
func (c *pipeClient) listen(id string, notifications map[string]any) msg {
	c.t.Helper()
	c.send(request(id, "subscriptions/listen", "2026-07-28", map[string]any{"notifications": notifications}))
	ack := c.out.next()
	require.Equal(c.t, "notifications/subscriptions/acknowledged", ack.Method, "%s", ack.raw)
	require.Equal(c.t, id, ack.tag())
	return ack
}

// end closes the input and returns what was left to read and what Serve
// returned.
func (c *pipeClient) end() ([]msg, error) {
	c.t.Helper()
	require.NoError(c.t, c.in.Close())
	rest := c.out.rest()
	return rest, <-c.served
}

// TestStdioPlainServer starts from an mcp-go server with no listen code in
// it and shows, over stdio: several listens on one connection, each
// acknowledged as server/discover advertises, each receiving only what it
// asked for, tagged with its own id (no untagged broadcast from mcp-go);
// one cancelled gets nothing more while the others go on; ids such as
// 9007199254740993 and "7" kept exactly, on listens and on what mcp-go
// answers.
func TestStdioPlainServer(t *testing.T) {
	srv := plainServer()
	x, err := mcpgo.NewStdio(srv, mcpgo.StdioOptions{})
	require.NoError(t, err)
	c := startStdio(t, context.Background(), x)

	c.send(request("0", "server/discover", "2026-07-28", nil))
	d := c.out.next()
	require.Equal(t, "0", string(d.ID))
	prompts := c.listen("1", map[string]any{"promptsListChanged": true})
	assert.Equal(t, map[string]any{"promptsListChanged": true}, prompts.Params.Notifications)
	tools := c.listen(`"7"`, map[string]any{"toolsListChanged": true})
	assert.Equal(t, map[string]any{"toolsListChanged": true}, tools.Params.Notifications)
	watch := c.listen(`9007199254740993`, map[string]any{"resourceSubscriptions": []any{uriA}})
	assert.Equal(t, map[string]any{"resourceSubscriptions": []any{uriA}}, watch.Params.Notifications)

	addTool(srv, "added")
	m := c.out.next()
	assert.Equal(t, "notifications/tools/list_changed", m.Method)
	assert.Equal(t, `"7"`, m.tag(), "only the tools listen, tagged")
	updated(srv, uriA)
	m = c.out.next()
	assert.Equal(t, "notifications/resources/updated", m.Method)
	assert.Equal(t, uriA, m.Params.URI)
	assert.Equal(t, `9007199254740993`, m.tag())

	// Cancel the prompts listen: nothing more for it, the others go on.
	c.send([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`))
	// The cancellation is read asynchronously: change the prompts once its
	// stream has ended (a change before that may reach it, legitimately).
	require.Eventually(t, func() bool { return x.Server().Stats().Active == 2 }, 10*time.Second, time.Millisecond)
	srv.DeletePrompts("greeting")
	addTool(srv, "again")
	m = c.out.next()
	assert.Equal(t, "notifications/tools/list_changed", m.Method, "the cancelled listen got nothing: %s", m.raw)
	assert.Equal(t, `"7"`, m.tag())

	// A listen naming an unknown version is the library's too: -32022.
	c.send(request("3", "subscriptions/listen", "1900-01-01", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}))
	m = c.out.next()
	require.NotNil(t, m.Error, "%s", m.raw)
	assert.Equal(t, -32022, m.Error.Code)
	assert.JSONEq(t, `{"supported":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],"requested":"1900-01-01"}`, string(m.Error.Data))

	// mcp-go's answers carry the client's id tokens.
	for _, id := range []string{`9007199254740995`, `"\u0037"`, `-0`, `"8"`, `12`} {
		c.send(request(id, "tools/call", "2026-07-28", map[string]any{"name": "echo", "arguments": map[string]any{"text": "hi"}}))
		m = c.out.next()
		assert.Equal(t, id, string(m.ID), "%s", m.raw)
		assert.NotNil(t, m.Result)
	}

	// A graceful shutdown: every open listen gets its completion.
	require.NoError(t, x.Shutdown(context.Background()))
	rest, err := c.end()
	require.ErrorIs(t, err, stdio.ErrServerClosed)
	// Each listen: notifications/cancelled naming it, then its completion.
	done := map[string]bool{}
	cancelled := map[string]bool{}
	for _, m := range rest {
		var p struct {
			Params struct {
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		switch {
		case m.Method == "notifications/cancelled":
			require.NoError(t, json.Unmarshal(m.raw, &p))
			cancelled[string(p.Params.RequestID)] = true
		case m.Result != nil:
			assert.True(t, cancelled[string(m.ID)], "notifications/cancelled before the completion of %s", m.ID)
			done[string(m.ID)] = true
		}
	}
	assert.Equal(t, map[string]bool{`"7"`: true, `9007199254740993`: true}, done, "completions: %v", rest)
	assert.Zero(t, x.Stats().Connections)
	assert.ErrorIs(t, x.Serve(context.Background(), strings.NewReader(""), io.Discard), stdio.ErrServerClosed)
}

// TestStdioLegacyClientKeepsMCPGoNotifications: a client that speaks
// initialize (2025-11-25) gets mcp-go's list changes as mcp-go sends them;
// a listen is not for it (-32601).
func TestStdioLegacyClientKeepsMCPGoNotifications(t *testing.T) {
	srv := plainServer()
	x, err := mcpgo.NewStdio(srv, mcpgo.StdioOptions{})
	require.NoError(t, err)
	c := startStdio(t, context.Background(), x)
	c.send([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"old","version":"0"}}}`))
	m := c.out.next()
	require.Equal(t, "1", string(m.ID), "%s", m.raw)
	c.send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	addTool(srv, "added")
	m = c.out.next()
	assert.Equal(t, "notifications/tools/list_changed", m.Method)
	assert.Empty(t, m.tag())
	c.send(request("2", "subscriptions/listen", "2025-11-25", map[string]any{"notifications": map[string]any{"toolsListChanged": true}}))
	m = c.out.next()
	require.NotNil(t, m.Error, "%s", m.raw)
	assert.Equal(t, -32601, m.Error.Code)
	_, err = c.end()
	require.NoError(t, err)
	require.NoError(t, x.Shutdown(context.Background()))
}

// TestStdioCtxEndCompletesListens: the end of Serve's context gives every
// open listen its completion, and Serve returns the context's cause.
func TestStdioCtxEndCompletesListens(t *testing.T) {
	srv := plainServer()
	x, err := mcpgo.NewStdio(srv, mcpgo.StdioOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancelCause(context.Background())
	c := startStdio(t, ctx, x)
	for i := range 3 {
		c.listen(fmt.Sprint(i+1), map[string]any{"toolsListChanged": true})
	}
	stop := fmt.Errorf("stop")
	cancel(stop)
	var completed []string
	for len(completed) < 3 {
		if m := c.out.next(); m.Result != nil {
			completed = append(completed, string(m.ID))
		}
	}
	assert.ElementsMatch(t, []string{"1", "2", "3"}, completed)
	_, err = c.end()
	assert.ErrorIs(t, err, stop)
	require.NoError(t, x.Shutdown(context.Background()))
}

// TestStdioBoundsHoldForMCPGo: the connection's bounds apply to what mcp-go
// serves: a line over MaxLineBytes never reaches it (-32600, the
// connection goes on), and at most MaxInFlight of its requests run at once.
func TestStdioBoundsHoldForMCPGo(t *testing.T) {
	srv := plainServer()
	var (
		mu            sync.Mutex
		running, most int
	)
	entered := make(chan struct{}, 16)
	release := make(chan struct{})
	srv.AddTool(mcpTool("slow"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		mu.Lock()
		running++
		most = max(most, running)
		mu.Unlock()
		entered <- struct{}{}
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return mcp.NewToolResultText("done"), nil
	})
	x, err := mcpgo.NewStdio(srv, mcpgo.StdioOptions{Stdio: stdio.Options{MaxLineBytes: 1024, MaxInFlight: 2}})
	require.NoError(t, err)
	c := startStdio(t, context.Background(), x)

	c.send(request("1", "tools/call", "2026-07-28", map[string]any{"name": "echo", "arguments": map[string]any{"text": strings.Repeat("x", 2000)}}))
	m := c.out.next()
	require.NotNil(t, m.Error, "%s", m.raw)
	assert.Equal(t, -32600, m.Error.Code)
	assert.Empty(t, m.ID)

	// The connection stops reading once two calls are in flight: the
	// client's writes block (its backpressure), so they are sent aside.
	sent := make(chan struct{})
	go func() {
		defer close(sent)
		for i := range 4 {
			_, _ = c.in.Write(append(request(fmt.Sprint(10+i), "tools/call", "2026-07-28", map[string]any{"name": "slow"}), '\n'))
		}
	}()
	<-entered
	<-entered
	assert.LessOrEqual(t, x.Stats().InFlight, 2)
	close(release)
	answered := map[string]bool{}
	for len(answered) < 4 {
		m := c.out.next()
		require.NotNil(t, m.Result, "%s", m.raw)
		answered[string(m.ID)] = true
	}
	<-sent
	mu.Lock()
	assert.Equal(t, 2, most, "at most MaxInFlight of mcp-go's requests at once")
	mu.Unlock()
	_, err = c.end()
	require.NoError(t, err)
	require.NoError(t, x.Shutdown(context.Background()))
}
