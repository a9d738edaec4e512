package mcpgo_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/listentest"
)

const (
	uriA = "test://a"
	uriB = "test://b"
)

// plainServer is an mcp-go v1.2.1 server as its README builds one, with no
// listen code in it: every list change and resource subscriptions
// declared, a tool, a prompt and two resources.
func plainServer() *server.MCPServer {
	s := server.NewMCPServer("plain", "1.2.3",
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
	)
	s.AddTool(mcp.NewTool("echo", mcp.WithString("text")), func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(r.GetString("text", "")), nil
	})
	s.AddPrompt(mcp.NewPrompt("greeting"), func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	for _, u := range []string{uriA, uriB} {
		s.AddResource(mcp.NewResource(u, u), func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: r.Params.URI, Text: "x"}}, nil
		})
	}
	return s
}

// addTool registers a trivial tool (mcp-go broadcasts tools/list_changed).
func addTool(s *server.MCPServer, name string) {
	s.AddTool(mcp.NewTool(name), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(""), nil
	})
}

// updated broadcasts notifications/resources/updated for uri, the one way
// mcp-go v1.2.1 has.
func updated(s *server.MCPServer, uri string) {
	s.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
}

// meta is the _meta of a 2026-07-28 request.
func meta(version string) map[string]any {
	return map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "0"},
	}
}

// request encodes one JSON-RPC request; idToken is the id's JSON text.
func request(idToken, method, version string, params map[string]any) []byte {
	p := map[string]any{"_meta": meta(version)}
	for k, v := range params {
		p[k] = v
	}
	pb, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, idToken, method, pb)
}

// post sends body to endpoint with the 2026-07-28 headers for method.
func post(t testing.TB, endpoint, method, version string, body []byte) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("MCP-Protocol-Version", version)
	var p struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &p) == nil {
		for k, v := range mcp.StandardHeaders(version, mcp.MCPMethod(method), p.Params) {
			req.Header.Set(k, v) // Mcp-Name, for tools/call
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// call posts one 2026-07-28 request and returns every message of its
// answer (one JSON document, or the data of each SSE event).
func call(t testing.TB, endpoint, idToken, method string, params map[string]any) []json.RawMessage {
	t.Helper()
	resp := post(t, endpoint, method, "2026-07-28", request(idToken, method, "2026-07-28", params))
	defer resp.Body.Close()
	return readMessages(t, resp)
}

// readMessages reads every message of resp (listentest.ReadMessages).
func readMessages(t testing.TB, resp *http.Response) []json.RawMessage {
	t.Helper()
	msgs, err := listentest.ReadMessages(resp)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}

// msg is one JSON-RPC message, decoded.
type msg struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications map[string]any             `json:"notifications"`
		URI           string                     `json:"uri"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
	raw json.RawMessage
}

// tag is the message's subscription id token ("" if untagged).
func (m msg) tag() string { return string(m.Params.Meta["io.modelcontextprotocol/subscriptionId"]) }

func decode(t testing.TB, raw []byte) msg {
	t.Helper()
	var m msg
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("bad message %q: %v", raw, err)
	}
	m.raw = append(json.RawMessage(nil), raw...)
	return m
}

// failsafe bounds a wait for something that should come, so that a
// missing message fails the test instead of hanging it.
const failsafe = 10 * time.Second

// feed is a stream of messages read by a goroutine of its own, which ends
// at the end of the input (and closes msgs).
type feed struct {
	t    testing.TB
	msgs chan msg
	done chan struct{}
}

func newFeed(t testing.TB, next func() ([]byte, error)) *feed {
	f := &feed{t: t, msgs: make(chan msg, 4096), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		defer close(f.msgs)
		for {
			d, err := next()
			if err != nil {
				return
			}
			var m msg
			if err := json.Unmarshal(d, &m); err != nil {
				panic(fmt.Sprintf("bad message %q: %v", d, err))
			}
			m.raw = append(json.RawMessage(nil), d...)
			f.msgs <- m
		}
	}()
	return f
}

// sseFeed reads the SSE events of body.
func sseFeed(t testing.TB, body io.Reader) *feed {
	r := listentest.NewSSEReader(body)
	return newFeed(t, func() ([]byte, error) { return r.Data() })
}

// lineFeed reads the lines of r (newline-delimited JSON-RPC).
func lineFeed(t testing.TB, r io.Reader) *feed {
	br := bufio.NewReader(r)
	return newFeed(t, func() ([]byte, error) {
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				return bytes.TrimSpace(line), nil
			}
			if err != nil {
				return nil, err
			}
		}
	})
}

// next returns the next message.
func (f *feed) next() msg {
	f.t.Helper()
	return recv(f.t, f.msgs, "message")
}

// rest reads to the end and returns what came.
func (f *feed) rest() []msg {
	var out []msg
	for m := range f.msgs {
		out = append(out, m)
	}
	<-f.done
	return out
}

// stream is one open listen over HTTP.
type stream struct {
	*feed
	resp *http.Response
	ack  msg
}

// openListen opens a listen with the id token over HTTP and returns it once
// it was acknowledged.
func openListen(t testing.TB, endpoint, idToken string, notifications map[string]any) *stream {
	t.Helper()
	resp := post(t, endpoint, "subscriptions/listen", "2026-07-28",
		request(idToken, "subscriptions/listen", "2026-07-28", map[string]any{"notifications": notifications}))
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("listen: %s: %s", resp.Status, b)
	}
	s := &stream{feed: sseFeed(t, resp.Body), resp: resp}
	s.ack = s.next()
	if s.ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message %s, not the acknowledgement", s.ack.raw)
	}
	return s
}

// close ends the listen from the client's side and waits for its reader.
func (s *stream) close() {
	s.resp.Body.Close()
	for range s.msgs {
	}
	<-s.done
}

// counter counts events signalled from other goroutines (mcp-go's hooks).
type counter struct {
	mu sync.Mutex
	n  int
	ch chan struct{}
}

func newCounter() *counter { return &counter{ch: make(chan struct{}, 1<<16)} }

func (c *counter) add() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	c.ch <- struct{}{}
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// mcpResource is a resource with uri as name.
func mcpResource(uri string) mcp.Resource { return mcp.NewResource(uri, uri) }

// mcpTool is a tool without arguments.
func mcpTool(name string) mcp.Tool { return mcp.NewTool(name) }

// countTool counts its calls in n (read only after the calls returned).
func countTool(n *int) server.ToolHandlerFunc {
	return func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		*n++
		return mcp.NewToolResultText("counted"), nil
	}
}
