// Package streamhttp serves MCP 2026-07-28 subscriptions/listen over
// Streamable HTTP: a listen is one POST whose response is a long-lived SSE
// stream, driven by the core's listen.Subscription.Serve.
//
//	h := streamhttp.New(src, &streamhttp.Options{
//		Listen: listen.Options{Capabilities: caps, ServerInfo: info},
//	})
//	srv := &http.Server{Addr: addr, Handler: h}
//	srv.RegisterOnShutdown(h.Drain) // complete every stream on srv.Shutdown
//
// To add listens to an existing MCP server, such as one built with the
// official go-sdk, put Front in front of it (see "Next to an existing
// server" below).
//
// # Request checks
//
// A request is checked in this order; the first failure is answered with an
// application/json JSON-RPC error response that echoes the request id when
// it could be read, and the Source is never opened:
//
//	method other than POST (GET, DELETE, ...)    405  -32600, Allow: POST
//	CheckOrigin refuses (Origin, Host)           403  -32600 "Forbidden: invalid Origin or Host", no id
//	Authenticate refuses                         401  -32600 "Unauthorized", no id (or AuthError's status, headers)
//	body over MaxBodyBytes                       413  -32600 "Request body too large"
//	malformed JSON / not a JSON-RPC request      400  -32700 "Parse error" / -32600
//	Mcp-Method header ≠ body method              400  -32020 "Header mismatch: ..."
//	a notification (no id), not a listen         202  accepted and ignored, no body
//	another method                               404  -32601 "Method not found: <method>"
//	listen without id                            400  -32600
//	bad params (_meta, notifications)            400  -32602, the core's exact messages (listen.Msg...)
//	MCP-Protocol-Version header ≠ _meta version  400  -32020 "Header mismatch: ..."
//	protocol version older than 2026-07-28       404  -32601 "Method not found: subscriptions/listen"
//	any other unsupported protocol version       400  -32022 "Unsupported protocol version", data.supported/requested
//	shutting down                                503  -32603 "Server is shutting down"
//	over MaxStreams                              503  -32603 "Server subscription capacity exhausted"
//	listen.Open fails                            500 for -32603, 404 for -32601, else 400; the error as given
//
// The MCP-Protocol-Version and Mcp-Method headers are compared with the body
// when present; Options.RequireHeaders also refuses their absence.
// Last-Event-ID and Mcp-Session-Id are ignored and never echoed: streams are
// not resumable and have no session.
//
// Options.Listen is what listen.Open narrows against: the requested filter
// keeps only what the capabilities advertise, and CanRead leaves out the
// resource URIs the caller may not read (they are missing from the
// acknowledgement; it is not an error). The Source gets the request with
// Request.Auth set to what Authenticate returned, and Request.Transport
// (kind "streamable_http", the remote address and the headers).
//
// # The stream
//
// A listen that opens is answered 200 with Content-Type text/event-stream,
// Cache-Control no-cache, X-Accel-Buffering no and no Content-Length (on
// HTTP/1.1 also Connection: close: a listen holds its connection for its
// whole life). Each JSON-RPC message is one SSE event, flushed at once:
//
//	event: message
//	data: <the message on one line>
//
// The acknowledgement comes first, then the notifications, then at most one
// terminal message. After KeepAlive without a write the Handler sends the
// comment ": keep-alive".
//
// # Endings
//
//   - The source ends its stream: the completion result (resultType
//     "complete"), then the response ends; reason listen.ErrComplete.
//   - The source fails: the error -32603 "Subscription source failed", then
//     the response ends; reason Failed.
//   - The client disconnects (closes the response or the connection): this
//     is the cancellation of the listen; nothing more is written, there is
//     no result; reason Disconnected.
//   - A write fails or misses its WriteTimeout (a client that stopped
//     reading): as a disconnect, reason Disconnected with the write error
//     as cause (os.ErrDeadlineExceeded for a deadline).
//   - Drain or Shutdown: every open stream gets its completion result, then
//     its response ends; reason listen.ErrShutdown. New listens get 503.
//     Shutdown waits for every stream to end, or for its ctx.
//
// OnOpen and OnClose observe every opened subscription, OnKeepAlive every
// keep-alive written, OnError every refused request; Stats counts them.
//
// # Limits and defaults
//
//	MaxStreams    1024   concurrent listens; 503 over it, checked before the Source is opened
//	MaxBodyBytes  1 MiB  request body; 413 over it
//	KeepAlive     15 s   idle time before a keep-alive comment
//	WriteTimeout  10 s   per write (an event or keep-alive and its flush); the deadline
//	                     is cleared after each write, so idle streams are not affected
//
// A negative value disables a limit. The write deadline is set with
// http.ResponseController; behind a middleware whose ResponseWriter hides
// SetWriteDeadline (no Unwrap method) it has no effect, and a client that
// stops reading then holds its own handler goroutine, and nothing else,
// until its connection breaks. The per-write deadline replaces
// http.Server.WriteTimeout for a stream from its first write on (on HTTP/2,
// a server WriteTimeout that expires before that first write, during a slow
// Source.Open, still ends the stream); with WriteTimeout disabled, a server
// WriteTimeout bounds the whole stream.
//
// # Goroutines and ownership
//
// Each listen is admitted, decoded and opened on the net/http goroutine of
// its request. An HTTP/2 stream then stays there: that goroutine writes every
// message. An HTTP/1.x stream is taken over once open (see
// Options.NoTakeover): the Handler hijacks the connection, writes the status
// line, the headers and raw SSE events itself (Connection: close, no chunked
// encoding), and serves the stream on a goroutine of its own while a small
// reader goroutine watches for the client leaving; the request goroutine
// returns, and net/http's per-connection buffers (about 12 KB) are freed.
// When the stream ends, its goroutine closes the connection, waits for the
// reader, reports OnClose and releases the stream's slot, so Shutdown
// returns after both have ended. Serve adds no worker goroutine for a hub
// stream (listen.PollStream), and one for any other Source. Drain only
// cancels the streams' contexts; each stream ends on its own goroutine.
//
// The subscription's owner (see listen.Open) is a context that ends when
// ServeHTTP returns, however it returns (even by a panic in a hook), so a
// subscription can never outlive its request. A client disconnect is seen
// by Serve, through the request's context, not by the owner, so the stream
// is closed with the precise reason. Source.Open, CanRead and the extension
// hooks get the request's context (listen.OpenOwned): it ends if the client
// goes away while the listen is being opened (nothing is then written or
// reported as an error), but not on Drain, so a listen being opened during a
// drain still gets its acknowledgement and completion. Once opened, a
// subscription keeps no reference to the request or its body.
//
// # Next to an existing server
//
// Front(listens, other) sends the POSTs whose Mcp-Method header is
// "subscriptions/listen" to listens and every other request to other, such
// as the go-sdk's StreamableHTTPHandler, so that a go-sdk server gains this
// listen engine without any change to it:
//
//	caps := &mcp.ServerCapabilities{ // tools, prompts and resources all set: nothing inferred
//		Tools:     &mcp.ToolCapabilities{ListChanged: true},
//		Prompts:   &mcp.PromptCapabilities{},
//		Resources: &mcp.ResourceCapabilities{Subscribe: true, ListChanged: true},
//	}
//	server := mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: caps})
//	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
//		&mcp.StreamableHTTPOptions{Stateless: true}) // the go-sdk serves 2026-07-28 statelessly
//
//	lc, err := listen.CapabilitiesFrom(caps) // what server/discover advertises
//	if err != nil { ... }
//	listens := streamhttp.New(src, &streamhttp.Options{
//		Listen: listen.Options{Capabilities: lc, ServerInfo: listen.Implementation{Name: impl.Name, Version: impl.Version}},
//	})
//	http.Handle("/mcp", streamhttp.Front(listens, sdk))
//
// The capabilities the Handler narrows against must be exactly those the
// server advertises in server/discover: a listen is acknowledged only for
// what the server claims to support. CapabilitiesFrom turns any capabilities
// value (the go-sdk's *mcp.ServerCapabilities, a map, the raw JSON of a
// discover result) into listen.Capabilities. With the go-sdk (v1.8.0), set
// Tools, Prompts and Resources of ServerOptions.Capabilities explicitly and
// pass the same value: a group left nil is inferred from the registered
// features and is not in that struct, and a SubscribeHandler forces
// resources.subscribe to true. Or read the capabilities back from a
// server/discover result.
package streamhttp
