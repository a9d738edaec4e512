// Package adapter is the seam between this library and an MCP SDK: what
// the gosdk (go-sdk) and mcpgo (mark3labs/mcp-go) modules share, and the
// way to add subscriptions/listen to a server built on another SDK.
//
// An adapter holds only what is specific to its SDK: how to call the SDK's
// server in process, how to see its list changes, and how to serve the
// SDK's own HTTP and stdio on the same endpoint. This package does the
// rest: the capabilities read from the server's server/discover (shared
// by the listens, read again after a list change), the hub the listens
// are served from and the republishing into it, the HTTP endpoint (one
// front, listens to streamhttp, the rest to the SDK by era, sessions of
// older clients bounded) and the stdio connection (listens to the stdio
// multiplexer, the rest to the SDK), with their Shutdown.
//
// # Adapting SDK X
//
// Implement an SDK for X's server and call NewBridge:
//
//	b, err := adapter.NewBridge(ctx, adapter.SDK{
//		Name:     "xsdk",
//		Server:   "the X server",
//		Discover: func(ctx context.Context) (json.RawMessage, error) {
//			// run server/discover on the server in process; return the result member
//		},
//		Observe: func(ctx context.Context, publish func(method, uri string) error) error {
//			// register with the server so that each list change and resource
//			// update it broadcasts calls publish(method, uri)
//		},
//		ResourceUpdated: func(ctx context.Context, uri string) error {
//			// reach the listens (publish) and the server's own subscribers
//		},
//		Close: func() error { /* end what Discover and Observe hold */ },
//	}, userOptions)
//
// Then serve b over HTTP with NewHandler, giving the SDK's own HTTP
// handler as HandlerOptions.Modern (and, if X keeps sessions for clients of
// earlier versions, as Legacy), and over stdio with NewStdio, giving
// StdioOptions.Connect, which serves X's server on the stdio.Conn's
// messages. The Handler and Stdio are what the adapter's users hold: the
// gosdk and mcpgo modules name them gosdk.Handler, mcpgo.Stdio and so on.
//
// # Goroutines
//
// A Bridge starts none (SDK.Observe may). A Handler's goroutines are
// streamhttp's and the SDK's; Shutdown ends them. Stdio.Serve runs the
// stdio package's goroutines and the SDK's session, and returns after
// them; Stdio.Shutdown waits for every Serve.
package adapter
