package streamhttp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
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
	server := listen.NewServer(oneShot{}, listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true},
	})
	h, err := streamhttp.New(server, streamhttp.Options{})
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
// StreamableHTTPHandler) on one endpoint, and shutting down: first every
// open listen gets its completion result, then the HTTP server stops.
func ExampleFront() {
	// The capabilities the server advertises in server/discover. With the
	// go-sdk, pass the *mcp.ServerCapabilities set in
	// mcp.ServerOptions.Capabilities.
	advertised := map[string]any{
		"tools":     map[string]any{"listChanged": true},
		"resources": map[string]any{"subscribe": true, "listChanged": true},
	}
	caps, err := listen.CapabilitiesFrom(advertised)
	if err != nil {
		log.Fatal(err)
	}
	server := listen.NewServer(oneShot{}, listen.Options{
		Capabilities: caps,
		ServerInfo:   listen.Implementation{Name: "example", Version: "1.0.0"},
	})
	listens, err := streamhttp.New(server, streamhttp.Options{})
	if err != nil {
		log.Fatal(err)
	}
	// Stands for mcp.NewStreamableHTTPHandler(getServer, opts).
	existing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "served by the existing server")
	})

	mux := http.NewServeMux()
	mux.Handle("/mcp", streamhttp.Front(listens, existing))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)

	// A client's POSTs: Front routes them by their Mcp-Method header.
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	post := func(method, body string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+ln.Addr().String()+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", method)
		resp, err := client.Do(req)
		if err != nil {
			log.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		if resp.Header.Get("Content-Type") == "text/event-stream" {
			fmt.Printf("%s: %d events\n", method, strings.Count(string(got), "event: message"))
			return
		}
		fmt.Printf("%s: %s\n", method, got)
	}
	post("subscriptions/listen", `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`+
		`"notifications":{"toolsListChanged":true},`+
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`)
	post("tools/call", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`)

	// On SIGINT or SIGTERM: the listens first, then the HTTP server.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := errors.Join(listens.Shutdown(ctx), srv.Shutdown(ctx)); err != nil {
		log.Fatal(err)
	}
	fmt.Println("shut down")
	// Output:
	// subscriptions/listen: 3 events
	// tools/call: served by the existing server
	// shut down
}

// Ending the streams of a revoked principal: Authenticate refuses it from
// now on, and the Server's EndStreams ends its open streams, each with its
// completion result.
func Example_endStreams() {
	changes, err := hub.New(hub.Options{})
	if err != nil {
		log.Fatal(err)
	}
	var revoked sync.Map // user -> true
	server := listen.NewServer(changes, listen.Options{Capabilities: listen.Capabilities{ToolsListChanged: true}})
	listens, err := streamhttp.New(server, streamhttp.Options{
		Authenticate: func(r *http.Request) (any, error) {
			// Stands for the verification of a real token.
			user, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if _, gone := revoked.Load(user); !ok || gone {
				return nil, errors.New("invalid token")
			}
			return user, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := httptest.NewServer(listens)
	defer srv.Close()
	open := func(user string) *http.Response {
		body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` +
			`"notifications":{"toolsListChanged":true},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+user)
		req.Header.Set("Mcp-Method", "subscriptions/listen")
		resp, err := srv.Client().Do(req)
		if err != nil {
			log.Fatal(err)
		}
		return resp
	}
	resp := open("alice")
	defer resp.Body.Close()
	events := bufio.NewReader(resp.Body)
	for range 3 { // the acknowledgement: its two lines and a blank one
		events.ReadString('\n')
	}

	revoked.Store("alice", true)
	n := server.EndStreams(func(auth any) bool {
		_, gone := revoked.Load(auth)
		return gone
	}, listen.ErrRevoked)
	fmt.Println("streams ended:", n)
	rest, _ := io.ReadAll(events)
	fmt.Print(string(rest))
	again := open("alice")
	again.Body.Close()
	fmt.Println("a new listen:", again.Status)
	// Output:
	// streams ended: 1
	// event: message
	// data: {"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.github.mcplisten/endReason":"revoked","io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
	//
	// a new listen: 401 Unauthorized
}
