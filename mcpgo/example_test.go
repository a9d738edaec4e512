package mcpgo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/mcpgo"
)

const exampleMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// An mcp-go server with no listen code in it, over HTTP: AddTool reaches
// the listen that asked for tool list changes, tagged with its id.
func ExampleNewHandler() {
	s := server.NewMCPServer("demo", "1.0.0", server.WithToolCapabilities(true))
	h, err := mcpgo.NewHandler(s, mcpgo.HandlerOptions{})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(h)
	defer ts.Close()

	body := `{"jsonrpc":"2.0","id":"tools","method":"subscriptions/listen","params":{` + exampleMeta + `,"notifications":{"toolsListChanged":true}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(body))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "subscriptions/listen"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	events := listentest.NewSSEReader(resp.Body)
	print := func() {
		data, _ := events.Data()
		var m struct {
			Method string `json:"method"`
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
			ID     string         `json:"id"`
			Result map[string]any `json:"result"`
		}
		_ = json.Unmarshal(data, &m)
		if m.Result != nil {
			fmt.Println("result", m.Result["resultType"], "for", m.ID)
			return
		}
		fmt.Println(m.Method, "tagged", m.Params.Meta["io.modelcontextprotocol/subscriptionId"])
	}
	print() // the acknowledgement

	s.AddTool(mcp.NewTool("added"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hi"), nil
	})
	print()
	_ = h.Shutdown(context.Background())
	print() // the completion
	// Output:
	// notifications/subscriptions/acknowledged tagged tools
	// notifications/tools/list_changed tagged tools
	// result complete for tools
}

// The same server over stdio, one connection: a listen and a tools/call,
// the call answered by mcp-go with the client's id token exactly.
func ExampleStdio_Serve() {
	s := server.NewMCPServer("demo", "1.0.0", server.WithToolCapabilities(true))
	s.AddTool(mcp.NewTool("echo"), func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("hi"), nil
	})
	x, err := mcpgo.NewStdio(s, mcpgo.StdioOptions{})
	if err != nil {
		panic(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- x.Serve(context.Background(), inR, outW)
		outW.Close()
	}()
	go func() { // the client's requests; the input ends once both are answered
		fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{`+exampleMeta+`,"notifications":{"toolsListChanged":true}}}`)
		fmt.Fprintln(inW, `{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{`+exampleMeta+`,"name":"echo"}}`)
	}()
	lines := bufio.NewScanner(outR)
	for range 2 {
		lines.Scan()
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(lines.Bytes(), &m)
		fmt.Println(strings.TrimSpace(m.Method + " " + string(m.ID)))
	}
	inW.Close()
	for lines.Scan() {
	}
	fmt.Println(<-done)
	_ = x.Shutdown(context.Background())
	// Unordered output:
	// notifications/subscriptions/acknowledged
	// 9007199254740993
	// <nil>
}
