package natsbridge_test

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
)

// Two instances, each with its own hub joined to one NATS server: a change
// published on A's hub reaches the listener held by B.
func ExampleConnect() {
	ns, _ := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	ns.Start()
	defer ns.Shutdown()
	ns.ReadyForConnections(5 * time.Second)

	join := func() (*hub.Hub, *natsbridge.Bridge) {
		h, _ := hub.New(hub.Options{})
		br, err := natsbridge.Connect(ns.ClientURL(), h, natsbridge.Options{})
		if err != nil {
			panic(err)
		}
		return h, br
	}
	hubA, a := join()
	defer a.Close()
	hubB, b := join()
	defer b.Close()

	// A listener on B (listen.Open does this for a listen request).
	_, stream, _ := hubB.Open(context.Background(), &listen.Request{ID: jsonrpc.StringID("1")},
		listen.Filter{spec.KeyToolsListChanged: true})
	defer stream.Close(nil)

	hubA.ToolsListChanged()
	ev, _ := stream.Next()
	fmt.Println("B's listener got", ev.Kind)
	// Output: B's listener got tools_list_changed
}
