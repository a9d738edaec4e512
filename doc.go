// Package listen serves MCP 2026-07-28 subscriptions/listen (SEP-2575): it
// opens a subscription for a listen request, narrows the requested filter to
// what the server supports, pulls events from an application Source on
// demand, and shapes every JSON-RPC message of the stream.
//
// It is a Go port of the subscription core of the Elixir library snodo
// (Snodo.Subscription, v0.4.1). Where snodo and the MCP specification
// disagree, the specification wins; the places are noted where they occur.
//
// # The stream
//
// A listen stream is, in order:
//
//  1. notifications/subscriptions/acknowledged, with the accepted filter
//     (Subscription.Acknowledgement);
//  2. the notifications the client asked for, each tagged with
//     _meta["io.modelcontextprotocol/subscriptionId"] = the listen request's
//     id, with its JSON type (Subscription.Notification);
//  3. one terminal message: the completion result, resultType "complete"
//     (Subscription.Completion), or the failure error -32603 "Subscription
//     source failed" (Subscription.Failure). A client cancellation or a lost
//     transport has no terminal message.
//
// # Lifecycle and goroutines
//
//	sub, err := listen.Open(ctx, src, req, opts) // narrows, opens src, starts the guard
//	write(sub.Acknowledgement())
//	w, _ := sub.StartWorker(ctx)                // one goroutine, owned by the Worker
//	w.Continue()                                // exactly one Next per Continue
//	for o := range w.Outcomes() {               // closed by the worker when it exits
//		switch o.Kind {
//		case listen.OutcomeEvent:  write(sub.Notification(o.Event)); w.Continue()
//		case listen.OutcomeClosed: write(sub.Completion()); sub.Close(listen.ErrComplete)
//		case listen.OutcomeError:  write(sub.Failure(o.Err)); sub.Close(listen.Failed(o.Err))
//		}
//	}
//
// Who owns what:
//
//   - The guard, started inside Open before it returns, closes the Source's
//     stream exactly once: on the first Subscription.Close, or when the owner
//     context ends (reason Disconnected with cause ErrOwnerGone). It parks no
//     goroutine: it is a context.AfterFunc registration, whose function the
//     runtime runs in its own goroutine only when the owner ends, and which
//     Close unregisters.
//   - The Worker owns one goroutine. It calls Stream.Next once per Continue,
//     never two in flight, and sends each outcome on Outcomes, a channel it
//     alone sends on and closes when it exits. It exits on Worker.Stop, on the
//     owner's end, or on Subscription.Close. It never closes the stream.
//   - A Next blocked in the source when the worker stops is released by the
//     guard's close of the stream (the Stream contract); Subscription.Close
//     waits for that, bounded by Options.ReleaseTimeout.
//   - Serve, given a stream that also implements PollStream (the hub's do),
//     needs no worker: it pulls with TryNext from its own goroutine and waits
//     on Ready, under the same demand rule.
//
// Subscription.Close is idempotent and returns only after the stream's Close
// returned and the worker goroutine exited.
//
// # Failures
//
// Bad input gets an *jsonrpc.Error with the JSON-RPC code and exact message of the
// reference (jsonrpc.ErrorResponse shapes it). A Source that panics, returns an
// invalid result or accepts more than it was offered is turned into the
// matching internal error or failure outcome; it never crashes the host.
package listen
