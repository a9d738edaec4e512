// Package gosdk adds MCP 2026-07-28 subscriptions/listen, served by this
// library, to a server built on the official go-sdk (v1.8.0), over HTTP or
// stdio, in one call: the go-sdk's side of the adapter package, which
// holds what every SDK shares. The go-sdk server needs no listen code: its list
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
// or, with a handle (Server, Bridge, Stats, ResourceUpdated, Shutdown),
// s, err := gosdk.NewStdio(server, opts), then s.Run(ctx). Every listen is
// this library's there too (see adapter.Stdio.Serve).
//
// # Lifecycle and goroutines
//
// The Handler and Stdio are the adapter package's (see there). NewBridge
// connects two in-process sessions of the go-sdk server; their goroutines
// are the go-sdk's, and end with Shutdown (Bridge.Close), as does the one
// per keep-alive ping the go-sdk sends them (ServerOptions.KeepAlive). A
// list change is republished on the go-sdk's debounce timer goroutine, an
// update on the caller of ResourceUpdated; the hub never blocks either.
//
// # Resource updates and folders
//
//	err := h.ResourceUpdated(ctx, "file:///project/notes.md") // or s.ResourceUpdated
//
// tells every listen that covers the URI and every older client subscribed
// to it (resources/subscribe) once each. With Options.Listen.SubResources a
// listen on file:///project/ covers the files below it. Call it wherever a
// resource changes: the go-sdk's Server.ResourceUpdated alone reaches only
// its own subscribers, Bridge().Hub().ResourceUpdated only the listens. Listen URIs
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
// its stream ends when the token's Expiration passes (its completion
// result, reason listen.ErrExpired), so the client re-listens with a fresh
// token. The bridge's own in-process calls carry Options.Token (by
// default UserID "mcplisten-gosdk"), which a receiving middleware that
// refuses requests without a token lets through.
//
// # Older clients
//
// The same endpoint serves clients of earlier versions with the go-sdk's
// stateful sessions (initialize, Mcp-Session-Id, the GET stream and its
// notifications, DELETE), and 2026-07-28 requests statelessly, on the same
// *mcp.Server: nothing to configure. SDK.Stateless serves stateless only.
// HandlerOptions.Sessions bounds those sessions in total and per client,
// closes those idle for 30 minutes, and answers 404 a request naming a
// session id never issued or ended, before the go-sdk sees it.
//
// # Delays, and the go-sdk's debounce
//
// From the change to the notification read by an HTTP client on loopback
// (BenchmarkChangeToNotification, 5 runs, docs/performance.md):
// ResourceUpdated median 24 µs; AddTool or RemoveTools median 10.51 ms,
// the go-sdk's 10 ms debounce plus its timer. The go-sdk restarts that
// timer at every change, with no maximum wait and no hook to bound it:
// with AddTool every 3 ms for 1.5 s (BenchmarkDebounceStarvation) the
// first notification came 1.51 s after the first change. A server that
// changes its lists that often can publish the change itself as well
// (Bridge().Hub().ToolsListChanged(); a listen may then see it twice, which a list
// change allows).
package gosdk
