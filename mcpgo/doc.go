// Package mcpgo adds MCP 2026-07-28 subscriptions/listen, served by this
// library, to a server built on mark3labs/mcp-go, over HTTP or stdio, in
// one call; the mcp-go server's own broadcasts reach every listen that
// asked for them, with no publish call in your code. It is mcp-go's side
// of the adapter package, which holds what every SDK shares.
//
// Supported mcp-go releases: v1.2.1 through v1.6.0 (v1.2.1, v1.5.0 and
// v1.6.0, the newest, which the module requires). The package's tests run
// against each (.ci/matrix in the repository), which also reports, and
// tests, any newer release: one is claimed once they pass on it.
//
//	h, err := mcpgo.NewHandler(s, mcpgo.HandlerOptions{}) // s is your *server.MCPServer
//	if err != nil {
//		return err
//	}
//	http.Handle("/mcp", h) // listens: this library; the rest: mcp-go's StreamableHTTPServer
//	defer h.Shutdown(ctx)  // every open listen gets what is queued, then its completion
//
//	err := mcpgo.Run(ctx, s, mcpgo.StdioOptions{}) // stdio; or NewStdio, for a handle
//
// A resource changed: h.ResourceUpdated(ctx, uri), which is mcp-go's
// SendNotificationToAllClients of notifications/resources/updated (call
// either): it reaches every listen watching uri (with
// Options.Listen.SubResources, a folder above it too) and mcp-go's own
// sessions, each once. Older clients (initialize, 2025-11-25 and before)
// keep mcp-go's own sessions, on the same URL and stdio connection
// (HandlerOptions.Sessions bounds them). Every id is at most
// Options.Listen.MaxIDBytes (256 bytes by default; a longer one gets
// -32600 before mcp-go sees it). Hooks that refuse requests must let
// through the Bridge's own (FromBridge). Delays, CPU and memory against
// plain mcp-go (bench/cmd/mcpgobench): docs/performance.md.
//
// # Auth
//
// mcp-go hands a request's principal to its handlers through the context
// function of server.WithHTTPContextFunc (in HandlerOptions.SDK), which
// runs only for the requests mcp-go serves: a listen never reaches mcp-go.
// Give the listens theirs from the same check with HTTP.Authenticate (what
// it returns is listen.Request.Auth, which CanRead gets; its error refuses
// the listen with 401):
//
//	who := func(r *http.Request) (*User, error) { ... } // the principal of r's credential
//	h, err := mcpgo.NewHandler(s, mcpgo.HandlerOptions{
//		HTTP: streamhttp.Options{Authenticate: func(r *http.Request) (any, error) { return who(r) }},
//		SDK: []server.StreamableHTTPOption{server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
//			if u, err := who(r); err == nil {
//				ctx = context.WithValue(ctx, userKey{}, u)
//			}
//			return ctx
//		})},
//	})
//
// A context function cannot refuse a request: refuse those without a
// principal in a middleware in front of the Handler (examples/mcpgo does,
// with -token), or in an mcp-go hook that lets FromBridge(ctx) through.
// NewHandler warns when SDK sets a context function and HTTP.Authenticate
// is nil. Over stdio, stdio.Options.Auth names the connection's principal.
//
// # What the adapter cannot see
//
//   - Per-session tools, resources and templates (AddSessionTool and the
//     like): mcp-go tells only that session; the capabilities they turn on
//     count from the next listen.
//   - Notifications for one client (SendNotificationToClient, ...),
//     notifications/tasks/status and broadcasts of methods of your own: no
//     listen kind carries them. On stdio, a broadcast of your own method
//     reaches a 2026-07-28 client untagged, as mcp-go writes it.
//   - mcp-go's stdio has one session per process: serve one stdio
//     connection at a time.
//   - Over HTTP, a notifications/cancelled of an older client naming an id
//     mcp-go cannot decode exactly (see Ids) cancels nothing.
//
// # No silent loss
//
// mcp-go hands each session a notification with a non-blocking send on a
// 100-slot channel and drops it when full: a reading listen of plain
// mcp-go v1.6.0 received 101, 215 and 303 of 2,000 back-to-back broadcasts
// in three runs (TestPlainMCPGoHTTPDropsBursts, under load). The Bridge's
// session never drops: a broadcast waits for room instead, and listens are
// served from the hub's bounded queues, whose overflow is reported
// (hub.Report.Dropped, hub.Stats.Dropped, hub.Options.OnOverflow). Give the
// hub a MaxBuffer that holds your bursts to lose nothing.
//
// # Ids
//
// mcp-go decodes an id and encodes it back into its answer, and its
// releases differ: v1.2.1 decodes numbers as float64 (9007199254740993 is
// answered as 9007199254740992), v1.5.0 and v1.6.0 keep integers exact but
// normalise them (-0 is answered as 0, 1e2 as 100), and each re-escapes
// strings ("\u0037" is answered as "7", "<" as "\u003c"). On stdio the
// connection gives mcp-go ids of its own (see stdio.Conn); over HTTP only a
// plain id (an integer of at most 2^53-1 in magnitude written the shortest
// way, or a string encoding/json writes back unchanged) reaches mcp-go as
// sent, and any other under a surrogate string id, replaced by the
// client's token in the answer. NewHandler checks, with an in-process
// probe, that mcp-go answers plain ids as sent (if not, every id gets a
// surrogate) and a surrogate (if not, NewHandler fails). Every answer
// carries the client's id token exactly as sent.
package mcpgo
