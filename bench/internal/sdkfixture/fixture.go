// Package fixture builds the go-sdk v1.8.0 MCP server shared by the example
// programs: a resource, a prompt, an echo tool, the trigger tools the
// official conformance suite calls, and the diagnostic tools its
// server-stateless scenario probes. Ours (examples/server over HTTP,
// examples/stdio over stdin/stdout) and the benchmark's plain go-sdk server
// (bench/cmd/gosdkserver, through its copy bench/internal/sdkfixture, which
// a test there keeps identical) are built from it, so they offer exactly the
// same tools and capabilities. It contains no code of this library: its
// tools change the go-sdk server (AddTool, RemoveTools, AddPrompt,
// RemovePrompts, ResourceUpdated) and nothing else.
package sdkfixture

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ReadmeURI is the URI of the server's one static resource.
const ReadmeURI = "test://static/readme"

const (
	dummyToolName   = "dummy_tool"
	dummyPromptName = "dummy_prompt"
)

// Options configure New.
type Options struct {
	// Name and Version name the server (serverInfo).
	Name, Version string
	Logger        *slog.Logger
}

// Capabilities is what the server declares: every list change and resource
// subscriptions.
func Capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: true},
		Prompts:   &mcp.PromptCapabilities{ListChanged: true},
		Resources: &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
	}
}

// New builds the go-sdk server with explicitly declared capabilities,
// the test tools, one prompt and one resource.
func New(opts Options) *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: opts.Name, Version: opts.Version}, &mcp.ServerOptions{
		Logger: opts.Logger,
		// Any non-nil field here overrides what the SDK would infer. Setting the
		// struct also drops the historical default {"logging":{}}.
		Capabilities: Capabilities(),
		// Required: the built-in subscriptions/listen calls the SDK's subscribe
		// path for every resourceSubscriptions URI, which fails with -32601
		// unless SubscribeHandler is set (and NewServer panics unless both are).
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})

	server.AddResource(&mcp.Resource{
		URI:      ReadmeURI,
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
			} else {
				server.RemoveTools(dummyToolName)
			}
			return text(fmt.Sprintf("%s present: %v", dummyToolName, dummyTool)), nil, nil
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
			} else {
				server.RemovePrompts(dummyPromptName)
			}
			return text(fmt.Sprintf("%s present: %v", dummyPromptName, dummyPrompt)), nil, nil
		})

	type updateIn struct {
		URI string `json:"uri" jsonschema:"URI of the resource that changed"`
	}
	mcp.AddTool(server, &mcp.Tool{Name: "trigger_resource_update", Description: "Sends notifications/resources/updated for uri"},
		func(ctx context.Context, _ *mcp.CallToolRequest, in updateIn) (*mcp.CallToolResult, any, error) {
			if in.URI == "" {
				in.URI = ReadmeURI
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
