package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
)

// Conn is a connection shared by the Server and a peer: another JSON-RPC
// endpoint on the same stream, such as an MCP server implementation's
// transport connection. The Server serves every subscriptions/listen
// request (with Options.ForwardOtherVersions, every one naming protocol
// version 2026-07-28) and the notifications/cancelled naming one; every
// other message the client sends goes to the peer as it was read, through
// ReadMessage: requests (tools/call, initialize, ...), notifications
// (including cancellations of the peer's own requests) and responses to the
// peer's requests. The peer writes any message at any time with WriteMessage, on
// the connection's one writer: its answers, its own notifications (logging,
// progress, list changes) and its requests to the client. Options.Handler is
// not used.
//
// A Conn is made by Server.NewConn and served by Serve. Its methods are safe
// for concurrent use, and ReadMessage and WriteMessage may be called before
// Serve.
//
// Bounds (see Options.MaxInFlight): a request forwarded to the peer holds a
// unit of MaxInFlight until the peer answers it, and the queue of messages
// the peer has not read yet holds at most MaxInFlight messages; when either
// is full Serve stops reading. The peer must therefore answer every request
// it reads, even one the client cancelled (the answer to a cancelled request
// is dropped, as the client no longer expects it; its id stays in flight
// until then). A message the peer writes waits in WriteMessage until it was
// written.
//
// Ids are matched by their exact token, so the peer's answer must carry the
// id token exactly as the client sent it: a peer that decodes ids its own
// way (the go-sdk writes -0 as 0, "\u0041" as "A", and rounds integers
// beyond 2^53) must give its answers the client's token back, or their
// units stay taken. The gosdk module's Serve wraps a go-sdk server this way
// (its mcp.Connection decodes ReadMessage's bytes with the go-sdk's
// jsonrpc.DecodeMessage and encodes for WriteMessage with EncodeMessage).
type Conn struct {
	c *conn
}

// Serve serves the connection, as Server.Serve does, until it ends. With a
// peer, the connection ends gracefully when the input ended (EOF or a read
// error) or it was drained (Server.Shutdown, ctx), and then the peer
// closed; or at once when a write failed or timed out. Close drains it
// too, and Serve then returns nil (or the read error, if the input had
// failed). Serve may be called once.
func (pc *Conn) Serve(ctx context.Context) error {
	return pc.c.serve(ctx)
}

// ReadMessage returns the next message for the peer: one JSON-RPC message
// as the client sent it (valid JSON, without surrounding space, owned by the
// caller). It waits until there is one, and fails with:
//
//   - io.EOF once the input ended or the connection was drained, and every
//     message queued before was read: the peer should answer the requests it
//     has, then Close;
//   - the error Serve returns (matching ErrWriteTimeout, for example) once
//     the connection was lost: nothing more can be written;
//   - ErrConnClosed after Close;
//   - ctx.Err() when ctx ends first.
func (pc *Conn) ReadMessage(ctx context.Context) (json.RawMessage, error) {
	c := pc.c
	select {
	case <-c.dead:
		return nil, c.deadError()
	case <-c.peerDone:
		return nil, ErrConnClosed
	default:
	}
	select {
	case m, ok := <-c.inbound:
		if ok {
			return m, nil
		}
	case <-c.stopped:
		// Nothing more will be queued (but for a line the reader was
		// handling right then): what is left is read first.
		select {
		case m, ok := <-c.inbound:
			if ok {
				return m, nil
			}
		default:
		}
	case <-c.dead:
	case <-c.peerDone:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return nil, pc.endError()
}

// endError is what ReadMessage returns once nothing more comes.
func (pc *Conn) endError() error {
	c := pc.c
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.deadErr != nil:
		return c.deadErr
	case c.peerClosed:
		return ErrConnClosed
	default:
		return io.EOF
	}
}

// WriteMessage writes msg, one JSON-RPC message, as one line on the
// connection's writer, and returns once it was written. msg must be a JSON
// object (it is compacted onto one line if it spans several); it is not
// otherwise checked. An answer to a request the client cancelled is dropped
// (nil is returned). It fails, having written nothing, with ctx.Err() if
// ctx ends before the writer took the message, ErrConnClosed after Close,
// the error Serve returns once the connection was lost, and an error for a
// msg that is not a JSON object.
//
// Messages written by one goroutine are written in that order; messages of
// concurrent calls, of listens and of the Server's own answers interleave
// only as whole lines.
func (pc *Conn) WriteMessage(ctx context.Context, msg json.RawMessage) error {
	c := pc.c
	if err := ctx.Err(); err != nil {
		return err
	}
	h, ok := parseHead(msg)
	if !ok {
		return fmt.Errorf("stdio: WriteMessage: not a JSON object: %.40q", msg)
	}
	if h.answer && c.answered(h.id) {
		c.srv.log.Debug("stdio: answer to a cancelled request dropped", "id", h.id.Raw())
		return nil
	}
	return c.sendLine(nil, ctx, msg)
}

// Close ends the peer's side: ReadMessage and WriteMessage then fail with
// ErrConnClosed, and a pending one returns. If the connection is being
// served and still taking messages, it is drained as by Server.Shutdown
// (every open listen gets its completion result) and Serve then returns
// nil. The peer must call Close once it is done, also after ReadMessage
// failed: a graceful end of Serve waits for it. Close is idempotent and
// always returns nil.
func (pc *Conn) Close() error {
	c := pc.c
	c.mu.Lock()
	if c.peerClosed {
		c.mu.Unlock()
		return nil
	}
	c.peerClosed = true
	close(c.peerDone)
	if c.peerHeld {
		c.peerHeld = false
		c.active--
		c.maybeQuietLocked()
	}
	drain := c.started && !c.stopping
	c.mu.Unlock()
	if drain {
		c.drain(errPeerClosed)
	}
	return nil
}
