package listen_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// A listen bound to its principal: the hub indexes it under its tenant, an
// event scoped to another tenant never reaches it, and once its principal
// is revoked a re-check ends it with the early ending (here the default
// form: the completion result, with the reason in its _meta). A lifetime
// bound would end it the same way, with the reason "lifetime".
func ExampleAccess() {
	h, _ := hub.New(hub.Options{})
	revoked := map[string]bool{}
	access := &listen.Access{
		Every: time.Minute, // the schedule; Recheck below does it now
		Check: func(_ context.Context, auth any) error {
			if revoked[auth.(string)] {
				return listen.ErrRevoked
			}
			return nil
		},
	}
	defer access.Close() // at shutdown: stops the schedule
	opts := &listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true},
		Access:       access,
		Scopes:       func(req *listen.Request) []string { return []string{"tenant:acme"} },
		MaxLifetime:  24 * time.Hour,
	}
	req, _ := listen.ParseRequest([]byte(`{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{
		"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},
		"notifications":{"toolsListChanged":true}}}`))
	req.Auth = "bob" // what the transport's authentication returned
	sub, _ := listen.Open(context.Background(), h, req, opts)

	written := make(chan string, 8)
	done := make(chan error, 1)
	go func() {
		done <- sub.Serve(context.Background(), listen.Sink{Write: func(msg []byte) error {
			written <- string(msg)
			return nil
		}})
	}()
	fmt.Println(<-written) // the acknowledgement

	h.Publish(listen.ToolsListChanged().WithScope("tenant:globex")) // not bob's tenant: nothing
	h.Publish(listen.ToolsListChanged().WithScope("tenant:acme"))
	fmt.Println(<-written)

	revoked["bob"] = true
	ended := access.Recheck(context.Background(), authIs("bob"))
	reason := <-done
	fmt.Println(<-written)
	fmt.Println(ended, "stream ended:", listen.Classify(reason))
	// Output:
	// {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"notifications":{"toolsListChanged":true}}}
	// {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1}}}
	// {"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.github.mcplisten/endReason":"revoked","io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
	// 1 stream ended: revoked
}
