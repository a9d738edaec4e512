package listentest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/listentest"
	"github.com/mcplisten/listen/spec"
)

// A test opens a subscription on a listentest.Source, drives its stream and
// checks what Serve writes.
func ExampleSource() {
	src := listentest.NewSource()
	req := &listen.Request{
		ID:              jsonrpc.IntID(1),
		ProtocolVersion: spec.ProtocolVersion,
		Notifications:   listen.Filter{"toolsListChanged": true},
	}
	sub, err := listen.Open(context.Background(), src, req, &listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true},
	})
	if err != nil {
		panic(err)
	}
	st := <-src.Opened()
	st.Send(listen.ToolsListChanged())
	st.End()
	reason := sub.Serve(context.Background(), listen.Sink{Write: func(msg []byte) error {
		fmt.Printf("%s\n", msg)
		return nil
	}})
	fmt.Println(listen.Classify(reason), st.Closes())
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}
	// {"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
	// complete 1
}

// SSEReader reads a listen's Streamable HTTP response body.
func ExampleSSEReader() {
	body := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n: keep-alive\n\n"
	r := listentest.NewSSEReader(strings.NewReader(body))
	m, err := r.Message()
	if err != nil {
		panic(err)
	}
	fmt.Println(m["method"])
	// Output: notifications/tools/list_changed
}

// An HTTP server and its client talk over a PipeListener: no socket, so
// the same code also runs inside a testing/synctest bubble.
func ExamplePipeListener() {
	l := listentest.NewPipeListener()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n")
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()

	tr := &http.Transport{DialContext: l.Dial}
	resp, err := (&http.Client{Transport: tr}).Post("http://pipe/mcp", "application/json", strings.NewReader("{}"))
	if err != nil {
		panic(err)
	}
	m, err := listentest.NewSSEReader(resp.Body).Message()
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	tr.CloseIdleConnections()
	fmt.Println(resp.StatusCode, m["method"])

	_ = srv.Shutdown(context.Background()) // closes l: Serve returns
	fmt.Println(<-served)
	// Output:
	// 200 notifications/tools/list_changed
	// http: Server closed
}
