package gosdk_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/gosdk"
)

// discoverServer builds a go-sdk server named "disco" 0.1.0 with opts and
// registers what with says.
func discoverServer(opts *mcp.ServerOptions, with func(*mcp.Server)) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "disco", Version: "0.1.0"}, opts)
	if with != nil {
		with(s)
	}
	return s
}

func discoverTool(s *mcp.Server) {
	mcp.AddTool(s, &mcp.Tool{Name: "noop"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
}

func discoverPrompt(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "hello"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
}

func discoverResource(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: "test://r", Name: "r"}, func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "r"}}}, nil
	})
}

// TestDiscover: Discover reports what the server advertises, whether the
// go-sdk inferred it from what is registered or ServerOptions.Capabilities
// set it, with the server's name and its supported versions.
func TestDiscover(t *testing.T) {
	subscribe := func(context.Context, *mcp.SubscribeRequest) error { return nil }
	unsubscribe := func(context.Context, *mcp.UnsubscribeRequest) error { return nil }
	explicit := &mcp.ServerCapabilities{
		Tools:     &mcp.ToolCapabilities{ListChanged: false},
		Resources: &mcp.ResourceCapabilities{Subscribe: true},
	}
	explicit.AddExtension("io.modelcontextprotocol/tasks", map[string]any{"maxTasks": 3})
	tests := []struct {
		name string
		opts *mcp.ServerOptions
		with func(*mcp.Server)
		want listen.Capabilities
	}{
		{name: "nothing registered", want: listen.Capabilities{}},
		{name: "a tool", with: discoverTool, want: listen.Capabilities{ToolsListChanged: true}},
		{
			name: "inferred from everything",
			opts: &mcp.ServerOptions{SubscribeHandler: subscribe, UnsubscribeHandler: unsubscribe},
			with: func(s *mcp.Server) { discoverTool(s); discoverPrompt(s); discoverResource(s) },
			want: listen.Capabilities{ToolsListChanged: true, PromptsListChanged: true, ResourcesListChanged: true, ResourcesSubscribe: true},
		},
		{
			name: "resources without a subscribe handler",
			with: discoverResource,
			want: listen.Capabilities{ResourcesListChanged: true},
		},
		{
			name: "explicit capabilities win over what is registered",
			opts: &mcp.ServerOptions{Capabilities: explicit, SubscribeHandler: subscribe, UnsubscribeHandler: unsubscribe},
			with: func(s *mcp.Server) { discoverTool(s); discoverResource(s) },
			want: listen.Capabilities{
				ResourcesSubscribe: true,
				Extensions:         map[string]any{"io.modelcontextprotocol/tasks": map[string]any{"maxTasks": json.Number("3")}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := gosdk.Discover(t.Context(), discoverServer(tt.opts, tt.with))
			require.NoError(t, err)
			assert.Equal(t, tt.want, d.Capabilities)
			fromJSON, err := listen.CapabilitiesFrom(d.CapabilitiesJSON)
			require.NoError(t, err)
			assert.Equal(t, d.Capabilities, fromJSON, "Capabilities is CapabilitiesJSON read with CapabilitiesFrom")
			assert.Equal(t, listen.Implementation{Name: "disco", Version: "0.1.0"}, d.ServerInfo)
			require.NotEmpty(t, d.Versions)
			assert.Equal(t, "2026-07-28", d.Versions[0], "newest first")
		})
	}
}

// TestDiscoverMatchesServerDiscoverOverHTTP: what Discover reads in memory
// is byte for byte what a client gets from the same server's own
// server/discover over the go-sdk's HTTP handler.
func TestDiscoverMatchesServerDiscoverOverHTTP(t *testing.T) {
	server := discoverServer(&mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	}, func(s *mcp.Server) { discoverTool(s); discoverPrompt(s); discoverResource(s) })
	d, err := gosdk.Discover(t.Context(), server)
	require.NoError(t, err)

	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true}))
	defer ts.Close()
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": "server/discover",
		"params": map[string]any{"_meta": map[string]any{
			"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
			"io.modelcontextprotocol/clientCapabilities": map[string]any{},
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "discover-test", "version": "0"},
		}},
	})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, ts.URL, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "server/discover")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var got struct {
		Result struct {
			SupportedVersions []string        `json:"supportedVersions"`
			Capabilities      json.RawMessage `json:"capabilities"`
		} `json:"result"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	assert.JSONEq(t, string(got.Result.Capabilities), string(d.CapabilitiesJSON))
	assert.Equal(t, got.Result.SupportedVersions, d.Versions)
}

// TestDiscoverReadsTheServerAsItIsNow: a second Discover after a change
// sees the change, and Discover leaves no session behind on the server.
func TestDiscoverReadsTheServerAsItIsNow(t *testing.T) {
	server := discoverServer(nil, nil)
	d, err := gosdk.Discover(t.Context(), server)
	require.NoError(t, err)
	assert.False(t, d.Capabilities.ToolsListChanged)

	discoverTool(server)
	d, err = gosdk.Discover(t.Context(), server)
	require.NoError(t, err)
	assert.True(t, d.Capabilities.ToolsListChanged, "the tool registered after the first Discover")

	n := 0
	for range server.Sessions() {
		n++
	}
	assert.Zero(t, n, "Discover closes its in-memory session before it returns")
}

func TestDiscoverErrors(t *testing.T) {
	_, err := gosdk.Discover(t.Context(), nil)
	require.Error(t, err)
	assert.True(t, strings.Contains(err.Error(), "nil *mcp.Server"), err.Error())

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = gosdk.Discover(ctx, discoverServer(nil, discoverTool))
	require.Error(t, err, "a context already done")
	assert.ErrorIs(t, err, context.Canceled)
}
