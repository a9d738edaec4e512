// Package mcpgofixture builds the benchmark's plain mcp-go MCP server
// (bench/cmd/mcpgoserver, and the in-process servers of
// bench/cmd/mcpgobench): a resource, a prompt, an echo tool, the trigger
// tools the official conformance suite calls and the diagnostic tools its
// server-stateless scenario probes, exactly those of examples/mcpgo (its
// server.go, which stands alone to be copied, so the two are kept equal by
// hand; TestServer checks the tool names and capabilities of both), so that
// the fan-out compares servers that differ only by this library. It
// contains no code of this library: its tools change the mcp-go server
// (AddTool, DeleteTools, AddPrompt, DeletePrompts,
// SendNotificationToAllClients) and nothing else.
package mcpgofixture

import (
	"context"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// ReadmeURI is the URI of the server's one static resource.
const ReadmeURI = "test://static/readme"

// MissingCapabilityTool is the conformance suite's diagnostic tool that
// needs the sampling client capability.
const MissingCapabilityTool = "test_missing_capability"

const (
	dummyToolName   = "dummy_tool"
	dummyPromptName = "dummy_prompt"
)

// New builds the server (named name, version version): every list change
// and resource subscriptions declared, and the tools, prompt and resource
// of the package documentation.
func New(name, version string) *server.MCPServer {
	s := server.NewMCPServer(name, version,
		server.WithToolCapabilities(true),
		server.WithPromptCapabilities(true),
		server.WithResourceCapabilities(true, true),
	)

	s.AddResource(mcp.NewResource(ReadmeURI, "readme", mcp.WithMIMEType("text/plain")),
		func(_ context.Context, r mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{
				URI: r.Params.URI, MIMEType: "text/plain", Text: "mcpgo: an mcp-go server.\n",
			}}, nil
		})

	s.AddPrompt(mcp.NewPrompt("greeting", mcp.WithPromptDescription("Says hello"), mcp.WithArgument("name")),
		func(_ context.Context, r mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			name := r.Params.Arguments["name"]
			if name == "" {
				name = "world"
			}
			return mcp.NewGetPromptResult("", []mcp.PromptMessage{
				mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("Hello, "+name+"!")),
			}), nil
		})

	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes its text argument"),
		mcp.WithString("text", mcp.Description("text to echo back"))),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText(r.GetString("text", "")), nil
		})

	// Each call adds or removes a dummy tool (prompt): mcp-go broadcasts
	// the list change at once.
	var mu sync.Mutex
	dummyTool, dummyPrompt := false, false
	s.AddTool(mcp.NewTool("test_trigger_tool_change", mcp.WithDescription("Adds or removes a dummy tool")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			dummyTool = !dummyTool
			if dummyTool {
				s.AddTool(mcp.NewTool(dummyToolName, mcp.WithDescription("Dummy tool")),
					func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
						return mcp.NewToolResultText("dummy"), nil
					})
			} else {
				s.DeleteTools(dummyToolName)
			}
			return mcp.NewToolResultText(fmt.Sprintf("%s present: %v", dummyToolName, dummyTool)), nil
		})
	s.AddTool(mcp.NewTool("test_trigger_prompt_change", mcp.WithDescription("Adds or removes a dummy prompt")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			mu.Lock()
			defer mu.Unlock()
			dummyPrompt = !dummyPrompt
			if dummyPrompt {
				s.AddPrompt(mcp.NewPrompt(dummyPromptName, mcp.WithPromptDescription("Dummy prompt")),
					func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
						return mcp.NewGetPromptResult("", []mcp.PromptMessage{
							mcp.NewPromptMessage(mcp.RoleUser, mcp.NewTextContent("dummy")),
						}), nil
					})
			} else {
				s.DeletePrompts(dummyPromptName)
			}
			return mcp.NewToolResultText(fmt.Sprintf("%s present: %v", dummyPromptName, dummyPrompt)), nil
		})

	// mcp-go's one way to tell clients a resource changed.
	s.AddTool(mcp.NewTool("trigger_resource_update", mcp.WithDescription("Sends notifications/resources/updated for uri"),
		mcp.WithString("uri", mcp.Description("URI of the resource that changed"))),
		func(_ context.Context, r mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			uri := r.GetString("uri", ReadmeURI)
			s.SendNotificationToAllClients(mcp.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
			return mcp.NewToolResultText("updated " + uri), nil
		})

	// SEP-2575 diagnostic tools the conformance scenario server-stateless
	// probes.
	s.AddTool(mcp.NewTool(MissingCapabilityTool, mcp.WithDescription("Requires the sampling client capability")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.ClientCapabilities != nil && info.ClientCapabilities.Sampling != nil {
				return mcp.NewToolResultText("sampling declared"), nil
			}
			// mcp-go answers a handler's error with -32603; over HTTP,
			// examples/mcpgo answers with -32021 before mcp-go is called.
			return nil, mcp.MissingRequiredClientCapabilityError{Capability: "sampling"}
		})
	s.AddTool(mcp.NewTool("test_streaming_elicitation", mcp.WithDescription("Returns a plain result")),
		func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultText("result frames only"), nil
		})
	s.AddTool(mcp.NewTool("test_logging_tool", mcp.WithDescription("Tries to log; dropped without _meta logLevel")),
		func(ctx context.Context, _ mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = s.SendLogMessageToClient(ctx, mcp.NewLoggingMessageNotification(mcp.LoggingLevelInfo, "", "test_logging_tool executed"))
			return mcp.NewToolResultText("log attempted"), nil
		})
	return s
}
