// Package gosdk adds MCP 2026-07-28 subscriptions/listen, served by this
// library, to a server built on the official go-sdk (v1.8.0), over HTTP or
// stdio, in one call, and makes the go-sdk server's own changes reach every
// listen without a publish call in your code.
//
// Over Streamable HTTP:
//
//	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{})
//	if err != nil {
//		return err
//	}
//	http.Handle("/mcp", h) // listens: this library; everything else: the go-sdk
//	defer h.Shutdown(ctx)  // every open listen gets its completion result
//
// Over stdio (standard input and output), in one line, or with the handle
// that also gives Hub, Bridge, Stats and Shutdown:
//
//	err := gosdk.Run(ctx, server, gosdk.StdioOptions{})
//
//	s, err := gosdk.NewStdio(server, gosdk.StdioOptions{}) // then s.Run(ctx)
//
// The go-sdk server needs no listen code: AddTool, RemoveTools, AddPrompt,
// RemovePrompts, AddResource, RemoveResources, AddResourceTemplate and
// RemoveResourceTemplates reach the listens that asked for that list change
// (after the go-sdk's own 10 ms debounce), and Server.ResourceUpdated(uri)
// reaches the listens watching that URI, and no others. Listens are
// acknowledged against exactly the capabilities server/discover advertises
// (inferred or explicit), read from the server itself; a server that
// advertises nothing a listen can receive is logged as a warning. Over
// HTTP a listen naming a version other than 2026-07-28 is answered by the
// go-sdk, so the endpoint's -32022 error and its list of supported
// versions are the go-sdk's own; over stdio every listen is this
// library's (see Stdio.Serve).
//
// # Sub-resources
//
// With Options.Listen.SubResources (see listen.SubResources),
// a listen on file:///project/ also receives updates of the files below it,
// selected by the hub's folder index. The go-sdk, however, matches the URI
// of Server.ResourceUpdated exactly against its own subscriptions, so it
// tells the Bridge about an update only for a URI some listen names
// exactly. Publish the update of a sub-resource that no listen names with
// the hub (Handler.Hub().ResourceUpdated(uri), or Bridge.Hub()): one call,
// which reaches the exact and the folder listens alike.
//
// # How it works
//
// A Bridge holds two in-process sessions of the go-sdk server: an
// initialize-era observer, to which the go-sdk sends every list change and,
// for the URIs it subscribed to while a listen watches them, every
// resources/updated, each republished into a hub.Hub; and a 2026-07-28
// probe that reads the capabilities with server/discover. See Bridge.
// NewHandler routes listens to a streamhttp.Handler on the Bridge's Source
// and the rest to the go-sdk's StreamableHTTPHandler (stateless).
// Stdio.Serve shares one stdio.Conn between a stdio.Server on the Bridge's
// Source, which serves the listens and the cancellations, and the go-sdk
// server, connected over a transport on the Conn, which gets everything
// else under ids of the Conn's own; both write through the Conn's one
// writer.
// Servers not built on the go-sdk use streamhttp.Front and their own
// capabilities instead (see the README).
//
// # Lifecycle and goroutines
//
// NewHandler (and NewBridge) connect the two in-process sessions; their
// goroutines are the go-sdk's, and end with Handler.Shutdown (Bridge.Close).
// The Bridge starts none of its own, but one per ping the go-sdk sends it
// (with ServerOptions.KeepAlive), which ends once answered or closed, and
// which Bridge.Close waits for. A change is republished on the go-sdk
// goroutine that notifies it: its debounce timer for a list change, the
// caller of Server.ResourceUpdated for an update; the hub never blocks it.
// Stdio.Serve runs the stdio.Conn (its goroutines are the stdio package's)
// and the go-sdk session, and returns after all of them (but a Read or
// Write the stdio package could not interrupt; see stdio.Server.Serve);
// Stdio.Shutdown waits for every Serve and closes the Bridge.
//
// # Delay from a go-sdk change to the listen's notification
//
// Measured from the go-sdk call to the notification read by an HTTP client
// on loopback, one listen, 100 changes per run, 5 runs (BenchmarkChangeToNotification,
// go test -run '^$' -bench ChangeToNotification -benchtime 100x -count 5,
// 2-core shared VM, Go 1.26.8):
//
//	Server.ResourceUpdated  median 22 µs (medians of the runs 18–22 µs),
//	                        10th percentile 17–21 µs, 90th 43–89 µs
//	AddTool / RemoveTools   median 10.74 ms (10.72–11.00 ms; the go-sdk's
//	                        10 ms debounce plus its timer), 10th percentile
//	                        10.40–10.61 ms, 90th 11.1–17.7 ms
//
// Listens themselves pay nothing for the capabilities: they are read once,
// again at the first listen after a list change, and again (at most every
// RefreshInterval) when a listen asks for a kind the last reading did not
// allow; an in-memory server/discover costs about 0.5 ms and 215 KB of
// garbage in the go-sdk (BenchmarkCapabilities).
package gosdk
