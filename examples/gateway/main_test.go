package main

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	mcpgoserver "github.com/mark3labs/mcp-go/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/examples/fixture"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/upstream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const wait = 20 * time.Second

// build builds the example command dir (relative to examples/) into a
// temporary directory of t's.
func build(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), filepath.Base(dir))
	cmd := exec.Command("go", "build", "-o", bin, "../"+dir)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run())
	return bin
}

// process is a started example command over HTTP, which a test kills and
// starts again on the same address.
type process struct {
	t    *testing.T
	bin  string
	addr string
	cmd  *exec.Cmd
	done chan struct{}
}

func startProcess(t *testing.T, bin string) *process {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	p := &process{t: t, bin: bin, addr: addr}
	p.start()
	t.Cleanup(p.kill)
	return p
}

// start runs the command and waits for its "serving MCP on" line.
func (p *process) start() {
	cmd := exec.Command(p.bin, "-addr", p.addr)
	stderr, err := cmd.StderrPipe()
	require.NoError(p.t, err)
	require.NoError(p.t, cmd.Start())
	ready := make(chan struct{})
	done := make(chan struct{})
	go func() { // reads the logs until the process exits
		defer close(done)
		sc := bufio.NewScanner(stderr)
		once := sync.Once{}
		for sc.Scan() {
			if strings.Contains(sc.Text(), "serving MCP on") {
				once.Do(func() { close(ready) })
			}
		}
		_ = cmd.Wait()
	}()
	select {
	case <-ready:
	case <-done:
		p.t.Fatal("the upstream exited before serving")
	case <-time.After(wait):
		p.t.Fatal("the upstream did not start")
	}
	p.cmd, p.done = cmd, done
}

// kill kills the process (SIGKILL: no completion result, a reset).
func (p *process) kill() {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.cmd = nil
}

// URL is the process's MCP endpoint.
func (p *process) URL() string { return "http://" + p.addr + "/mcp" }

// client listens to the gateway, as a downstream client would.
type client struct {
	t  *testing.T
	st *upstream.Stream
}

func listenTo(t *testing.T, url string, f listen.Filter) *client {
	t.Helper()
	st, err := upstream.Open(context.Background(), &upstream.HTTP{URL: url}, f, upstream.OpenOptions{})
	require.NoError(t, err)
	t.Cleanup(st.Close)
	return &client{t: t, st: st}
}

// sentinel is a URI of no upstream's: published straight into the
// gateway's hub, it marks the end of what a test expects.
const sentinel = "gw://sentinel"

// upTo returns the notifications before the sentinel, as "method uri".
func (c *client) upTo() []string {
	c.t.Helper()
	var got []string
	for {
		n, err := c.st.Next()
		require.NoError(c.t, err)
		if n.URI == sentinel {
			return got
		}
		got = append(got, strings.TrimSpace(n.Method+" "+n.URI))
	}
}

