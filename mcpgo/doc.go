// Package mcpgo adds MCP 2026-07-28 subscriptions/listen, served by this
// library, to a server built on mark3labs/mcp-go, over HTTP or stdio, in
// one call; the mcp-go server's own broadcasts reach every listen that
// asked for them, with no publish call in your code.
//
// Supported mcp-go releases: v1.2.1 through v1.6.0 (v1.2.1, v1.5.0 and
// v1.6.0, the newest, which the module requires). The package's tests run
// against each (.ci/matrix in the repository), which also reports, and
// tests, any newer release: one is claimed once they pass on it.
//
// Over Streamable HTTP (s is your *server.MCPServer):
//
//	h, err := mcpgo.NewHandler(s, mcpgo.HandlerOptions{})
//	if err != nil {
//		return err
//	}
//	http.Handle("/mcp", h) // listens: this library; the rest: mcp-go's StreamableHTTPServer
//	defer h.Shutdown(ctx)  // every open listen gets its completion result
//
// Over stdio (standard input and output):
//
//	err := mcpgo.Run(ctx, s, mcpgo.StdioOptions{}) // or NewStdio, for a handle: Hub, Stats, Shutdown
//
// Recipes:
//
//   - A resource changed: h.ResourceUpdated(ctx, uri), which is mcp-go's
//     s.SendNotificationToAllClients("notifications/resources/updated",
//     map[string]any{"uri": uri}) (call either): it reaches every listen
//     watching uri and mcp-go's own sessions, each once.
//   - Folders: with Options.Listen.SubResources, a listen on a folder gets
//     the updates below it.
//   - Older clients (initialize, 2025-11-25 and before) keep mcp-go's own
//     sessions, on the same URL and the same stdio connection. Over HTTP
//     they are bounded in total and per client, end after 30 minutes idle,
//     and a request naming an id never issued gets 404 before mcp-go sees
//     it (HandlerOptions.Sessions).
//   - Hooks that refuse requests (OnRequestInitialization without a token,
//     say) must let through those for which FromBridge(ctx) is true.
//   - Ids: every message's id is at most Options.Listen.MaxIDBytes (256
//     bytes by default), over HTTP and stdio alike; a longer one is
//     answered with -32600 "Invalid request: id must be at most 256 bytes"
//     without an id, before mcp-go sees it.
//   - Auth: see Auth below.
//
// # Auth
//
// mcp-go hands a request's principal to its handlers through the context
// function of server.WithHTTPContextFunc, which runs only for the requests
// mcp-go serves: a listen never reaches mcp-go. Give the listens theirs
// with HTTP.Authenticate (what it returns is listen.Request.Auth, which
// CanRead gets; its error refuses the listen with 401), from the same
// check:
//
//	// who returns the principal of r's credential (a bearer token, say).
//	func who(r *http.Request) (*User, error) { ... }
//
//	h, err := mcpgo.NewHandler(s, mcpgo.HandlerOptions{
//		Options: mcpgo.Options{Listen: listen.Options{
//			CanRead: func(ctx context.Context, req *listen.Request, uri string) bool {
//				u, _ := req.Auth.(*User) // resource updates, per URI
//				return u != nil && u.MayRead(uri)
//			},
//		}},
//		// Listens: their principal, or 401.
//		HTTP: streamhttp.Options{Authenticate: func(r *http.Request) (any, error) { return who(r) }},
//		// Everything else: mcp-go's handlers find the principal in ctx.
//		SDK: []server.StreamableHTTPOption{server.WithHTTPContextFunc(
//			func(ctx context.Context, r *http.Request) context.Context {
//				if u, err := who(r); err == nil {
//					ctx = context.WithValue(ctx, userKey{}, u)
//				}
//				return ctx
//			})},
//	})
//
// A context function cannot refuse a request: refuse those without a
// principal in a middleware in front of the Handler (for every request,
// listens included; examples/mcpgo does, with -token), or in an mcp-go
// hook that lets FromBridge(ctx) through. NewHandler logs a warning when
// SDK sets a context function and HTTP.Authenticate is nil, for then every
// listen's principal is nil. Over stdio there is no request to
// authenticate: stdio.Options.Auth (in StdioOptions.Stdio) names the
// connection's principal.
//
// # Lifecycle and goroutines
//
// NewBridge registers an observer session with the mcp-go server and
// starts one goroutine, which republishes into the hub what mcp-go hands
// that session; Bridge.Close unregisters it and waits for the goroutine.
// NewHandler and NewStdio make a Bridge; their Shutdown flushes it, ends
// the streams with their completion (over HTTP after shutting the hub down,
// so that each first gets what is queued for it; on stdio after
// notifications/cancelled, as stdio asks), then closes the Bridge. Stdio.Serve runs
// the stdio package's goroutines and mcp-go's StdioServer.Listen (with
// mcp-go's goroutines) and returns after them. Measured
// (bench/cmd/mcpgobench, 5 runs, docs/performance.md): from the mcp-go
// call to the notification read over HTTP, p50 19 µs (AddTool) and 14 µs
// (resources/updated); at 10,000 streams, the last stream 116 ms against
// plain mcp-go's 267, 12.4 µs of server CPU per notification against 32.3,
// 1.9 KB per open stream against 60.5.
//
// # What reaches a listen
//
// AddTool(s), SetTools, DeleteTools, AddPrompt(s), SetPrompts,
// DeletePrompts, AddResource(s), SetResources, DeleteResources,
// RemoveResource and the resource-template equivalents broadcast their list
// change (when the capability's listChanged is on; mcp-go has no
// debounce), and SendNotificationToAllClients of resources/updated its
// update: each reaches exactly the listens that asked for it, tagged with
// their ids, once. Listens are acknowledged with exactly what
// server/discover advertises at that moment (mcp-go turns capabilities on
// as things are registered: the first AddTool turns tools.listChanged on);
// nothing is granted that would never be delivered. See Bridge.
//
// # What the adapter cannot see
//
//   - Per-session tools, resources and templates (AddSessionTool and the
//     like): mcp-go tells only that session, so no listen receives their
//     list changes; the capabilities they turn on count from the next
//     listen.
//   - Notifications for one client (SendNotificationToClient,
//     SendNotificationToSpecificClient), notifications/tasks/status and
//     broadcasts of methods of your own: no listen kind carries them.
//     mcp-go still delivers what it delivers to its own sessions; on stdio,
//     a broadcast of your own method reaches a 2026-07-28 client untagged,
//     as mcp-go writes it (the adapter cannot tell it from one sent for a
//     request), while the kinds a listen carries are dropped there.
//   - mcp-go's stdio has one session per process: serve one stdio
//     connection at a time.
//   - Over HTTP, a notifications/cancelled of an older client naming an id
//     mcp-go cannot decode exactly (see Ids) cancels nothing.
//
// # No silent loss
//
// mcp-go hands each session a notification with a non-blocking send on a
// 100-slot channel and drops it when full (only an OnError hook hears of
// it): a reading listen of plain mcp-go v1.6.0 received 101, 215 and 303
// of 2,000 back-to-back broadcasts in three runs of this package's tests
// (TestPlainMCPGoHTTPDropsBursts, under load). The Bridge's session never drops: a
// broadcast waits for room instead, and listens are served from the hub's
// bounded queues, whose overflow policy applies and is reported
// (hub.Report.Dropped, hub.Stats.Dropped, hub.Options.OnOverflow). Give the
// hub a MaxBuffer that holds your bursts (hub.Options) to lose nothing.
//
// # Ids
//
// mcp-go decodes an id and encodes it back into its answer, and its
// releases differ: v1.2.1 decodes numbers as float64 (9007199254740993 is
// answered as 9007199254740992), v1.5.0 and v1.6.0 keep integers exact but
// normalise them (-0 is answered as 0, 1e2 as 100), and each re-escapes
// strings ("\u0037" is answered as "7"). On stdio the connection gives
// mcp-go ids of its own (see stdio.Conn); over HTTP only a plain id (an
// integer of at most 2^53-1 in magnitude written the shortest way, or a
// string encoding/json writes back unchanged) reaches mcp-go as sent, and
// any other under a surrogate id. NewHandler checks, with an in-process
// probe of the server, that it answers plain ids as sent (if not, every id
// gets a surrogate) and a surrogate (if not, NewHandler fails). Every
// answer carries the client's id token exactly as sent.
package mcpgo
