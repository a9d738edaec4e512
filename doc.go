// Package listen serves MCP 2026-07-28 subscriptions/listen (SEP-2575): it
// opens a subscription for a listen request, narrows the requested filter to
// what the server supports, pulls events from an application Source on
// demand, and writes every JSON-RPC message of the stream.
//
// # Where to start
//
// Most servers need three pieces, all ready-made:
//
//   - a Source of events: the hub package's Hub is a bounded broadcast
//     source (Publish a change, every listening client that asked for it
//     receives it); implement Source yourself to feed listens from your own
//     change feed;
//   - a transport: streamhttp serves listens over Streamable HTTP (and puts
//     them in front of an existing MCP HTTP handler with Front), stdio over
//     standard input and output;
//   - Options: the server's Capabilities (what it advertises in
//     server/discover; CapabilitiesFrom reads them from the capabilities
//     object you already have) and its ServerInfo.
//
// A transport does, for every listen request:
//
//	req, err := listen.ParseRequest(body)       // or ParseParams on a routed message
//	sub, err := listen.Open(ctx, src, req, opts) // narrows, opens src, starts the guard
//	reason := sub.Serve(ctx, listen.Sink{Write: write, KeepAlive: 15 * time.Second, Ping: ping})
//	log(listen.Classify(reason))                 // complete, cancelled, disconnected, error
//
// Errors from ParseRequest and Open are JSON-RPC errors for the client
// (jsonrpc.ErrorResponse writes them). Serve writes the acknowledgement,
// then each selected notification, then the completion result or the
// failure, and returns the close reason. Cancel ctx with a cause to end the
// stream from the transport's side: ErrShutdown writes the completion
// first (a graceful drain), Cancelled and Disconnected write nothing.
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
// Who owns what:
//
//   - The guard, started inside Open before it returns, closes the Source's
//     stream exactly once: on the first Subscription.Close, or when the owner
//     context ends (reason Disconnected with cause ErrOwnerGone). The owner is
//     the ctx given to Open until StartWorker hands the subscription to
//     another one (see Subscription). The guard parks no goroutine: it is a
//     context.AfterFunc registration, whose function the runtime runs in its
//     own goroutine only when the owner ends, and which Close unregisters.
//   - Serve runs on the caller's goroutine. For a stream that implements
//     PollStream (the hub's do) it needs no other goroutine: it pulls with
//     TryNext and waits on Ready. For any other stream it starts a Worker.
//   - A Worker owns one goroutine. It calls Stream.Next once per Continue,
//     never two in flight, and sends each outcome on Outcomes, a channel it
//     alone sends on and closes when it exits. It exits on Worker.Stop, on its
//     owner's end, or when the subscription is closed, and then delivers
//     nothing more. It never closes the stream.
//   - A Next blocked in the source when the worker stops is released by the
//     guard's close of the stream (the Stream contract); Subscription.Close
//     waits for that, bounded by Options.ReleaseTimeout.
//
// Subscription.Close is idempotent and returns only after the stream's Close
// returned and the worker goroutine exited.
//
// # Driving a subscription by hand
//
// A transport that cannot use Serve writes the messages itself:
//
//	ack, _ := sub.Acknowledgement()
//	write(ack)
//	w, _ := sub.StartWorker(connCtx) // connCtx now owns the stream
//	w.Continue()                      // exactly one Next per Continue
//	for o := range w.Outcomes() {     // closed by the worker when it exits
//		switch o.Kind {
//		case listen.OutcomeEvent:
//			msg, err := sub.Notification(o.Event)
//			if err != nil { // an invalid event fails the stream
//				write(sub.Failure(err))
//				sub.Close(listen.Failed(err))
//				continue
//			}
//			if msg != nil { // nil: not selected, dropped
//				write(msg)
//			}
//			w.Continue()
//		case listen.OutcomeClosed:
//			done, _ := sub.Completion()
//			write(done)
//			sub.Close(listen.ErrComplete)
//		case listen.OutcomeError:
//			write(sub.Failure(o.Err))
//			sub.Close(listen.Failed(o.Err))
//		}
//	}
//	reason := sub.CloseReason() // why it ended (Disconnected if connCtx ended)
//
// # Failures
//
// Bad input gets a *jsonrpc.Error with its JSON-RPC code and exact message.
// A Source that panics, returns an invalid result or accepts more than it
// was offered is turned into the matching internal error or failure
// outcome; it never crashes the host.
package listen
