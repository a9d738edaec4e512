package stdio

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// handleLine routes one input message. It runs on the reader goroutine, which
// is the only one that adds in-flight ids: a check of c.entries followed by
// an insert cannot be raced by another insert.
func (c *conn) handleLine(line []byte) {
	msg, err := jsonrpc.ParseMessage(line)
	if err != nil {
		if c.peer && isResponse(line) {
			// The client's answer to a request of the peer.
			c.forward(line)
			return
		}
		// The id is echoed when it could be read (ParseMessage keeps it).
		c.srv.log.Debug("stdio: malformed message", "err", err)
		c.reply(msg.ID, err)
		return
	}
	if !msg.HasID {
		c.notification(msg, line)
		return
	}
	if c.inFlight(msg.ID) {
		err := jsonrpc.NewError(jsonrpc.CodeInvalidRequest, spec.MsgDuplicateID)
		if msg.Method == spec.MethodListen {
			c.hookListenError(err)
		}
		c.reply(msg.ID, err)
		return
	}
	switch {
	case msg.Method == spec.MethodListen && !c.forwardsListen(msg.Params):
		c.listen(msg)
	case c.peer:
		c.forwardRequest(msg, line)
	default:
		c.request(msg)
	}
}

// notification handles a message without an id. It is never answered.
func (c *conn) notification(msg jsonrpc.Message, line []byte) {
	switch msg.Method {
	case spec.MethodCancelled:
		id, reason, ok := parseCancelled(msg.Params)
		if ok && c.cancelRequest(id, reason) {
			return
		}
		if c.peer {
			c.forward(line)
			return
		}
		if !ok {
			c.srv.log.Debug("stdio: malformed cancellation ignored")
		}
	case spec.MethodListen:
		if c.forwardsListen(msg.Params) {
			c.forward(line)
			return
		}
		c.srv.log.Debug("stdio: subscriptions/listen without an id ignored")
	default:
		if c.peer {
			c.forward(line)
			return
		}
		if c.srv.opts.Handler == nil || !c.takeSlot() {
			return
		}
		c.mu.Lock()
		c.active++
		c.mu.Unlock()
		go c.runHandler(nil, msg)
	}
}

// request starts a handler call for a request other than a listen, once a
// unit of MaxInFlight is free.
func (c *conn) request(msg jsonrpc.Message) {
	if c.srv.opts.Handler == nil {
		c.reply(msg.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+msg.Method))
		return
	}
	if !c.takeSlot() {
		return // drained or killed while waiting: not taken
	}
	e := &entry{id: msg.ID, kind: kindHandler, gone: make(chan struct{})}
	e.ctx, e.cancel = context.WithCancelCause(c.hctx)
	c.mu.Lock()
	c.entries[e.id] = e
	c.active++
	c.mu.Unlock()
	go c.runHandler(e, msg)
}

// forwardRequest queues a request for the peer, once a unit of MaxInFlight
// is free. Its id is in flight (and the unit held) until the peer answers.
func (c *conn) forwardRequest(msg jsonrpc.Message, line []byte) {
	if !c.takeSlot() {
		return
	}
	e := &entry{id: msg.ID, kind: kindForward}
	c.mu.Lock()
	c.entries[e.id] = e
	c.mu.Unlock()
	if !c.forward(line) {
		// Not queued (the connection stopped taking messages). The unit
		// goes back with the entry, unless an answer the peer wrote for
		// this id (it never read the request) took both already.
		c.mu.Lock()
		removed := c.removeEntryLocked(e)
		c.mu.Unlock()
		if removed {
			c.giveSlot()
		}
	}
}

// forward queues a copy of line for the peer, waiting for room; false if
// the connection stopped taking messages meanwhile.
func (c *conn) forward(line []byte) bool {
	m := bytes.Clone(bytes.TrimSpace(line))
	select {
	case c.inbound <- m:
		return true
	case <-c.stopped:
		return false
	}
}

// answered handles an answer the peer writes for id: if it is a forwarded
// request in flight, its id and its unit of MaxInFlight are freed, and drop
// reports whether the client cancelled it (the answer is then not written).
func (c *conn) answered(id jsonrpc.ID) (drop bool) {
	c.mu.Lock()
	e, ok := c.entries[id]
	if !ok || e.kind != kindForward {
		c.mu.Unlock()
		return false
	}
	c.removeEntryLocked(e)
	c.mu.Unlock()
	c.giveSlot()
	return e.cancelled.Load()
}

