// Package stdio serves MCP 2026-07-28 subscriptions/listen over the stdio
// transport: newline-delimited JSON-RPC on a reader and a writer, usually a
// server process's standard input and output. Every other message goes to
// the application's Handler, or to a peer sharing the connection (Conn).
//
//	srv, err := stdio.New(src, stdio.Options{
//		Listen:  listen.Options{Capabilities: caps, ServerInfo: info},
//		Handler: app, // tools/list, tools/call, server/discover, ...
//	})
//	...
//	err = srv.Serve(ctx, os.Stdin, os.Stdout)
//
// # Sharing the connection with another JSON-RPC peer
//
// A Handler answers requests; it cannot send a message nobody asked for. An
// MCP server implementation (the go-sdk's, for one) sends such messages all
// the time: logging and progress notifications, list changes, requests to
// the client. Such a server shares the connection through a Conn instead:
//
//	c := srv.NewConn(os.Stdin, os.Stdout)
//	go peer(c)            // c.ReadMessage, c.WriteMessage, then c.Close
//	err = c.Serve(ctx)
//
// The Server serves every listen and every notifications/cancelled;
// everything else the client sends reaches the peer (Conn.ReadMessage, or
// Conn.Lines), responses to the peer's own requests included, each request
// under an id of the connection's own that the peer's answer is mapped
// back from, and the peer writes any message at any time
// (Conn.WriteMessage) through the connection's one writer. See Conn for
// the ids, the bounds and the ending.
//
// # Framing
//
// Each input line is one JSON-RPC message; a last line without a newline
// before EOF counts too, blank lines are skipped. Each output message is one
// line written with a single Write call by a single writer goroutine, so the
// bytes of two messages never interleave. JSON that spans lines (a handler's
// pretty-printed result) is compacted onto one line first.
//
// Malformed input is answered and the connection goes on: invalid JSON with
// -32700 "Parse error" (no id), a message that is not a request with -32600
// (echoing the id when it could be read), and a line longer than
// Options.MaxLineBytes with -32600 MsgLineTooLong, without an id since the line
// is never parsed. An over-long line is skipped up to its newline and never
// buffered past the limit. Responses sent by the client go to the peer of a
// Conn; on Serve, whose Handler never asks the client anything, they are not
// requests either and get -32600.
//
// # Multiplexing
//
// Many listens and requests share the connection. Each listen has its own
// stream: its acknowledgement first, then its notifications in order, then
// one terminal message (the completion result or the failure error);
// messages of different listens and responses to other requests interleave
// freely between them, as the specification allows on stdio. Demand is per
// listen: its source's Next is called once after the acknowledgement was
// written and once more after each notification was written.
//
// A request id is in flight from the moment its request is read until its
// terminal message or response (for a request forwarded to a Conn's peer:
// the peer's answer) is about to be written, or the client cancels it. A
// request (listen or not) reusing an id in flight is answered with -32600
// "Duplicate in-flight request id" and the request holding the id is not
// touched.
//
// notifications/cancelled with the requestId of an open listen closes it
// with reason listen.Cancelled(reason) and nothing more is written for it: no
// terminal message, and a message still queued for it is dropped. The id is
// free as soon as the cancellation is read. The same cancellation of a
// handler call cancels the call's context (cause listen.Cancelled) and its
// response is not sent. The cancellation of a request forwarded to a
// Conn's peer frees its id too and goes to the peer (see Conn).
// Cancellations that are malformed (params not an object, requestId not a
// string or integer, a reason that is not a string, a member repeated) or
// name no request in flight are dropped at once; notifications are never
// answered.
//
// # Listen requests
//
// A subscriptions/listen request is checked in this order, the same as in
// the streamhttp package:
//
//  1. invalid params: -32602 with the exact messages of
//     listen.ParseParams (including a missing or non-string version);
//  2. an older protocol version the server speaks (one in
//     Options.SupportedVersions): -32601 "Method not found:
//     subscriptions/listen" (spec.ListenVersionError);
//  3. any other version but 2026-07-28: -32022 "Unsupported protocol
//     version" with data {"supported": Options.SupportedVersions (default
//     spec.SupportedProtocolVersions), "requested": the version};
//  4. Options.MaxSubscriptions listens already open: -32603 "Server
//     subscription capacity exhausted";
//  5. listen.Open (with Options.Listen): its error, as the core shapes it.
//
// A listen without an id is a notification and is ignored.
//
// # Endings
//
// EOF on the reader (the client closed its end) closes every open listen as
// listen.Disconnected(io.EOF), with no terminal message, lets the handler
// calls in flight finish and answers them, and Serve returns nil once all of
// that is done.
//
// A write that fails, or does not complete within Options.WriteTimeout, ends
// the connection: every listen is closed as listen.Disconnected (cause
// ErrWriteTimeout or the write error), handler contexts are cancelled, a
// Conn's peer gets the error from ReadMessage and WriteMessage, the reader
// and the writer are stopped (see Server.Serve) and Serve returns the error.
// No message waits longer than WriteTimeout for its write, and Serve returns
// even if the timed-out Write cannot be interrupted (its error then says so; see
// Server.Serve for what the caller should do).
//
// With a Conn, a graceful end (EOF, a drain) also waits for the peer: it
// reads io.EOF once it has read what was queued for it and answered every
// request it was handed, and must then Close. Conn.Close drains the
// connection.
//
// # Draining
//
// Server.Shutdown, or the end of Serve's context, drains a connection: Serve
// stops reading (input not yet handled is dropped unanswered), every open
// listen gets its completion result and is closed with reason
// listen.ErrShutdown, and the handler calls in flight finish (on a context
// drain their context is cancelled) and are answered. A listen whose
// Source.Open is still running is completed as soon as it opens.
//
// The specification's texts disagree on a stdio server teardown: the
// subscriptions page says the server SHOULD send the completion result,
// cancellation.mdx says it MUST send notifications/cancelled for the listen.
// This package sends both, notifications/cancelled first, because the
// cancellation rules only allow referencing a request still in progress:
//
//	{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"reason":"Server shutdown","requestId":1}}
//	{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/subscriptionId":1},"resultType":"complete"}}
//
// Options.OmitShutdownCancelled sends the completion result alone. A listen
// that ends on its own (its source ended or failed) gets its terminal
// message alone.
//
// # One principal per connection
//
// A stdio connection has one client: the process that started the server,
// whose identity and credentials (from its environment or configuration)
// are the connection's. There is no per-request authentication, so every
// listen on a connection has the same principal, for as long as the
// connection lives. When that principal's credential is revoked or
// expires, end the connection's listens by ending the context given to
// Serve (or Conn.Serve): a drain (see "Draining" below), in which every
// open listen gets its notifications/cancelled and its completion result,
// the handler calls in flight are cancelled and answered, and Serve
// returns. Then exit: the client starts the server again, with fresh
// credentials, and opens new listens. Server.Shutdown does the same for
// every connection of the Server. For a credential that expires, end the
// context at its expiry (context.WithDeadline) or when a periodic check
// fails. This is what streamhttp.Handler.EndStreams does for the streams
// of one principal among many.
//
// # Backpressure
//
// The connection holds a bounded amount of work, whatever the client sends:
// at most Options.MaxInFlight handler calls or requests forwarded to the
// peer (each holds its unit until its response, or the peer's answer, is
// written), at most MaxInFlight messages queued for the peer, at most
// Options.MaxSubscriptions listens, and one input line of at most
// Options.MaxLineBytes being handled. Output is not queued: each message
// waits in the goroutine that sends it until the writer wrote it. When a
// bound is reached the reader waits, so Serve stops reading and the
// client's writes block: a client that sends requests without reading the
// answers is slowed to the pace of its own reading. While the reader waits
// it reads nothing, cancellations included. A client that stops reading
// altogether ends the connection after WriteTimeout.
//
// # Goroutines
//
// Serve starts one reader goroutine and one writer goroutine, one
// goroutine per listen (which opens the subscription and runs
// listen.Subscription.Serve, whose worker the core owns) and one per handler
// call. It returns only after every one of them has returned, except a Read
// or a Write it could not interrupt, which it leaves behind (see
// Server.Serve) and Server.Shutdown waits for. Source.Open runs on the
// listen's goroutine, so a slow Open delays no other message; its context is
// cancelled if the listen is cancelled or the connection lost while it runs.
// A Conn's peer runs on its own goroutines, which are the peer's.
//
// # Limits and defaults
//
//   - MaxSubscriptions: 32 open listens per connection (DefaultMaxSubscriptions);
//   - MaxInFlight: 64 handler calls or forwarded requests, and 64 queued
//     messages for the peer, per connection (DefaultMaxInFlight);
//   - MaxLineBytes: 4 MiB per input line (DefaultMaxLineBytes);
//   - WriteTimeout: 5 s per output message (DefaultWriteTimeout).
package stdio
