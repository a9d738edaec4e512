package listen_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// A listen on a folder, with SubResources: the updates of the files inside
// it are delivered, the others dropped, and CanRead is asked about each
// sub-resource delivered.
func ExampleOptions_subResources() {
	h, _ := hub.New(hub.Options{})
	opts := &listen.Options{
		Capabilities: listen.Capabilities{ResourcesSubscribe: true},
		SubResources: &listen.SubResources{},
		CanRead: func(_ context.Context, req *listen.Request, uri string) bool {
			return !strings.Contains(uri, "/private/") // decide from req.Auth in a real server
		},
	}
	req := &listen.Request{
		ID:                 jsonrpc.StringID("l1"),
		ProtocolVersion:    spec.ProtocolVersion,
		Notifications:      listen.Filter{spec.KeyResourceSubscriptions: []any{"file:///project/"}},
		ClientCapabilities: map[string]any{},
	}
	sub, err := listen.Open(context.Background(), h, req, opts)
	if err != nil {
		panic(err)
	}
	defer sub.Close(nil)

	for _, uri := range []string{
		"file:///project/src/main.go",
		"file:///project/private/key.pem",
		"file:///projectx/a",
		"file:///project/../etc/passwd",
		"file:///project%2Fa",
		"FILE:///project/README.md",
	} {
		r, _ := h.ResourceUpdated(uri) // the hub selects the folder listener
		msg, _ := sub.Notification(listen.ResourceUpdated(uri))
		fmt.Printf("%-33s hub matched %d, delivered %v\n", uri, r.Matched, msg != nil)
	}
	// Output:
	// file:///project/src/main.go       hub matched 1, delivered true
	// file:///project/private/key.pem   hub matched 1, delivered false
	// file:///projectx/a                hub matched 0, delivered false
	// file:///project/../etc/passwd     hub matched 0, delivered false
	// file:///project%2Fa               hub matched 0, delivered false
	// FILE:///project/README.md         hub matched 1, delivered true
}