// listen validates a subscriptions/listen request and starts its goroutine.
// Checks, in order, as the streamhttp package does: the params
// (listen.ParseParams), the protocol version, then capacity.
func (c *conn) listen(msg jsonrpc.Message) {
	req := &listen.Request{ID: msg.ID, Transport: listen.Transport{Kind: TransportKind}}
	if err := listen.ParseParams(msg.Params, req); err != nil {
		c.hookListenError(err)
		c.reply(msg.ID, err)
		return
	}
	if err := spec.ListenVersionError(c.srv.opts.SupportedVersions, req.ProtocolVersion); err != nil {
		c.hookListenError(err)
		c.reply(msg.ID, err)
		return
	}

	e := &entry{id: msg.ID, kind: kindListen, gone: make(chan struct{})}
	e.ownerCtx, e.ownerCancel = context.WithCancelCause(c.base)
	e.serveCtx, e.serveCancel = context.WithCancelCause(c.base)
	c.mu.Lock()
	switch {
	case c.deadErr != nil:
		c.mu.Unlock()
		e.ownerCancel(nil)
		e.serveCancel(nil)
		return
	case c.listens >= c.srv.opts.MaxSubscriptions:
		c.mu.Unlock()
		e.ownerCancel(nil)
		e.serveCancel(nil)
		c.srv.log.Debug("stdio: listen refused: capacity exhausted", "id", msg.ID.Raw(), "max", c.srv.opts.MaxSubscriptions)
		err := jsonrpc.NewError(jsonrpc.CodeInternalError, spec.MsgCapacityExhausted).WithCause(listen.Failed(listen.ErrOverloaded))
		c.hookListenError(err)
		c.reply(msg.ID, err)
		return
	}
	if c.drainErr != nil {
		// Read before the drain began: it is opened, then completed at once.
		e.shutdown.Store(true)
		e.serveCancel(listen.ErrShutdown)
	}
	c.entries[e.id] = e
	c.listens++
	c.active++
	c.mu.Unlock()
	go c.runListen(e, req)
}

// forwardsListen reports whether a subscriptions/listen message with params
// goes to the peer: on a Conn with Options.ForwardOtherVersions, when its
// _meta does not name protocol version 2026-07-28 (read as listen.ParseParams
// reads it).
func (c *conn) forwardsListen(params json.RawMessage) bool {
	if !c.peer || !c.srv.opts.ForwardOtherVersions {
		return false
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	var version string
	if json.Unmarshal(params, &p) != nil || json.Unmarshal(p.Meta[spec.MetaProtocolVersion], &version) != nil {
		return true
	}
	return version != spec.ProtocolVersion
}

// parseCancelled reads the params of notifications/cancelled: an object with
// requestId (a string or an integer) and an optional string reason. Anything
// else is malformed (ok false): such cancellations are ignored, or forwarded
// to the peer of a Conn.
func parseCancelled(params json.RawMessage) (id jsonrpc.ID, reason string, ok bool) {
	var p map[string]json.RawMessage
	if json.Unmarshal(params, &p) != nil || p == nil {
		return jsonrpc.ID{}, "", false
	}
	id, ok = jsonrpc.ParseID(p["requestId"])
	if !ok {
		return jsonrpc.ID{}, "", false
	}
	if raw, has := p["reason"]; has {
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &reason) != nil {
			return jsonrpc.ID{}, "", false
		}
	}
	return id, reason, true
}

// response is the shape of a JSON-RPC response, to recognise one.
type response struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
}

// isResponse reports whether line is a JSON-RPC 2.0 response: no method,
// exactly one of result and error, and a string or integer id (or a null id
// for an error).
func isResponse(line []byte) bool {
	var m response
	if json.Unmarshal(line, &m) != nil {
		return false
	}
	if m.JSONRPC == nil || *m.JSONRPC != "2.0" || m.Method != nil || (m.Result == nil) == (m.Error == nil) {
		return false
	}
	if string(bytes.TrimSpace(m.ID)) == "null" {
		return m.Error != nil
	}
	_, ok := jsonrpc.ParseID(m.ID)
	return ok
}

// head is what the Conn needs to know of a message its peer writes.
type head struct {
	// answer: a response (an id and no method); id is then its id.
	answer bool
	id     jsonrpc.ID
}

// parseHead reads the head of a message the peer writes: it must be a JSON
// object.
func parseHead(msg []byte) (head, bool) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method json.RawMessage `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil {
		return head{}, false
	}
	if m.Method != nil || len(m.ID) == 0 {
		return head{}, true
	}
	id, ok := jsonrpc.ParseID(m.ID)
	return head{answer: ok, id: id}, true
}
