// Command lifecycle runs one subscriptions/listen stream in process, from the
// raw request to the completion result, and prints every step: the narrowed
// filter the source sees, the acknowledgement, each pull, the notifications,
// a dropped event, the completion and the close reason.
//
//	go run ./examples/lifecycle
package main

import (
	"context"
	"fmt"
	"log"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// feed is a small Source: it hands out a fixed list of changes, one per
// pull, then ends the stream gracefully.
type feed struct{ changes []listen.Event }

func (f *feed) Open(_ context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	b, _ := supported.MarshalJSON()
	fmt.Printf("source: open for request %s, supported filter %s\n", req.ID.Raw(), b)
	return supported, &feedStream{changes: f.changes}, nil
}

type feedStream struct{ changes []listen.Event }

func (s *feedStream) Next() (listen.Event, error) {
	if len(s.changes) == 0 {
		fmt.Println("source: next -> end of stream")
		return listen.Event{}, listen.ErrClosed
	}
	ev := s.changes[0]
	s.changes = s.changes[1:]
	fmt.Printf("source: next -> %s %s\n", ev.Kind, ev.URI)
	return ev, nil
}

func (s *feedStream) Close(reason error) {
	fmt.Printf("source: close (%s)\n", listen.Classify(reason))
}

func main() {
	// What a client sends: tools, prompts and one resource.
	body := []byte(`{"jsonrpc":"2.0","id":"listen-1","method":"subscriptions/listen","params":{
	  "_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
	           "io.modelcontextprotocol/clientCapabilities":{}},
	  "notifications":{"toolsListChanged":true,"promptsListChanged":true,
	                   "resourceSubscriptions":["file:///project/config.json"]}}}`)
	req, err := listen.ParseRequest(body)
	if err != nil {
		log.Fatalf("%s", jsonrpc.ErrorResponse(req.ID, err))
	}

	// What the server advertises in server/discover: no prompts.
	opts := &listen.Options{
		Capabilities: listen.Capabilities{
			ToolsListChanged:   true,
			ResourcesSubscribe: true,
		},
		ServerInfo: listen.Implementation{Name: "lifecycle-example", Version: "1.0.0"},
	}
	src := &feed{changes: []listen.Event{
		listen.ToolsListChanged(),
		listen.PromptsListChanged(), // not acknowledged: dropped
		listen.ResourceUpdated("file:///project/config.json").WithMetadata(map[string]any{"com.example/seq": 1}),
		listen.ResourceUpdated("file:///elsewhere.txt"), // not subscribed: dropped
	}}

	sub, err := listen.Open(context.Background(), src, req, opts)
	if err != nil {
		log.Fatalf("%s", jsonrpc.ErrorResponse(req.ID, err))
	}
	reason := sub.Serve(context.Background(), listen.Sink{Write: func(msg []byte) error {
		fmt.Printf("wire:   %s\n", msg)
		return nil
	}})
	fmt.Printf("done:   closed with %q (%s)\n", reason, listen.Classify(reason))
}
