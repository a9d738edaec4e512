// Command gosdkserver is a plain server built only on the official Go MCP SDK
// (github.com/modelcontextprotocol/go-sdk v1.8.0). It is the reference point
// for github.com/mcplisten/listen: it serves MCP 2026-07-28 over Streamable
// HTTP in stateless mode and answers subscriptions/listen (SEP-2575) with the
// SDK's own built-in implementation.
//
//	gosdkserver [-addr 127.0.0.1:8090] [-lifetime 0] [-print-caps] [-quiet]
//
// Once the listener is bound it prints exactly one line
//
//	listening on http://ADDR/mcp
//
// to stdout. With -print-caps it instead prints the capabilities object that
// server/discover advertises (as JSON) and exits.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	readmeURI       = "test://static/readme"
	dummyToolName   = "dummy_tool"
	dummyPromptName = "dummy_prompt"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	lifetime := flag.Duration("lifetime", 0, "exit by itself after this long (0: run until signalled)")
	printCaps := flag.Bool("print-caps", false, "print the server/discover capabilities as JSON and exit")
	quiet := flag.Bool("quiet", true, "suppress the SDK's info logging")
	flag.Parse()

	logLevel := slog.LevelInfo
	if *quiet {
		logLevel = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))

	server := newServer(logger)

	if *printCaps {
		caps, err := discoverCapabilities(context.Background(), server)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(caps))
		return
	}

	handler := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true},
	)
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *lifetime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *lifetime)
		defer cancel()
	}
	go func() {
		<-ctx.Done()
		// Listen streams never finish by themselves; give ordinary requests a
		// moment, then drop whatever is still open.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
	}()

	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatal(err)
	}
}

// newServer builds the go-sdk server with explicitly declared capabilities,
// the test tools, one prompt and one resource.
func newServer(logger *slog.Logger) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "gosdkserver", Version: "1.8.0-bench"}, &mcp.ServerOptions{
		Logger: logger,
		// Any non-nil field here overrides what the SDK would infer. Setting the
		// struct also drops the historical default {"logging":{}}.
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{ListChanged: true},
			Prompts:   &mcp.PromptCapabilities{ListChanged: true},
			Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
		},
		// Required: the built-in subscriptions/listen calls the SDK's subscribe
		// path for every resourceSubscriptions URI, which fails with -32601
		// unless SubscribeHandler is set (and NewServer panics unless both are).
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})

	server.AddResource(&mcp.Resource{
		URI:      readmeURI,
		Name:     "readme",
		MIMEType: "text/plain",
	}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{
			{URI: req.Params.URI, MIMEType: "text/plain", Text: "gosdkserver: a plain go-sdk v1.8.0 server.\n"},
		}}, nil
	})

	server.AddPrompt(&mcp.Prompt{
		Name:        "greeting",
		Description: "Says hello",
		Arguments:   []*mcp.PromptArgument{{Name: "name", Required: false}},
	}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		name := req.Params.Arguments["name"]
		if name == "" {
			name = "world"
		}
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
			{Role: "user", Content: &mcp.TextContent{Text: "Hello, " + name + "!"}},
		}}, nil
	})

	type echoIn struct {
		Text string `json:"text" jsonschema:"text to echo back"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echoes its text argument"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: in.Text}}}, nil, nil
		})

	// Toggles a dummy tool, so that every call changes the tool list and the
	// SDK emits notifications/tools/list_changed (debounced by 10ms).
	var mu sync.Mutex
	dummyTool, dummyPrompt := false, false
	mcp.AddTool(server, &mcp.Tool{Name: "test_trigger_tool_change", Description: "Adds or removes a dummy tool"},
		func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			dummyTool = !dummyTool
			if dummyTool {
				mcp.AddTool(server, &mcp.Tool{Name: dummyToolName, Description: "Dummy tool"},
					func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
						return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "dummy"}}}, nil, nil
					})
				return text("added " + dummyToolName), nil, nil
			}
			server.RemoveTools(dummyToolName)
			return text("removed " + dummyToolName), nil, nil
		})

	mcp.AddTool(server, &mcp.Tool{Name: "test_trigger_prompt_change", Description: "Adds or removes a dummy prompt"},
		func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			defer mu.Unlock()
			dummyPrompt = !dummyPrompt
			if dummyPrompt {
				server.AddPrompt(&mcp.Prompt{Name: dummyPromptName, Description: "Dummy prompt"},
					func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
						return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{
							{Role: "user", Content: &mcp.TextContent{Text: "dummy"}},
						}}, nil
					})
				return text("added " + dummyPromptName), nil, nil
			}
			server.RemovePrompts(dummyPromptName)
			return text("removed " + dummyPromptName), nil, nil
		})

	type updateIn struct {
		URI string `json:"uri" jsonschema:"URI of the resource that changed"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "trigger_resource_update", Description: "Sends notifications/resources/updated for uri"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in updateIn) (*mcp.CallToolResult, any, error) {
			if in.URI == "" {
				in.URI = readmeURI
			}
			if err := server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: in.URI}); err != nil {
				return nil, nil, err
			}
			return text("updated " + in.URI), nil, nil
		})

	// SEP-2575 diagnostic tools the conformance scenario server-stateless
	// probes (same behaviour as go-sdk's conformance/everything-server).
	mcp.AddTool(server, &mcp.Tool{Name: "test_missing_capability", Description: "Requires the sampling client capability"},
		func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			if caps := req.ClientCapabilities(); caps != nil && caps.Sampling != nil {
				return text("sampling declared"), nil, nil
			}
			data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{
				RequiredCapabilities: &mcp.ClientCapabilities{Sampling: &mcp.SamplingCapabilities{}},
			})
			return nil, nil, &jsonrpc.Error{
				Code:    mcp.CodeMissingRequiredClientCapabilities,
				Message: "sampling capability required but not declared by client",
				Data:    data,
			}
		})
	mcp.AddTool(server, &mcp.Tool{Name: "test_streaming_elicitation", Description: "Returns a plain result"},
		func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return text("result frames only"), nil, nil
		})
	mcp.AddTool(server, &mcp.Tool{Name: "test_logging_tool", Description: "Tries to log; dropped without _meta logLevel"},
		func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			_ = req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "test_logging_tool executed"})
			return text("log attempted"), nil, nil
		})

	return server
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// discoverCapabilities returns, as JSON, exactly the capabilities object that
// server advertises in server/discover, by running server/discover over an
// in-memory transport (go-sdk v1.8.0 has no exported Server.Capabilities).
func discoverCapabilities(ctx context.Context, server *mcp.Server) ([]byte, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "caps-probe", Version: "0"}, nil)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res := cs.InitializeResult()
	if res.ProtocolVersion != "2026-07-28" {
		return nil, fmt.Errorf("negotiated %s, not 2026-07-28", res.ProtocolVersion)
	}
	return json.Marshal(res.Capabilities)
}
