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
//     NotifyStream (the hub's do) it needs no other goroutine: it pulls with
//     TryNext and waits for the stream's notify. For any other stream it
//     starts a Worker, and waits for it before it returns.
//     A Poller (see "Many streams on a few goroutines") needs no goroutine
//     of its own at all: its transport's goroutines take its steps.
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
//		switch {
//		case o.Err == nil: // an event
//			msg, err := sub.Notification(o.Event)
//			if err != nil { // an invalid event fails the stream
//				write(sub.Failure())
//				sub.Close(listen.Failed(err))
//				continue
//			}
//			if msg != nil { // nil: not selected, dropped
//				write(msg)
//			}
//			w.Continue()
//		case errors.Is(o.Err, listen.ErrClosed): // the graceful end
//			write(sub.Completion())
//			sub.Close(listen.ErrComplete)
//		default: // a failure
//			write(sub.Failure())
//			sub.Close(listen.Failed(o.Err))
//		}
//	}
//	reason := sub.CloseReason() // why it ended (Disconnected if connCtx ended)
//
// # Many streams on a few goroutines
//
// A transport that serves many streams from a few goroutines (streamhttp's
// fast path does, for taken-over HTTP/1.x connections on Linux) uses a
// Poller instead of Serve: Serve turned inside out, with the same rules,
// for a stream that implements NotifyStream (the hub's do), whose readiness
// calls a function instead of signalling a channel:
//
//	p, ok := sub.Poller(ctx, schedule, nil) // schedule: put this stream on a writer's list
//	// on the writer's goroutine, each time the stream is scheduled:
//	for {
//		step, msg := p.Next(buf[:0])
//		switch step {
//		case listen.StepWrite:
//			p.Written(write(msg)) // without blocking; or hand the rest to a goroutine that may
//		case listen.StepWait:
//			return // schedule is called when there is more
//		case listen.StepDone:
//			return // closed: sub.CloseReason() says why
//		}
//	}
//
// # Sub-resources
//
// By default a URI of resourceSubscriptions covers only itself: an update is
// delivered when its URI equals an accepted URI byte for byte.
// With Options.SubResources a subscribed URI also covers its sub-resources,
// as MCP allows ("the uri might be a sub-resource of the one that the client
// actually subscribed to"): a client that listens on file:///project/ hears
// about file:///project/src/main.go. The acknowledgement is the same either
// way (it echoes the accepted URIs). Such a URI may have at most
// Options.MaxURISegments path segments (128 by default; -32602 beyond).
//
// Both URIs are first normalised as RFC 3986 section 6.2.2 says: the scheme
// and the host lower-cased (ASCII letters only); the hex digits of a
// percent-encoding upper-cased (%2f is %2F); a percent-encoded unreserved
// character (ALPHA, DIGIT, '-', '.', '_', '~') decoded (%7E is ~). Nothing
// else is decoded, so %2F is never a '/'. Dot segments are not resolved, and
// there is no scheme-based normalisation (http://h:80/a is not http://h/a;
// non-ASCII bytes are compared as they are). Then a subscribed URI S covers
// an updated URI U when:
//
//   - S equals U; or
//   - S has no query and no fragment; S and U have the same scheme and the
//     same authority (both absent, or both present and equal: userinfo and
//     port exactly, host case-insensitively); no segment of U's path is "."
//     or ".." (%2E counts as '.'); and S's path is U's path, or a prefix of
//     it that ends at a '/' boundary: S's path ends with '/', or the next
//     character of U's path is '/'. U's query and fragment play no part.
//
// So file:///a/ and file:///a both cover file:///a/b, file:///a/b/c and
// file:///a/b?v=2, and FILE:///a covers file:///a/b. file:///a does not
// cover file:///ab (a prefix, but not at a segment boundary), file:///a%2Fb,
// file://host/a/b (another authority), http:///a/b (another scheme) or
// file:///a/../b (a URI with a dot segment is covered only by a subscription
// equal to it, so ".." never climbs out of a folder nor into one).
// file:///a?v=2 and file:///a#f cover only themselves. http://h covers
// http://h/ and http://h/x; http://h/ does not cover http://h.
//
// SubResources.Folders replaces this rule for the updated URIs it claims,
// for schemes whose hierarchy is not the path: given db://h/s.t.r it may
// return db://h/s.t and db://h/s (and ok true), and those, normalised as
// above, are the URIs that cover it besides itself.
//
// CanRead applies to every delivered URI. It narrows the subscribed URIs at
// Open, as without SubResources; and when an update is shaped whose URI is
// covered without being one of the accepted URIs byte for byte, it is asked
// again, with that URI, and a refused update is dropped: a listener never
// receives an update for a sub-resource its principal may not read. On
// delivery CanRead gets Serve's context (context.Background() under
// AppendNotification) and a detached Request holding only ID,
// ProtocolVersion, ClientInfo, Transport.Kind, Transport.RemoteAddr and
// Auth, which the subscription keeps while it lives (never the params, the
// _meta, the client capabilities or the headers): decide from Auth. It runs
// on the goroutine serving the stream, once per covered update, so keep it
// fast. A CanRead or SubResources.Folders that panics while an update is shaped
// fails the stream, as an invalid event does.
//
// Open hands the rule to the Source (Request.SubResources): the hub applies
// it to the listeners opened with it, through a prefix index. Another Source must send
// the covered updates itself; the subscription drops what its URIs do not
// cover either way.
//
// # Failures
//
// Bad input gets a *jsonrpc.Error with its JSON-RPC code and exact message.
// A Source that panics, returns an invalid result or accepts more than it
// was offered is turned into the matching internal error or failure
// outcome; it never crashes the host.
package listen
