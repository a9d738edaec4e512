// Package gosdk adds MCP 2026-07-28 subscriptions/listen, served by this
// library, to a server built on the official go-sdk (v1.8.0), over HTTP or
// stdio, in one call. The go-sdk server needs no listen code: its list
// changes (AddTool, RemoveTools, AddPrompt, RemovePrompts, AddResource,
// RemoveResources, AddResourceTemplate, RemoveResourceTemplates) reach every
// listen that asked for them, and a resource update is one call.
// examples/gosdk is a complete server to copy.
//
// # HTTP
//
//	h, err := gosdk.NewHandler(server, gosdk.HandlerOptions{})
//	if err != nil {
//		return err
//	}
//	http.Handle("/mcp", h)
//	...
//	err = h.Shutdown(ctx) // every open listen gets its completion result; then srv.Shutdown(ctx)
//
// Every request of the endpoint passes one front: the Origin and Host check
// (403; streamhttp.Options.AllowedHosts on a non-loopback address), a body
// bound (512 KiB by default, HandlerOptions.SDK.MaxRequestBodyBytes; 413),
// a read deadline that ends with the body (408) and a bound on every
// message's id (Options.Listen.MaxIDBytes, 256 bytes by default; 400 with
// -32600 "Invalid request: id must be at most 256 bytes", before the go-sdk
// sees it; over stdio the same, per line). Every listen is this
// library's, whatever its headers or version (see Handler).
//
// # stdio
//
//	err := gosdk.Run(ctx, server, gosdk.StdioOptions{})
//
// or, with the handle that also gives Hub, Bridge, Stats, ResourceUpdated
// and Shutdown, s, err := gosdk.NewStdio(server, opts), then s.Run(ctx).
// Every listen is this library's there too (see Stdio.Serve).
//
// # Lifecycle and goroutines
//
// NewHandler (and NewBridge) connect two in-process sessions of the go-sdk
// server (see Bridge); their goroutines are the go-sdk's, and end with
// Handler.Shutdown (Bridge.Close). The Bridge starts none of its own, but
// one per ping the go-sdk sends it (with ServerOptions.KeepAlive), which
// ends once answered or closed, and which Bridge.Close waits for. A list
// change is republished on the go-sdk's debounce timer goroutine, an update
// on the caller of ResourceUpdated; the hub never blocks either.
// Stdio.Serve runs the stdio.Conn (its goroutines are the stdio package's)
// and the go-sdk session, and returns after all of them (but a Read or
// Write the stdio package could not interrupt; see stdio.Server.Serve);
// Stdio.Shutdown waits for every Serve and closes the Bridge.
//
// # Resource updates and folders
//
//	err := h.ResourceUpdated(ctx, "file:///project/notes.md") // or s.ResourceUpdated
//
// tells every listen that covers the URI and every older client subscribed
// to it (resources/subscribe) once each. With Options.Listen.SubResources a
// listen on file:///project/ covers the files below it. Call it wherever a
// resource changes: the go-sdk's Server.ResourceUpdated alone reaches only
// its own subscribers, Hub().ResourceUpdated only the listens. Listen URIs
// cost the go-sdk nothing (your SubscribeHandler serves older clients only;
// authorise listens with listen.Options.CanRead). Resources registered
// without a SubscribeHandler are logged as a warning: resources.subscribe is
// then not advertised, and no listen can watch them.
//
// # Auth
//
//	http.Handle("/mcp", auth.RequireBearerToken(verify, nil)(h))
//
// A listen's listen.Request.Auth is then the request's *auth.TokenInfo, and
// its stream ends when the token's Expiration passes (its completion result,
// with the reason "expired"; reason listen.ErrExpired), so the client
// re-listens with a fresh
// token. The bridge's own in-process calls carry Options.Token (BridgeToken
// by default: UserID ClientName), which a receiving middleware that refuses
// requests without a token lets through.
//
// # Older clients
//
// The same endpoint serves clients of earlier versions with the go-sdk's
// stateful sessions (initialize, Mcp-Session-Id, the GET stream and its
// notifications, DELETE), and 2026-07-28 requests statelessly, on the same
// *mcp.Server: nothing to configure. SDK.Stateless serves stateless only.
// HandlerOptions.Sessions bounds those sessions in total (10,000) and per
// client (1,000: a flood from one client cannot lock the others out),
// closes those idle for 30 minutes (an open GET stream is use), bounds the
// GET streams, and answers 404, before the go-sdk sees it, a request naming
// a session id that was never issued or has ended (streamhttp.Sessions).
//
// # Delays, and the go-sdk's debounce
//
// From the change to the notification read by an HTTP client on loopback,
// one listen, 100 changes per run, 5 runs (BenchmarkChangeToNotification,
// 2-core shared VM, load 2.5, Go 1.26.8): Handler.ResourceUpdated median
// 24 µs [19–36 µs]; AddTool or RemoveTools median 10.51 ms [10.49–10.58],
// the go-sdk's 10 ms debounce plus its timer. The go-sdk restarts that
// timer at every change, with no maximum wait, and offers no hook to bound
// it: with AddTool or RemoveTools every 3 ms for 1.5 s
// (BenchmarkDebounceStarvation, 5 runs) the first notification came 1.51 s
// [1.510–1.515] after the first change, once the changes had stopped (on a
// busier machine a scheduling pause of 10 ms lets one out earlier). A
// server that changes its lists that often can publish the change itself
// as well (Hub().ToolsListChanged(); a listen may then see it twice, which
// a list change allows). Capabilities are read with an in-memory
// server/discover (about 0.5 ms and 215 KB of garbage in the go-sdk,
// BenchmarkCapabilities) when the Bridge is made and after list changes,
// not per listen.
package gosdk
