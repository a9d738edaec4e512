package stdio

import (
	"context"
	"encoding/json"
	"strconv"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/echo"
	"github.com/mcplisten/listen/internal/jsonobj"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// handleLine routes one input message. It runs on the reader goroutine, which
// is the only one that adds in-flight ids: a check of c.entries followed by
// an insert cannot be raced by another insert.
func (c *conn) handleLine(line []byte) {
	maxID := c.srv.maxID
	msg, err := jsonrpc.ParseMessageMaxID(line, maxID)
	if err != nil {
		if c.peer {
			if resp, ok := parseResponse(line, maxID); ok {
				// The client's answer to a request of the peer.
				c.forward(resp)
				return
			}
		}
		// The id is echoed when it could be read (ParseMessage keeps it),
		// and never when it is over the bound.
		c.srv.log.Debug("stdio: malformed message", "err", err)
		c.reply(msg.ID, err)
		return
	}
	if !msg.HasID {
		c.notification(msg, len(line))
		return
	}
	if c.inFlight(msg.ID) {
		err := jsonrpc.NewError(jsonrpc.CodeInvalidRequest, core.DuplicateID)
		if msg.Method == spec.MethodListen {
			c.srv.ls.Refused(&listen.Request{ID: msg.ID, Transport: listen.Transport{Kind: TransportKind}}, err)
		}
		c.reply(msg.ID, err)
		return
	}
	switch {
	case msg.Method == spec.MethodListen:
		c.listen(msg)
	case c.peer:
		c.forwardRequest(msg, len(line))
	default:
		c.request(msg, len(line))
	}
}

// notification handles a message without an id, of size bytes. It is
// never answered.
func (c *conn) notification(msg jsonrpc.Message, size int) {
	switch msg.Method {
	case spec.MethodCancelled:
		c.cancellation(msg.Params)
	case spec.MethodListen:
		c.srv.log.Debug("stdio: subscriptions/listen without an id ignored")
	default:
		if c.peer {
			c.forward(peerMessage(nil, 0, msg))
			return
		}
		if c.srv.opts.Handler == nil || !c.takeSlot(size) {
			return
		}
		c.mu.Lock()
		c.active++
		c.mu.Unlock()
		go c.runHandler(nil, msg, size)
	}
}

// cancellation handles notifications/cancelled. One naming a listen or a
// handler call in flight ends it; one naming a request forwarded to the
// peer goes to the peer, naming the id the peer knows; any other (an id not
// in flight, or malformed) is dropped at once: it could mean nothing to the
// peer, which knows no id of the client's.
func (c *conn) cancellation(params json.RawMessage) {
	id, reason, at, ok := parseCancelled(params, c.srv.maxID)
	if !ok {
		c.srv.log.Debug("stdio: malformed cancellation ignored")
		return
	}
	if peerID, forwarded := c.cancelRequest(id, reason); forwarded {
		c.forward(cancelForPeer(params, at, len(id.Raw()), peerID))
	}
}

// request starts a handler call for a request other than a listen, of size
// bytes, once a unit of MaxInFlight and room for its bytes are free.
func (c *conn) request(msg jsonrpc.Message, size int) {
	if c.srv.opts.Handler == nil {
		c.reply(msg.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+echo.Cut(msg.Method)))
		return
	}
	if !c.takeSlot(size) {
		return // drained or killed while waiting: not taken
	}
	e := &entry{id: msg.ID, kind: kindHandler, gone: make(chan struct{}), size: size}
	e.ctx, e.cancel = context.WithCancelCause(c.hctx)
	c.mu.Lock()
	c.entries[e.id] = e
	c.active++
	c.mu.Unlock()
	go c.runHandler(e, msg, size)
}

// forwardRequest hands a request of size bytes to the peer under an id of
// the connection's own (see Conn), once a unit of MaxInFlight and room for
// its bytes are free. Both are held until the peer's answer was written,
// or dropped.
func (c *conn) forwardRequest(msg jsonrpc.Message, size int) {
	if !c.takeSlot(size) {
		return
	}
	c.mu.Lock()
	c.lastPeerID++
	e := &entry{id: msg.ID, kind: kindForward, peerID: c.lastPeerID, size: size}
	c.entries[e.id] = e
	c.addForwardLocked(e)
	c.mu.Unlock()
	if !c.forward(peerMessage(nil, e.peerID, msg)) {
		// Not queued (the connection stopped taking messages). The unit
		// goes back with the entry, unless an answer the peer wrote for
		// this id (it never read the request) took both already.
		c.mu.Lock()
		_, pending := c.forwards[e.peerID]
		if pending {
			c.removeForwardLocked(e.peerID)
			c.removeEntryLocked(e)
		}
		c.mu.Unlock()
		if pending {
			c.giveSlot(e.size)
		}
	}
}

// forward queues m for the peer, waiting for room; false if the connection
// stopped taking messages meanwhile.
func (c *conn) forward(m []byte) bool {
	select {
	case c.inbound <- m:
		return true
	case <-c.stopped:
		return false
	}
}

