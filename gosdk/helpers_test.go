package gosdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/listentest"
)

const (
	uriA = "test://a"
	uriB = "test://b"
)

// plainServer is a go-sdk v1.8.0 server with no listen code in it: default
// ServerOptions (capabilities inferred from what is registered), a tool, a
// prompt, two resources and the subscribe handlers resources.subscribe
// needs.
func plainServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "plain", Version: "1.2.3"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greeting"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	for _, u := range []string{uriA, uriB} {
		s.AddResource(&mcp.Resource{URI: u, Name: u}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "x"}}}, nil
		})
	}
	return s
}

// addTool registers a trivial tool.
func addTool(s *mcp.Server, name string) {
	mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
}

// meta is the _meta of a 2026-07-28 request.
var meta = map[string]any{
	"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
	"io.modelcontextprotocol/clientCapabilities": map[string]any{},
	"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "test", "version": "0"},
}

// post sends one JSON-RPC request to endpoint with the 2026-07-28 headers.
func post(t testing.TB, endpoint string, id any, method, version string, params map[string]any) *http.Response {
	t.Helper()
	m := map[string]any{}
	for k, v := range meta {
		m[k] = v
	}
	m["io.modelcontextprotocol/protocolVersion"] = version
	p := map[string]any{"_meta": m}
	for k, v := range params {
		p[k] = v
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": p})
	req, _ := http.NewRequest(http.MethodPost, endpoint, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", method)
	req.Header.Set("MCP-Protocol-Version", version)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// postRaw POSTs body as JSON (Accept: JSON and SSE) with the extra headers
// and returns the response and its whole body.
func postRaw(t testing.TB, endpoint, body string, headers map[string]string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// discoverCaps runs server/discover over HTTP and returns its capabilities.
func discoverCaps(t testing.TB, endpoint string) map[string]any {
	t.Helper()
	resp := post(t, endpoint, 1, "server/discover", "2026-07-28", nil)
	defer resp.Body.Close()
	var msg struct {
		Result struct {
			Capabilities map[string]any `json:"capabilities"`
		} `json:"result"`
	}
	for _, m := range readMessages(t, resp) {
		if err := json.Unmarshal(m, &msg); err != nil {
			t.Fatal(err)
		}
	}
	if msg.Result.Capabilities == nil {
		t.Fatal("server/discover: no capabilities")
	}
	return msg.Result.Capabilities
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

// stream is one open listen over HTTP.
type stream struct {
	t    testing.TB
	resp *http.Response
	msgs chan msg
	done chan struct{}
}

// msg is one JSON-RPC message of a listen, decoded.
type msg struct {
	Method string `json:"method"`
	ID     any    `json:"id"`
	Params struct {
		Meta          map[string]any `json:"_meta"`
		Notifications map[string]any `json:"notifications"`
		URI           string         `json:"uri"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// openListen opens a listen over HTTP and returns it once it was
// acknowledged, with the acknowledged filter.
func openListen(t testing.TB, endpoint string, id any, notifications map[string]any) (*stream, map[string]any) {
	t.Helper()
	resp := post(t, endpoint, id, "subscriptions/listen", "2026-07-28", map[string]any{"notifications": notifications})
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("listen: %s: %s", resp.Status, b)
	}
	s := &stream{t: t, resp: resp, msgs: make(chan msg, 100), done: make(chan struct{})}
	go s.read()
	ack := s.next()
	if ack.Method != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first message %+v, not the acknowledgement", ack)
	}
	return s, ack.Params.Notifications
}

// read decodes the stream's messages into msgs until the stream ends, then
// closes msgs and done. It runs on a goroutine of its own.
func (s *stream) read() {
	defer close(s.done)
	defer close(s.msgs)
	r := listentest.NewSSEReader(s.resp.Body)
	for {
		d, err := r.Data()
		if err != nil {
			return // the end of the stream
		}
		var m msg
		if err := json.Unmarshal(d, &m); err != nil {
			panic(fmt.Sprintf("bad message %q: %v", d, err))
		}
		s.msgs <- m
	}
}

// failsafe bounds a wait for something that should come, so that a
// missing message fails the test instead of hanging it.
const failsafe = 10 * time.Second

// next returns the stream's next message.
func (s *stream) next() msg {
	s.t.Helper()
	return recv(s.t, s.msgs, "message")
}

// rest reads the stream to its end and returns the methods of what came
// (a result as "result").
func (s *stream) rest() []string {
	var out []string
	for m := range s.msgs {
		switch {
		case m.Method != "":
			out = append(out, m.Method)
		case m.Result != nil:
			out = append(out, "result")
		default:
			out = append(out, "error")
		}
	}
	<-s.done
	s.resp.Body.Close()
	return out
}
