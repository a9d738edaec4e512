package cluster_test

import (
	"fmt"

	"github.com/mcplisten/listen/cluster"
)

// A node removes the _meta keys the MCP specification reserves from the
// events it receives; ReservedMetaKey is its rule.
func ExampleReservedMetaKey() {
	for _, k := range []string{
		"io.modelcontextprotocol/serverInfo",
		"dev.mcp/anything",
		"com.example.mcp/rev",
		"com.example/rev",
	} {
		fmt.Println(k, cluster.ReservedMetaKey(k))
	}
	// Output:
	// io.modelcontextprotocol/serverInfo true
	// dev.mcp/anything true
	// com.example.mcp/rev false
	// com.example/rev false
}
