package gosdk_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen"
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

// One call, Handler.ResourceUpdated, reaches a listen naming the file and a
// folder listen above it (Options.Listen.SubResources), once each.
func ExampleHandler_ResourceUpdated() {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1.0.0"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	server.AddResourceTemplate(&mcp.ResourceTemplate{Name: "project", URITemplate: "file:///project/{+path}"},
		func(_ context.Context, r *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: r.Params.URI, Text: "..."}}}, nil
		})
	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{Options: gosdk.Options{
		Listen: listen.Options{SubResources: &listen.SubResources{}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(h)
	defer ts.Close()

	file := exampleListen(ts.URL, `"file"`, `{"resourceSubscriptions":["file:///project/notes.md"]}`)
	folder := exampleListen(ts.URL, `"folder"`, `{"resourceSubscriptions":["file:///project/"]}`)
	file()
	folder() // the acknowledgements

	_ = h.ResourceUpdated(context.Background(), "file:///project/notes.md")
	fmt.Println(file())
	fmt.Println(folder())
	_ = h.Shutdown(context.Background())
	for _, next := range []func() string{file, folder} {
		for next() != "EOF" { // the completion, then the end
		}
	}
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"file"},"uri":"file:///project/notes.md"}}
	// {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"folder"},"uri":"file:///project/notes.md"}}
}

// Behind the go-sdk's auth.RequireBearerToken, a listen's
// listen.Request.Auth is the go-sdk's *auth.TokenInfo, with no wiring.
func ExampleNewHandler_auth() {
	server := mcp.NewServer(&mcp.Implementation{Name: "example", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "t"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{
		WrapSource: func(src listen.Source) listen.Source { return whoSource{src} },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	verify := func(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		if token != "secret" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{UserID: "ann", Expiration: time.Now().Add(time.Hour)}, nil
	}
	ts := httptest.NewServer(auth.RequireBearerToken(verify, nil)(h))
	defer ts.Close()

	next := exampleListen(ts.URL, "1", `{"toolsListChanged":true}`, "Authorization", "Bearer secret")
	fmt.Println(next())
	_ = h.Shutdown(context.Background())
	for next() != "EOF" { // the completion, then the end
	}
	// Output:
	// listen opened for ann
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}
}

// whoSource prints who opens each listen.
type whoSource struct{ listen.Source }

func (s whoSource) Open(ctx context.Context, req *listen.Request, f listen.Filter) (listen.Filter, listen.Stream, error) {
	if ti, ok := req.Auth.(*auth.TokenInfo); ok {
		fmt.Println("listen opened for", ti.UserID)
	}
	return s.Source.Open(ctx, req, f)
}

// exampleListen opens a listen with id and filter at endpoint, with extra
// header pairs, and returns a function that reads its next message.
func exampleListen(endpoint, id, filter string, header ...string) func() string {
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":` + filter + `,` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return func() string { return err.Error() }
	}
	events := listentest.NewSSEReader(resp.Body)
	return func() string {
		data, err := events.Data()
		if err != nil {
			resp.Body.Close()
			return err.Error()
		}
		return string(data)
	}
}
