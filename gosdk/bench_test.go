package gosdk_test

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/gosdk"
)

// BenchmarkCapabilities is the per-listen cost of reading the capabilities
// with an in-memory server/discover.
func BenchmarkCapabilities(b *testing.B) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	br, err := gosdk.NewBridge(context.Background(), srv, gosdk.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := br.Capabilities(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
