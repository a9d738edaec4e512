package streamhttp_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/streamhttp"
)

// oneShot is a Source whose streams send one tools list change, then end.
type oneShot struct{}

func (oneShot) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	return supported, &oneShotStream{}, nil
}

type oneShotStream struct{ sent bool }

func (s *oneShotStream) Next() (listen.Event, error) {
	if s.sent {
		return listen.Event{}, listen.ErrClosed
	}
	s.sent = true
	return listen.ToolsListChanged(), nil
}

func (s *oneShotStream) Close(reason error) {}

// A listen over HTTP: the acknowledgement, the notifications, and the
// completion result, one SSE event each.
func Example() {
	h, err := streamhttp.New(oneShot{}, streamhttp.Options{
		Listen: listen.Options{
			Capabilities: listen.Capabilities{"tools": map[string]any{"listChanged": true}},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` +
		`"notifications":{"toolsListChanged":true,"promptsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := srv.Client().Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	stream, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Header.Get("Content-Type"))
	fmt.Print(string(stream))
	// Output:
	// text/event-stream
	// event: message
	// data: {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}
	//
	// event: message
	// data: {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}
	//
	// event: message
	// data: {"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
}

// Serving listens next to an existing MCP server (such as the go-sdk's
// StreamableHTTPHandler) on one endpoint, and draining them on shutdown.
func ExampleFront() {
	// The capabilities the server advertises in server/discover. With the
	// go-sdk, pass the *mcp.ServerCapabilities set in
	// mcp.ServerOptions.Capabilities.
	advertised := map[string]any{
		"tools":     map[string]any{"listChanged": true},
		"resources": map[string]any{"subscribe": true, "listChanged": true},
	}
	caps, err := streamhttp.CapabilitiesFrom(advertised)
	if err != nil {
		log.Fatal(err)
	}
	listens, err := streamhttp.New(oneShot{}, streamhttp.Options{
		Listen: listen.Options{
			Capabilities: caps,
			ServerInfo:   listen.Implementation{Name: "example", Version: "1.0.0"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	// Stands for mcp.NewStreamableHTTPHandler(getServer, opts).
	var existing http.Handler = http.NotFoundHandler()

	mux := http.NewServeMux()
	mux.Handle("/mcp", streamhttp.Front(listens, existing))
	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	_ = srv // go srv.ListenAndServe()

	// On SIGINT or SIGTERM: first every open listen gets its completion
	// result, then the HTTP server stops.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_ = listens.Shutdown(ctx)
	_ = srv.Shutdown(ctx)
}

func ExampleCapabilitiesFrom() {
	type toolCaps struct {
		ListChanged bool `json:"listChanged,omitempty"`
	}
	type serverCaps struct {
		Tools *toolCaps `json:"tools,omitempty"`
	}
	caps, err := streamhttp.CapabilitiesFrom(&serverCaps{Tools: &toolCaps{ListChanged: true}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(caps.Flag("tools", "listChanged"), caps.Flag("resources", "subscribe"))
	// Output: true false
}
