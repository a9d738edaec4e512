// Package listen serves MCP 2026-07-28 subscriptions/listen (SEP-2575): it
// opens a subscription for a listen request, narrows the requested filter to
// what the server supports, pulls events from a Source on demand, and
// writes every JSON-RPC message of the stream.
//
// # Where to start
//
// Most servers need three ready-made pieces: a Source of events (the hub
// package's Hub: Publish a change and every listen that asked for it gets
// it; implement Source to feed listens from your own change feed), a
// transport (streamhttp for Streamable HTTP, stdio for standard input and
// output; the gosdk and mcpgo modules put both in front of a go-sdk or an
// mcp-go server) and Options (the
// Capabilities the server advertises, CapabilitiesFrom reading them from
// the object you already have, or CapabilitiesFor when they change; its
// ServerInfo). A transport does, for every listen request:
//
//	req, err := listen.ParseRequest(body)       // or ParseParams on a routed message
//	sub, err := listen.Open(ctx, src, req, opts) // narrows, opens src, starts the guard
//	reason := sub.Serve(ctx, listen.Sink{Write: write, KeepAlive: 15 * time.Second, Ping: ping})
//	log(listen.Classify(reason))                 // "complete", "cancelled", "revoked", ... (see Classify)
//
// Errors of ParseRequest and Open are JSON-RPC errors for the client
// (jsonrpc.ErrorResponse(req.ID, err) writes them; package spec names their
// exact messages). Open refuses an id over Options.MaxIDBytes (256 bytes by
// default) and clears req.ID, so that the response does not repeat it. Cancel Serve's ctx with a cause to end the stream from the
// transport's side: ErrShutdown writes the completion first (a graceful
// drain), Cancelled and Disconnected write nothing.
//
// # Goroutines
//
//   - The guard, started inside Open, closes the Source's stream exactly
//     once: at the first Subscription.Close, or when the owner context
//     ends (the ctx given to Open, until StartWorker hands the subscription
//     to another one). It parks no goroutine: it is a context.AfterFunc
//     registration.
//   - Serve runs on the caller's goroutine. A NotifyStream (the hub's
//     streams) needs no other; any other stream is pulled by a worker
//     goroutine that Serve starts and waits for. A Poller has no goroutine
//     of its own: its transport's goroutines take its steps.
//   - A Worker, for a transport that writes the messages itself
//     (ExampleSubscription_StartWorker), owns one goroutine: one Next per
//     Continue, never two in flight, each outcome sent on Outcomes, which
//     it closes when it exits (on Stop, its owner's end, the close, or once
//     End's reason was handed over). An End made while a Next waits in the
//     source hands its reason over from a goroutine of its own, which ends
//     once it is received or the worker ended. It never closes the stream.
//   - A Next blocked in the source is released by the guard's close of the
//     stream (the Stream contract); Close waits for the worker, bounded by
//     Options.ReleaseTimeout.
//
// Subscription.Close is idempotent; the call that closes the stream
// returns once the stream's Close has returned and the worker has exited
// (see Close for a Close made while another runs).
//
// # The stream
//
// A listen stream is, in order: notifications/subscriptions/acknowledged
// with the accepted filter (Subscription.Acknowledgement); the
// notifications the client asked for, each tagged with
// _meta["io.modelcontextprotocol/subscriptionId"] (Notification); one
// terminal message, the completion result (Completion) or the failure
// error -32603 "Subscription source failed" (Failure). A client
// cancellation or a lost transport has no terminal message. These rules
// live in one place, the Poller: Serve drives it on its goroutine, and a
// transport that serves many streams from a few goroutines (streamhttp's
// fast path) drives it itself.
//
// By default a URI of resourceSubscriptions covers only itself; with
// Options.SubResources it covers its sub-resources too (see SubResources
// for the rule). The kinds of notification, their filter keys and the
// capabilities that allow them are the Kind constants.
//
// # Listens bound to their principal
//
// Options.Access re-checks a principal's access on a schedule and on demand
// (its principals concurrently, so that a slow Check delays only its own;
// and, with Deliver, CanRead at each resource update); Request.Expiry and
// Options.MaxLifetime bound a stream in time; Options.Scopes and
// Event.Scope keep a tenant's events to its listens; Options.Disabled
// turns listen off. The state machine writes the server's early endings
// (ErrRevoked, ErrExpired, ErrLifetime, ErrFellBehind), each its own close
// reason and class, in the form Options.EndWithError chooses (by default
// the completion result with the reason in its _meta). None needs a
// goroutine while a stream is idle. The guide: docs/principals.md.
//
// # Failures
//
// Bad input gets a *jsonrpc.Error with its JSON-RPC code and exact message.
// A Source that panics, returns an invalid result or accepts more than it
// was offered is turned into the matching internal error or failure; it
// never crashes the host.
package listen
