// Package streamhttp serves MCP 2026-07-28 subscriptions/listen over
// Streamable HTTP: a listen is one POST whose response is a long-lived SSE
// stream, on the request's goroutine or, for a taken-over HTTP/1.x
// connection, on none. It is a framing of a listen.Server, which holds the
// policy (limits, hooks, Stats, ending streams by principal, the drain):
// this package turns a POST into a listen.Request, answers a refusal with
// its HTTP status, frames the stream as SSE and sees the client leave.
//
//	srv := listen.NewServer(src, listen.Options{Capabilities: caps, ServerInfo: info})
//	h, err := streamhttp.New(srv, streamhttp.Options{})
//	srv := &http.Server{Addr: addr, Handler: h}
//	go srv.ListenAndServe()
//	...
//	h.Shutdown(ctx)   // every open stream gets its completion result
//	srv.Shutdown(ctx) // then the HTTP server stops
//
// To add listens to an existing MCP server, put Front in front of it; for
// a go-sdk server, the gosdk module's NewHandler does it all.
//
// # Where to look
//
//   - Handler.ServeHTTP: every check a request meets, in order, with its
//     status and exact JSON-RPC error (405, 403, 401, 413, 408, 400, 404,
//     429, 503); a refused request never opens the Source.
//   - Options: each limit with its default (MaxBodyBytes 256 KiB,
//     ReadTimeout 10 s, KeepAlive 15 s, WriteTimeout 10 s), and the
//     http.Server settings a listen endpoint needs (HTTP/2 included); the
//     stream limits are the Server's (listen.Options.MaxStreams 1,024,
//     MaxStreamsPerKey a quarter of it, by client address).
//   - Handler: how each kind of stream is served and who owns its
//     goroutines.
//   - listen.Server.EndStreams and Options.Expiry: ending the streams of a
//     principal whose credential was revoked, or has expired (Authenticate
//     runs once per listen; a stream may live for days).
//   - adapter.HandlerOptions.Sessions (gosdk, mcpgo): the older clients'
//     sessions of the SDK handler behind Front bounded in total and per
//     client, expired when idle, unknown session ids answered 404.
//
// # Goroutines
//
// A Handler is safe for concurrent use. Decoding, admitting and opening a
// listen, and the Server's OnOpen, run on the request's goroutine. HTTP/2 streams and
// Options.NoTakeover keep that goroutine until the stream ends; an
// HTTP/1.x stream's connection is taken over, and on Linux a taken-over
// hub stream has no goroutine while idle: a few writer loops, a slow path
// per stream that fills its socket, one epoll watcher and one keep-alive
// sweeper serve them all. Every other taken-over stream has a goroutine of
// its own and a small reader. Every path ends a stream in one order (its
// subscription closed, its slot freed and counted, OnClose, its
// connection's end), and every goroutine of a stream has ended when
// Shutdown returns nil.
//
// # The stream
//
// A listen that opens is answered 200 with Content-Type text/event-stream
// and no Content-Length (on HTTP/1.1 also Connection: close). Each
// JSON-RPC message is one SSE event, flushed at once ("event: message",
// then the message on one data line); after KeepAlive without a write
// comes the comment ": keep-alive". The acknowledgement is first, then the
// notifications, then at most one terminal message:
//
//   - the source ends its stream: the completion result (reason
//     listen.ErrComplete); it fails: the error -32603 "Subscription source
//     failed" (reason Failed);
//   - the client disconnects, or stops reading until a write misses its
//     WriteTimeout: nothing more is written (reason Disconnected);
//   - Shutdown: the completion result (reason listen.ErrShutdown);
//   - an early ending of the core (listen.Options.Access,
//     Server.EndStreams, Options.Expiry, MaxLifetime, a hub listener that
//     fell behind): by default the completion result with the reason in
//     its _meta (reason listen.ErrRevoked, ErrExpired, ErrLifetime,
//     ErrFellBehind; counted in the Server's Stats).
//
// The Server's OnOpen and OnClose observe every opened subscription and
// OnRefuse every refused request (this package's own refusals included);
// Options.OnKeepAlive every keep-alive written.
//
// # Shutting down
//
// Call Handler.Shutdown, then http.Server.Shutdown, with one deadline:
//
//	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
//	defer cancel()
//	err := listens.Shutdown(ctx) // every open stream gets its completion result
//	err = errors.Join(err, srv.Shutdown(ctx))
//
// Handler.Shutdown drains the Server (listen.Server.Shutdown): with
// listen.Options.DrainWindow the completions are spread over the window,
// so the clients' re-listens reach the other instances at a steady rate;
// new listens get 503 with Retry-After meanwhile.
//
// (http.Server.Shutdown alone does not wait for taken-over connections.)
//
// # Origins
//
// Every request is checked for its Origin and Host, Front's other requests
// too. On a loopback address the default check refuses a Host that is not
// a loopback name (DNS rebinding); elsewhere list the server's names in
// Options.AllowedHosts (and browser origins in AllowedOrigins).
package streamhttp
