// Package stdio serves MCP 2026-07-28 subscriptions/listen over the stdio
// transport: newline-delimited JSON-RPC on a reader and a writer, usually a
// server process's standard input and output. A listen.Server admits,
// opens, counts and drains the listens (its listen.Options: capabilities,
// limits, hooks, the drain window); this package frames them. Every other
// message goes to the application's Handler, or to a peer sharing the
// connection (Conn).
//
//	ls := listen.NewServer(src, listen.Options{Capabilities: caps, ServerInfo: info})
//	srv, err := stdio.New(ls, stdio.Options{
//		Handler: app, // tools/list, tools/call, server/discover, ...
//	})
//	...
//	err = srv.Serve(ctx, os.Stdin, os.Stdout)
//
// # Goroutines and backpressure
//
// Serve starts one reader goroutine, one writer goroutine, one goroutine
// per listen (which opens the subscription and runs
// listen.Subscription.Serve) and one per handler call, and returns only
// after every one of them has returned, except a Read or Write it could not
// interrupt (see Server.Serve), which Server.Shutdown waits for. A Conn's
// peer runs on its own goroutines.
//
// The connection holds a bounded amount of work whatever the client sends:
// at most Options.MaxInFlight handler calls or forwarded requests (64),
// adding up to at most Options.MaxLineBytes (but for a lone one), as
// many messages queued for the peer, the listens the listen.Server admits
// (listen.Options.MaxStreams, 1024 on all its transports), one input line
// of Options.MaxLineBytes (4 MiB), and ids of at most
// listen.Options.MaxIDBytes (256 bytes). Output is not queued:
// a message waits in its goroutine until written (Options.WriteTimeout,
// 5 s). At a bound the reader waits, so a client that sends without reading
// is slowed to the pace of its own reading.
//
// # Sharing the connection with another JSON-RPC peer
//
// A Handler answers requests; it cannot send a message nobody asked for. An
// MCP server implementation (the go-sdk's, for one) sends such messages all
// the time, so it shares the connection through a Conn instead:
//
//	c := srv.NewConn(os.Stdin, os.Stdout)
//	go peer(c)            // c.ReadMessage, c.WriteMessage, then c.Close
//	err = c.Serve(ctx)
//
// The Server serves every listen and every notifications/cancelled;
// everything else reaches the peer under an id of the connection's own,
// and the peer writes any message at any time through the connection's one
// writer. See Conn for the ids, the bounds and the ending.
//
// # Framing and multiplexing
//
// Each input line is one JSON-RPC message (blank lines are skipped); each
// output message is one line written with a single Write by one writer
// goroutine, so two messages never interleave. Malformed input is answered
// (-32700, -32600; a line over Options.MaxLineBytes with "Invalid request:
// message exceeds the maximum line length",
// skipped to its newline, never buffered past the limit) and the
// connection goes on. A message whose id is over listen.Options.MaxIDBytes
// (a request of any method, a response to the peer) is answered with
// -32600 "Invalid request: id must be at most <N> bytes" without an id,
// and neither kept nor forwarded; a cancellation naming such an id is
// ignored.
//
// Many listens and requests share the connection. Each listen has its own
// stream (its acknowledgement, its notifications in order, one terminal
// message), interleaved with the others' and with responses; its source is
// pulled once after each written message. A request id is in flight from
// its request until its terminal message or response; a request reusing an
// id in flight gets -32600 "Duplicate in-flight request id".
// notifications/cancelled for an open listen closes it as
// listen.Cancelled(reason), with nothing more written; for a handler call,
// it cancels the call's context and drops its response. Server.Serve gives
// the checks of a listen request, in order (the same as streamhttp's).
//
// # Endings
//
// EOF on the reader closes every open listen as listen.Disconnected(io.EOF)
// with no terminal message, lets the handler calls in flight finish, and
// Serve returns nil. A write that fails or misses Options.WriteTimeout ends
// the connection (every listen Disconnected, handler contexts cancelled).
// Server.Shutdown, or the end of Serve's context, drains it: reading stops,
// every open listen gets notifications/cancelled then its completion result
// (Options.OmitShutdownCancelled says why both) and is closed with
// listen.ErrShutdown, and the handler calls in flight are answered.
// Shutdown drains the listen.Server too, paced over
// listen.Options.DrainWindow; the end of Serve's context drains that
// connection at once. A listen the listen.Server ends early (EndStreams,
// an expiry, Access) gets notifications/cancelled first too.
//
// A stdio connection has one client, so every listen on it has one
// principal: Options.Auth names it (and its credential's expiry), so that
// listen.Options.Access, Scopes and CanRead judge its listens as on HTTP,
// and a revoked or expired one is torn down with its early ending. To end
// the whole connection instead, end the context given to Serve (a drain).
package stdio