func strs(s ...string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// The gateway in front of four upstreams written by others or built as
// examples: a plain go-sdk v1.8.0 server and a plain mcp-go server (their
// own listens), examples/gosdk over HTTP and examples/stdio over stdio.
// Every client listen gets what it asked for from any of them, each
// upstream's URIs in its namespace; an upstream killed and restarted is
// listened to again, and the listens that could have missed something
// from it are hinted, the others not.
func TestGatewayInFrontOfRealUpstreams(t *testing.T) {
	notesBin := build(t, "gosdk")
	stdioBin := build(t, "stdio")
	ctx, cancel := context.WithTimeout(context.Background(), 5*wait)
	defer cancel()

	sdkServer := fixture.New(fixture.Options{Name: "plain-gosdk", Version: "1"})
	sdk := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer sdk.Close()
	mcpgoServer := plainMCPGo()
	mg := httptest.NewServer(mcpgoserver.NewStreamableHTTPServer(mcpgoServer))
	defer mg.Close()
	notes := startProcess(t, notesBin)

	var ups upstreams
	require.NoError(t, ups.http("sdk="+sdk.URL))
	require.NoError(t, ups.http("mcpgo="+mg.URL))
	require.NoError(t, ups.http("notes="+notes.URL()))
	require.NoError(t, ups.stdio("stdio="+stdioBin))
	g, err := newGateway(ups.list, 0)
	require.NoError(t, err)
	defer g.Shutdown(ctx)
	gw := httptest.NewServer(g.Handler())
	defer gw.Close()
	defer gw.CloseClientConnections()

	// Every upstream's list listen acknowledged, so the gateway's
	// capabilities are known.
	require.Eventually(t, func() bool {
		for _, s := range g.feed.Stats() {
			if s.Lists.Listens == 0 {
				return false
			}
		}
		return true
	}, wait, 10*time.Millisecond)
	caps, err := g.feed.Capabilities(ctx, nil)
	require.NoError(t, err)
	assert.Equal(t, listen.Capabilities{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourcesSubscribe: true}, caps)

	tools := listenTo(t, gw.URL, listen.Filter{spec.KeyToolsListChanged: true, spec.KeyResourceSubscriptions: strs(sentinel)})
	todo := listenTo(t, gw.URL, listen.Filter{spec.KeyResourceSubscriptions: strs("notes+note://todo", "sdk+"+fixture.ReadmeURI, sentinel)})
	other := listenTo(t, gw.URL, listen.Filter{spec.KeyResourceSubscriptions: strs("mcpgo+"+mcpgoReadme, sentinel)})
	// The resource listens of notes and sdk are acknowledged with the URIs.
	require.Eventually(t, func() bool {
		st := g.feed.Stats()
		return st[0].Watched == 1 && st[0].Resources.Open == 1 && st[2].Watched == 1 && st[2].Resources.Open == 1 &&
			st[0].Resources.Listens > 0 && st[2].Resources.Listens > 0
	}, wait, 10*time.Millisecond)

	// Changes in the upstreams, by their own SDKs.
	sdkServer.AddTool(&mcp.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	require.NoError(t, sdkServer.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: fixture.ReadmeURI}))
	mcpgoServer.AddTool(mcpgo.NewTool("added"), func(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		return &mcpgo.CallToolResult{}, nil
	})
	addNote(t, ctx, notes.URL(), "buy milk")
	require.Eventually(t, func() bool {
		var n uint64
		for _, s := range g.feed.Stats() {
			n += s.Published
		}
		return n == 4
	}, wait, 10*time.Millisecond)
	_, err = g.hub.ResourceUpdated(sentinel)
	require.NoError(t, err)
	assert.Equal(t, []string{"notifications/tools/list_changed", "notifications/tools/list_changed"}, tools.upTo())
	assert.ElementsMatch(t, []string{"notifications/resources/updated sdk+" + fixture.ReadmeURI, "notifications/resources/updated notes+note://todo"}, todo.upTo())
	assert.Empty(t, other.upTo())

	// notes is killed (a reset) and started again on its address.
	notes.kill()
	require.Eventually(t, func() bool {
		s := g.feed.Stats()[2]
		return s.Lists.Open == 0 && s.Resources.Open == 0
	}, wait, 10*time.Millisecond, "the loss is noticed")
	notes.start()
	if !assert.Eventually(t, func() bool {
		s := g.feed.Stats()[2]
		return s.Lists.Gaps == 1 && s.Resources.Gaps == 1 // counted once the hints are published
	}, 3*wait, 10*time.Millisecond, "listened to again (the backoff grows while notes restarts, up to 30 s), hinted") {
		t.Fatalf("%+v", g.feed.Stats()[2]) // read here, not in Eventually's goroutine
	}
	_, err = g.hub.ResourceUpdated(sentinel)
	require.NoError(t, err)
	assert.Equal(t, []string{"notifications/tools/list_changed"}, tools.upTo(), "the hint of notes's tools")
	assert.Equal(t, []string{"notifications/resources/updated notes+note://todo"}, todo.upTo(), "the hint of notes's URI")
	assert.Empty(t, other.upTo(), "nothing for a listen of mcpgo's")

	addNote(t, ctx, notes.URL(), "after the restart")
	_, err = todo.st.Next()
	require.NoError(t, err)

	// The stdio upstream is listened to: examples/stdio acknowledged.
	assert.Equal(t, 1, g.feed.Stats()[3].Lists.Open)
}