// listen reads a subscriptions/listen request, has the listen.Server admit
// it and starts its goroutine. Checks, in order, as the streamhttp package
// does: the params (the listen params checks), then listen.Server.Begin and Slot.Admit (the
// protocol version, capacity, ...).
func (c *conn) listen(msg jsonrpc.Message) {
	req := &listen.Request{ID: msg.ID, Transport: listen.Transport{Kind: TransportKind}}
	if err := core.ParseParams(msg.Params, req); err != nil {
		c.srv.ls.Refused(req, err)
		c.reply(msg.ID, err)
		return
	}
	if c.srv.opts.Auth != nil {
		req.Auth, req.Expiry = c.auth()
	}
	slot := c.srv.ls.Begin(req.Auth)
	if err := slot.Admit(c.hctx, req); err != nil {
		c.srv.log.Debug("stdio: listen refused", "id", msg.ID.Raw(), "err", err)
		c.reply(msg.ID, err)
		return
	}

	e := &entry{id: msg.ID, kind: kindListen, gone: make(chan struct{})}
	e.ownerCtx, e.ownerCancel = context.WithCancelCause(c.base)
	e.serveCtx, e.serveCancel = context.WithCancelCause(c.base)
	c.mu.Lock()
	if c.deadErr != nil {
		c.mu.Unlock()
		e.ownerCancel(nil)
		e.serveCancel(nil)
		slot.Done(nil)
		return
	}
	if c.drainErr != nil {
		// Read before the drain began: it is opened, then completed at once.
		e.shutdown.Store(true)
		e.serveCancel(listen.ErrShutdown)
	}
	c.entries[e.id] = e
	c.active++
	c.mu.Unlock()
	go c.runListen(e, slot, req)
}

// parseCancelled reads the params of notifications/cancelled: an object with
// requestId (a string or an integer) and an optional string reason, neither
// repeated (names matched exactly). at is the index of requestId's value in
// params. Anything else is malformed (ok false): such cancellations are
// ignored, and so is a requestId longer than maxID bytes, which names no
// request in flight (every one's id is within the bound).
func parseCancelled(params json.RawMessage, maxID int) (id jsonrpc.ID, reason string, at int, ok bool) {
	found, unique, isObject := jsonobj.Lookup(params, "requestId", "reason")
	if !isObject || !unique {
		return jsonrpc.ID{}, "", 0, false
	}
	rawID, rawReason := found[0].Value, found[1].Value
	if core.IDTooLong(rawID, maxID) {
		return jsonrpc.ID{}, "", 0, false
	}
	if id, ok = jsonrpc.ParseID(rawID); !ok {
		return jsonrpc.ID{}, "", 0, false
	}
	if rawReason != nil && (rawReason[0] != '"' || json.Unmarshal(rawReason, &reason) != nil) {
		return jsonrpc.ID{}, "", 0, false
	}
	return id, reason, found[0].Offset, true
}

// parseResponse reads line as a JSON-RPC 2.0 response: jsonrpc "2.0", no
// method, exactly one of result and error, and a string or integer id (or
// a null id for an error) of at most maxID bytes, no member repeated (names
// matched exactly). It returns the response rebuilt from those members, for
// the peer.
func parseResponse(line []byte, maxID int) ([]byte, bool) {
	if !json.Valid(line) {
		return nil, false
	}
	v, unique, isObject := jsonobj.Lookup(line, "jsonrpc", "id", "method", "result", "error")
	version, id, method, result, rerr := v[0].Value, v[1].Value, v[2].Value, v[3].Value, v[4].Value
	var ver string
	if !isObject || !unique || method != nil || json.Unmarshal(version, &ver) != nil || ver != "2.0" || (result == nil) == (rerr == nil) {
		return nil, false
	}
	if string(id) == "null" {
		if rerr == nil {
			return nil, false
		}
	} else if core.IDTooLong(id, maxID) {
		return nil, false
	} else if _, ok := jsonrpc.ParseID(id); !ok {
		return nil, false
	}
	b := make([]byte, 0, 40+len(id)+len(result)+len(rerr))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	if result != nil {
		b = append(append(b, `,"result":`...), result...)
	} else {
		b = append(append(b, `,"error":`...), rerr...)
	}
	return append(b, '}'), true
}

// peerMessage appends to b the request or notification msg as the peer
// reads it: rebuilt from the members the connection read (jsonrpc, method,
// params), with id peerID for a request (0: a notification). Other members
// are dropped, so that the peer cannot read the message differently.
func peerMessage(b []byte, peerID uint64, msg jsonrpc.Message) []byte {
	b = append(b, `{"jsonrpc":"2.0",`...)
	if peerID != 0 {
		b = append(b, `"id":`...)
		b = strconv.AppendUint(b, peerID, 10)
		b = append(b, ',')
	}
	b = append(b, `"method":`...)
	b = jsonobj.AppendString(b, msg.Method)
	if msg.Params != nil {
		b = append(append(b, `,"params":`...), msg.Params...)
	}
	return append(b, '}')
}

// cancelForPeer returns the cancellation with params whose requestId (n
// bytes at index at) names the peer's id for the request instead.
func cancelForPeer(params []byte, at, n int, peerID uint64) []byte {
	b := make([]byte, 0, 80+len(params))
	b = append(b, `{"jsonrpc":"2.0","method":"`+spec.MethodCancelled+`","params":`...)
	b = append(b, params[:at]...)
	b = strconv.AppendUint(b, peerID, 10)
	b = append(b, params[at+n:]...)
	return append(b, '}')
}
