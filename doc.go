// Package listen serves MCP 2026-07-28 subscriptions/listen (SEP-2575): it
// opens a subscription for a listen request, narrows the requested filter to
// what the server supports, pulls events from a Source on demand, and
// writes every JSON-RPC message of the stream.
//
// # Where to start
//
// A server needs three pieces: a Source of events (the hub package's Hub:
// Publish a change and every listen that asked for it gets it; or your own
// Source), a Server holding the policy, and a transport framing its
// listens (streamhttp for Streamable HTTP, stdio for standard input and
// output; the gosdk and mcpgo modules put both in front of a go-sdk or an
// mcp-go server):
//
//	srv := listen.NewServer(hub, listen.Options{Capabilities: caps, ServerInfo: info})
//	h, err := streamhttp.New(srv, streamhttp.Options{})
//
// Options describe the server (the Capabilities it advertises, read with
// CapabilitiesFrom, or CapabilitiesFor when they change) and its policy:
// MaxStreams and MaxStreamsPerKey, a Quota, the hooks (OnOpen, OnClose,
// OnRefuse; a panic in one is recovered and logged), DrainWindow. The
// Server counts (Stats), ends streams by principal (EndStreams) and drains
// (Shutdown) for every transport at once. A transport serves a listen
// with Server.Begin, Slot.Admit, Slot.Open, then Subscription.Serve (or
// the worker, below), then Slot.Done. Its refusals are JSON-RPC errors for
// the client (jsonrpc.ErrorResponse(req.ID, err); package spec names their
// exact messages; streamhttp their HTTP status).
//
// Open alone (no Server) opens one subscription; with Serve, or with
// StartWorker and the message methods (Acknowledgement, Notification,
// Terminal) to drive a stream by hand (examples/lifecycle).
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
//     goroutine that Serve starts and waits for.
//   - A Server starts no goroutine: Shutdown paces the drain on its
//     caller's goroutine.
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
// live in one state machine: Serve drives it on its goroutine, and
// streamhttp's fast path from a few goroutines for many streams.
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
