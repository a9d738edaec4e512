// Command gosdk is a complete go-sdk (v1.8.0) MCP server with
// subscriptions/listen, small enough to copy: a notes resource, a tool that
// changes it, and the one handler (gosdk.NewHandler) that serves clients of
// 2026-07-28 (listens, served by this library) and of earlier versions (the
// go-sdk's sessions) on one endpoint.
//
//	go run ./examples/gosdk [-addr 127.0.0.1:8080]
//
// A client that listens to note://todo (or subscribes to it with
// resources/subscribe, on an earlier version) is told of every add_note
// call; one that listens to toolsListChanged is told when the go-sdk's tool
// list changes, with no publish call in this code. SIGINT or SIGTERM drains:
// every open listen gets its completion result.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/gosdk"
)

const todoURI = "note://todo"

// maxNotes is how many notes note://todo keeps (the newest): what clients
// add, and what each read of it costs, stays bounded.
const maxNotes = 100

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (a loopback one: see streamhttp.Options.AllowedHosts otherwise)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	h, err := newHandler()
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	srv := &http.Server{
		Addr:              *addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // the body is bounded by the handler
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		// No ReadTimeout or WriteTimeout: they would cut long-lived streams.
	}
	ln, err := net.Listen("tcp", *addr) // bound before it says it serves
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Serve(ln) }() // ends on srv.Shutdown, which waits for it
	log.Printf("serving MCP on http://%s/mcp", ln.Addr())
	select {
	case <-ctx.Done():
	case err := <-stopped:
		log.Fatal(err)
	}

	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = h.Shutdown(sctx) // every listen gets its completion result; older sessions end
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = srv.Close()
	}
	if err != nil {
		log.Printf("not every listen ended in time: %v", err)
	}
}

// newHandler builds the go-sdk server and the handler that serves it.
func newHandler() (*gosdk.Handler, error) {
	server := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1.0.0"}, &mcp.ServerOptions{
		// Resource subscriptions are advertised only with both handlers (here
		// they have nothing to do: the handler below tells the subscribers).
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	var (
		mu    sync.Mutex
		notes []string
		h     *gosdk.Handler
	)
	server.AddResource(&mcp.Resource{URI: todoURI, Name: "todo", MIMEType: "text/plain"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			mu.Lock()
			defer mu.Unlock()
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
				{URI: req.Params.URI, MIMEType: "text/plain", Text: strings.Join(notes, "\n")},
			}}, nil
		})
	type addIn struct {
		Text string `json:"text" jsonschema:"the note to add"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "add_note", Description: "Adds a line to note://todo (which keeps the last 100)"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			notes = append(notes, in.Text)
			if len(notes) > maxNotes {
				notes = slices.Delete(notes, 0, len(notes)-maxNotes)
			}
			mu.Unlock()
			// One call: every listen watching the note, and every older
			// client subscribed to it, is told once.
			if err := h.ResourceUpdated(ctx, todoURI); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added"}}}, nil, nil
		})

	var err error
	h, err = gosdk.NewHandler(server, gosdk.HandlerOptions{})
	return h, err
}
