package hub_test

import (
	"context"
	"fmt"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// Publishing reaches only the listeners whose filter selects the event, and
// the report says how it was delivered. (go run ./examples/hub shows a whole
// server's worth: several subscriptions, an overflow and Complete.)
func ExampleHub_Publish() {
	h, _ := hub.New(hub.Options{MaxBuffer: 2})
	opts := &listen.Options{Capabilities: listen.Capabilities{
		ToolsListChanged:   true,
		ResourcesSubscribe: true,
	}}
	open := func(id int64, f listen.Filter) *listen.Subscription {
		req := &listen.Request{ID: jsonrpc.IntID(id), ProtocolVersion: spec.ProtocolVersion, Notifications: f}
		sub, err := listen.Open(context.Background(), h, req, opts)
		if err != nil {
			panic(err)
		}
		return sub
	}
	tools := open(1, listen.Filter{"toolsListChanged": true})
	readme := open(2, listen.Filter{"resourceSubscriptions": []any{"file:///README.md"}})

	fmt.Printf("%+v\n", h.ToolsListChanged())
	r, _ := h.ResourceUpdated("file:///README.md")
	fmt.Printf("%+v\n", r)
	r, _ = h.ResourceUpdated("file:///other.md")
	fmt.Printf("%+v\n", r)
	for range 2 {
		h.ToolsListChanged() // nobody pulls: the third one overflows the bound of 2
	}
	st := h.Stats()
	fmt.Printf("queued=%d dropped=%d policy=%s\n", st.Queued, st.Dropped, st.Overflow)

	tools.Close(listen.ErrComplete)
	readme.Close(listen.ErrComplete)
	fmt.Printf("subscriptions=%d\n", h.Stats().Subscriptions)
	// Output:
	// {Matched:1 Delivered:0 Buffered:1 Dropped:0 Ended:0}
	// {Matched:1 Delivered:0 Buffered:1 Dropped:0 Ended:0}
	// {Matched:0 Delivered:0 Buffered:0 Dropped:0 Ended:0}
	// queued=3 dropped=1 policy=drop_oldest
	// subscriptions=0
}
