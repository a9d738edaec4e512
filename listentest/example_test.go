package listentest_test

import (
	"context"
	"fmt"
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