// addNote calls examples/gosdk's add_note with a go-sdk client.
func addNote(t *testing.T, ctx context.Context, url, text string) {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	require.NoError(t, err)
	defer cs.Close()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "add_note", Arguments: map[string]any{"text": text}})
	require.NoError(t, err)
}

// A go-sdk v1.8.0 client of the gateway, on 2026-07-28: it discovers the
// gateway's capabilities (those of its upstream, a plain go-sdk server),
// listens for tool list changes by itself, subscribes to a URI of the
// upstream's in its namespace, and hears of both; a request the gateway
// does not serve gets -32601.
func TestGoSDKClientThroughGateway(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	sdkServer := fixture.New(fixture.Options{Name: "plain-gosdk", Version: "1"})
	sdk := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return sdkServer },
		&mcp.StreamableHTTPOptions{Stateless: true}))
	defer sdk.Close()
	var ups upstreams
	require.NoError(t, ups.http("sdk="+sdk.URL))
	g, err := newGateway(ups.list, 0)
	require.NoError(t, err)
	defer g.Shutdown(ctx)
	gw := httptest.NewServer(g.Handler())
	defer gw.Close()
	require.Eventually(t, func() bool { return g.feed.Stats()[0].Lists.Listens > 0 }, wait, 10*time.Millisecond)

	toolsChanged, updated := make(chan struct{}, 10), make(chan string, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "0"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { toolsChanged <- struct{}{} },
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) { updated <- r.Params.URI },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: gw.URL, MaxRetries: -1},
		&mcp.ClientSessionOptions{ProtocolVersion: spec.ProtocolVersion})
	require.NoError(t, err)
	defer cs.Close()
	require.NoError(t, cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "sdk+" + fixture.ReadmeURI}))
	// Both listens open, and the upstream's resource listen acknowledged.
	require.Eventually(t, func() bool {
		s := g.feed.Stats()[0]
		return g.listens.Server().Stats().Active == 2 && s.Watched == 1 && s.Resources.Listens > 0
	}, wait, 10*time.Millisecond)

	sdkServer.AddTool(&mcp.Tool{Name: "added", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	select {
	case <-toolsChanged:
	case <-ctx.Done():
		t.Fatal("no tools/list_changed")
	}
	require.NoError(t, sdkServer.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: fixture.ReadmeURI}))
	select {
	case uri := <-updated:
		assert.Equal(t, "sdk+"+fixture.ReadmeURI, uri)
	case <-ctx.Done():
		t.Fatal("no resources/updated")
	}
	_, err = cs.ListTools(ctx, nil)
	assert.ErrorContains(t, err, "Method not found")
}

// mcpgoReadme is the one resource of plainMCPGo.
const mcpgoReadme = "test://static/readme"

// plainMCPGo is a plain mcp-go server, with no code of this library: list
// changes and resource subscriptions declared, one resource, one tool.
func plainMCPGo() *mcpgoserver.MCPServer {
	s := mcpgoserver.NewMCPServer("plain-mcpgo", "1",
		mcpgoserver.WithToolCapabilities(true),
		mcpgoserver.WithPromptCapabilities(true),
		mcpgoserver.WithResourceCapabilities(true, true),
	)
	s.AddResource(mcpgo.NewResource(mcpgoReadme, "readme", mcpgo.WithMIMEType("text/plain")),
		func(_ context.Context, r mcpgo.ReadResourceRequest) ([]mcpgo.ResourceContents, error) {
			return []mcpgo.ResourceContents{mcpgo.TextResourceContents{URI: r.Params.URI, MIMEType: "text/plain", Text: "plain mcp-go\n"}}, nil
		})
	s.AddTool(mcpgo.NewTool("echo", mcpgo.WithString("text")),
		func(_ context.Context, r mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			return mcpgo.NewToolResultText(r.GetString("text", "")), nil
		})
	return s
}
