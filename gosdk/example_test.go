package gosdk_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/gosdk"
	"github.com/mcplisten/listen/listentest"
)

// A plain go-sdk server behind NewHandler: the listen is acknowledged with
// what server/discover advertises (tools.listChanged, inferred from the
// registered tool), and the go-sdk's own AddTool reaches it.
func ExampleNewHandler() {
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1.0.0"}, nil)
	noop := func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	}
	mcp.AddTool(server, &mcp.Tool{Name: "first"}, noop)

	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(h)
	defer ts.Close()

	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` +
		`"notifications":{"toolsListChanged":true,"promptsListChanged":true},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	events := listentest.NewSSEReader(resp.Body)
	next := func() string {
		data, err := events.Data()
		if err != nil {
			return err.Error()
		}
		return string(data)
	}
	fmt.Println(next()) // the acknowledgement: no prompts are registered

	mcp.AddTool(server, &mcp.Tool{Name: "second"}, noop) // no publish call
	fmt.Println(next())

	_ = h.Shutdown(context.Background())
	fmt.Println(next())
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}
	// {"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
}
