package stdio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/mcplisten/listen/internal/jsonobj"
)

// Conn is a connection shared by the Server and a peer: another JSON-RPC
// endpoint on the same stream, such as an MCP server implementation's
// transport connection. The Server serves every subscriptions/listen
// request and every notifications/cancelled; the peer gets every other
// message the client sends, through ReadMessage: requests (tools/call,
// initialize, ...), notifications and responses to the peer's own
// requests. The peer writes any message at any time with WriteMessage, on
// the connection's one writer: its answers, its own notifications (logging,
// progress, list changes) and its requests to the client. Options.Handler
// is not used.
//
// A Conn is made by Server.NewConn and served by Serve. Its methods are safe
// for concurrent use, and ReadMessage and WriteMessage may be called before
// Serve. Lines gives the same side as a reader and a writer of lines, for
// a peer that serves an io.Reader and an io.Writer.
//
// # What the peer reads
//
// Each message is rebuilt from the members the connection read (jsonrpc,
// id, method, params; result or error for a response), names matched
// exactly (see jsonrpc.ParseMessage): the peer cannot read it in another
// way, whatever its own JSON decoder does with case or repeated names.
//
// Ids: every request reaches the peer under an id of the connection's own,
// a small positive integer (1, 2, 3, ..., never reused), whatever id the
// client gave it; the peer answers under that id, and the answer is written
// with the client's id token exactly as the client sent it. A peer that
// decodes ids its own way (as float64, or -0 as 0, or "\u0041" as "A") thus
// answers every request correctly, and client ids it would read as one
// ("\u0041" and "A") never meet in it. An answer under an id the peer was
// never given, or given and already answered, is dropped (logged at Warn).
// The client's responses to the peer's own requests carry the peer's ids
// and reach it unchanged, as do the ids in the peer's own requests and
// notifications.
//
// Cancellations: a notifications/cancelled naming a request forwarded to
// the peer frees the client's id at once and reaches the peer with
// requestId rewritten to the peer's id; the peer must still answer the
// request, and that answer is dropped. A cancellation naming no request in
// flight, or malformed, is dropped at once and costs next to nothing; the
// peer never sees it.
//
// Bounds (see Options.MaxInFlight): a request forwarded to the peer holds a
// unit of MaxInFlight, and its bytes of MaxLineBytes, until the peer's
// answer has been written to the client (or dropped), so a client that
// does not read its output stops being read after MaxInFlight requests,
// however fast the peer answers, and the requests the peer is serving add
// up to at most MaxLineBytes (one alone may take it all); the
// queue of messages the peer has not read yet holds at most MaxInFlight
// messages. When either is full Serve stops reading. The peer must
// therefore answer every request it reads, even one the client cancelled:
// a request it never answers holds its unit for the connection's life. A
// message the peer writes waits in WriteMessage until it was written.
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
// (see Conn for how it is rebuilt), owned by the caller. It waits until
// there is one, and fails with:
//
//   - io.EOF once the input ended or the connection was drained, every
//     message queued before was read and every request the peer was handed
//     was answered (so a peer may end its session on io.EOF without
//     leaving a request unanswered): the peer should then Close;
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
	// The input is over: io.EOF once the peer answered what it was handed.
	c.mu.Lock()
	idle := c.forwardsIdle
	c.mu.Unlock()
	select {
	case <-idle:
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
// otherwise checked. A response (an "id" and no "method") answers the
// request the peer was given under that id: it is written with the
// client's id token instead, or dropped (nil is returned) if the client
// cancelled the request or the peer was given no such request (see Conn).
// It fails, having written nothing, with ctx.Err() if ctx ends before the
// writer took the message, ErrConnClosed after Close, the error Serve
// returns once the connection was lost, and an error for a msg that is not
// a JSON object. An answer that was not written is not written later: the
// request's unit of MaxInFlight is given back.
//
// Messages written by one goroutine are written in that order; messages of
// concurrent calls, of listens and of the Server's own answers interleave
// only as whole lines.
func (pc *Conn) WriteMessage(ctx context.Context, msg json.RawMessage) error {
	c := pc.c
	if err := ctx.Err(); err != nil {
		return err
	}
	line, err := oneLine(msg)
	if err != nil || !json.Valid(line[:len(line)-1]) {
		return fmt.Errorf("stdio: WriteMessage: not a JSON object: %.40q", msg)
	}
	h, ok := parseHead(line[:len(line)-1])
	if !ok {
		return fmt.Errorf("stdio: WriteMessage: not a JSON object: %.40q", msg)
	}
	if !h.answer {
		return c.sendLine(nil, ctx, line)
	}
	return c.answer(ctx, line, h)
}

// answer writes the peer's answer line (its head h) with the client's id,
// then gives back the request's unit of MaxInFlight.
func (c *conn) answer(ctx context.Context, line []byte, h head) error {
	token := line[h.idAt : h.idAt+h.idLen]
	peerID, err := strconv.ParseUint(string(token), 10, 64)
	c.mu.Lock()
	e := c.forwards[peerID]
	if err != nil || e == nil {
		c.mu.Unlock()
		c.srv.log.Warn("stdio: the peer answered a request it was not given; answer dropped", "id", string(token))
		return nil
	}
	c.removeForwardLocked(peerID)
	cancelled := e.cancelled.Load()
	if !cancelled {
		c.removeEntryLocked(e) // the client's id is free from now on
	}
	c.mu.Unlock()
	defer c.giveSlot(e.size)
	if cancelled {
		c.srv.log.Debug("stdio: answer to a cancelled request dropped", "id", e.id.Raw())
		return nil
	}
	client := e.id.Raw()
	out := make([]byte, 0, len(line)-h.idLen+len(client))
	out = append(out, line[:h.idAt]...)
	out = append(out, client...)
	out = append(out, line[h.idAt+h.idLen:]...)
	return c.sendLine(nil, ctx, out)
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

// head is what the Conn needs to know of a message its peer writes.
type head struct {
	// answer: a response (an "id" and no "method"); its id token is the
	// idLen bytes at index idAt.
	answer      bool
	idAt, idLen int
}

// parseHead reads the head of msg, valid JSON that the peer writes; false
// if it is not an object.
func parseHead(msg []byte) (head, bool) {
	found, _, ok := jsonobj.Lookup(msg, "id", "method")
	var h head
	id, method := found[0], found[1]
	h.idAt, h.idLen = id.Offset, len(id.Value)
	h.answer = id.Value != nil && method.Value == nil
	return h, ok
}
