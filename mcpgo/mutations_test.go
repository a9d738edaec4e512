package mcpgo_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen/mcpgo"
)

// TestEveryMutationReachesItsListens: each of mcp-go's Add*, Set*, Delete*
// and Remove* calls on tools, prompts, resources and resource templates
// reaches the listen of its kind with one notification, and no other
// listen; the stream of each kind holds exactly its own.
func TestEveryMutationReachesItsListens(t *testing.T) {
	srv := plainServer()
	h, err := mcpgo.NewHandler(srv, mcpgo.HandlerOptions{})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	defer ts.Close()
	streams := map[string]*stream{
		"tools":     openListen(t, ts.URL, `"tools"`, map[string]any{"toolsListChanged": true}),
		"prompts":   openListen(t, ts.URL, `"prompts"`, map[string]any{"promptsListChanged": true}),
		"resources": openListen(t, ts.URL, `"resources"`, map[string]any{"resourcesListChanged": true}),
	}
	tool := server.ServerTool{Tool: mcp.NewTool("t1"), Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText(""), nil
	}}
	prompt := server.ServerPrompt{Prompt: mcp.NewPrompt("p1"), Handler: func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	}}
	res := server.ServerResource{Resource: mcp.NewResource("test://r1", "r1")}
	tmpl := server.ServerResourceTemplate{Template: mcp.NewResourceTemplate("test://t/{id}", "t")}
	mutations := []struct {
		name, kind string
		do         func()
	}{
		{"AddTool", "tools", func() { srv.AddTool(tool.Tool, tool.Handler) }},
		{"AddTools", "tools", func() { srv.AddTools(tool) }},
		{"SetTools", "tools", func() { srv.SetTools(tool) }},
		{"DeleteTools", "tools", func() { srv.DeleteTools("t1") }},
		{"AddPrompt", "prompts", func() { srv.AddPrompt(prompt.Prompt, prompt.Handler) }},
		{"AddPrompts", "prompts", func() { srv.AddPrompts(prompt) }},
		{"SetPrompts", "prompts", func() { srv.SetPrompts(prompt) }},
		{"DeletePrompts", "prompts", func() { srv.DeletePrompts("p1") }},
		{"AddResource", "resources", func() { srv.AddResource(res.Resource, res.Handler) }},
		{"AddResources", "resources", func() { srv.AddResources(res) }},
		{"SetResources", "resources", func() { srv.SetResources(res) }},
		{"RemoveResource", "resources", func() { srv.RemoveResource("test://r1") }},
		{"AddResources again", "resources", func() { srv.AddResources(res) }},
		{"DeleteResources", "resources", func() { srv.DeleteResources("test://r1") }},
		{"AddResourceTemplate", "resources", func() { srv.AddResourceTemplate(tmpl.Template, tmpl.Handler) }},
		{"AddResourceTemplates", "resources", func() { srv.AddResourceTemplates(tmpl) }},
		{"SetResourceTemplates", "resources", func() { srv.SetResourceTemplates(tmpl) }},
	}
	method := map[string]string{
		"tools": "notifications/tools/list_changed", "prompts": "notifications/prompts/list_changed",
		"resources": "notifications/resources/list_changed",
	}
	want := map[string]int{}
	for _, m := range mutations {
		m.do()
		want[m.kind]++
		got := streams[m.kind].next()
		assert.Equal(t, method[m.kind], got.Method, m.name)
		assert.Equal(t, streams[m.kind].ack.tag(), got.tag(), m.name)
	}
	require.NoError(t, h.Shutdown(context.Background()))
	for kind, s := range streams {
		rest := s.rest()
		assert.Len(t, rest, 1, "%s: only the completion is left", kind)
		s.resp.Body.Close()
	}
	assert.Equal(t, uint64(len(mutations)), h.Bridge().Stats().ListChanges)
}
