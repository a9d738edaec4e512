// Package mcpgo adds MCP 2026-07-28 subscriptions/listen, served by this
// library, to a server built on mark3labs/mcp-go (v1.2.1), over HTTP or
// stdio, in one call; the mcp-go server's own broadcasts reach every listen
// that asked for them, with no publish call in your code.
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
//     sessions, on the same URL and the same stdio connection.
//   - Hooks that refuse requests (OnRequestInitialization without a token,
//     say) must let through those for which FromBridge(ctx) is true.
//   - Auth: put your middleware in front of the Handler; set
//     HTTP.Authenticate to hand listen.Request.Auth to CanRead.
//   - Ids: every message's id is at most Options.Listen.MaxIDBytes (256
//     bytes by default), over HTTP and stdio alike; a longer one is
//     answered with -32600 "Invalid request: id must be at most 256 bytes"
//     without an id, before mcp-go sees it.
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
// it): a reading listen of plain mcp-go received 288 to 410 of 2,000
// back-to-back broadcasts in three runs of this package's tests. The Bridge's session never drops: a
// broadcast waits for room instead, and listens are served from the hub's
// bounded queues, whose overflow policy applies and is reported
// (hub.Report.Dropped, hub.Stats.Dropped, hub.Hooks.OnOverflow). Give the
// hub a MaxBuffer that holds your bursts (hub.Options) to lose nothing.
//
// # Ids
//
// mcp-go decodes ids as float64 or string: it would answer
// 9007199254740993 as 9007199254740992, and "\u0037" as "7". On stdio the
// connection gives mcp-go ids of its own (see stdio.Conn); over HTTP a
// request whose id would not survive reaches mcp-go under a surrogate id.
// Every answer carries the client's id token exactly as sent.
package mcpgo
