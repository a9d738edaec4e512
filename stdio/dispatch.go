package stdio

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// handleLine routes one input message. It runs on the reader goroutine, which
// is the only one that adds in-flight ids: a check of c.entries followed by
// an insert cannot be raced by another insert.
func (c *conn) handleLine(line []byte) {
	msg, err := jsonrpc.ParseMessage(line)
	if err != nil {
		// The id is echoed when it could be read (ParseMessage keeps it).
		c.srv.log.Debug("stdio: malformed message", "err", err)
		c.reply(msg.ID, err)
		return
	}
	if !msg.HasID {
		c.notification(msg)
		return
	}
	if c.inFlight(msg.ID) {
		err := jsonrpc.NewError(jsonrpc.CodeInvalidRequest, jsonrpc.MsgDuplicateID)
		if msg.Method == jsonrpc.MethodListen {
			c.hookListenError(err)
		}
		c.reply(msg.ID, err)
		return
	}
	if msg.Method == jsonrpc.MethodListen {
		c.listen(msg)
		return
	}
	c.request(msg)
}

// notification handles a message without an id. It is never answered.
func (c *conn) notification(msg jsonrpc.Message) {
	switch msg.Method {
	case jsonrpc.MethodCancelled:
		id, reason, ok := parseCancelled(msg.Params)
		if !ok {
			c.srv.log.Debug("stdio: malformed cancellation ignored")
			return
		}
		c.cancelRequest(id, reason)
	case jsonrpc.MethodListen:
		c.srv.log.Debug("stdio: subscriptions/listen without an id ignored")
	default:
		if c.srv.opts.Handler == nil {
			return
		}
		c.mu.Lock()
		c.active++
		c.mu.Unlock()
		go c.runHandler(nil, msg)
	}
}

// request starts a handler call for a request other than a listen.
func (c *conn) request(msg jsonrpc.Message) {
	if c.srv.opts.Handler == nil {
		c.reply(msg.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found: "+msg.Method))
		return
	}
	e := &entry{id: msg.ID, handler: true, gone: make(chan struct{})}
	e.ctx, e.cancel = context.WithCancelCause(c.hctx)
	c.mu.Lock()
	c.entries[e.id] = e
	c.active++
	c.mu.Unlock()
	go c.runHandler(e, msg)
}

// listen validates a subscriptions/listen request and starts its goroutine.
// Checks, in order, as the streamhttp package does: the params
// (listen.ParseListenParams), the protocol version, then capacity.
func (c *conn) listen(msg jsonrpc.Message) {
	req := &listen.Request{ID: msg.ID, Transport: listen.Transport{Kind: TransportKind}}
	if err := listen.ParseParams(msg.Params, req); err != nil {
		c.hookListenError(err)
		c.reply(msg.ID, err)
		return
	}
	switch v := req.ProtocolVersion; {
	case jsonrpc.HasListen(v):
	case jsonrpc.IsLegacyVersion(v):
		err := jsonrpc.NewError(jsonrpc.CodeMethodNotFound, jsonrpc.MsgMethodNotFoundListen)
		c.hookListenError(err)
		c.reply(msg.ID, err)
		return
	default:
		err := jsonrpc.UnsupportedVersionError(c.srv.opts.SupportedVersions, v)
		c.hookListenError(err)
		c.reply(msg.ID, err)
		return
	}

	e := &entry{id: msg.ID, gone: make(chan struct{})}
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
		err := jsonrpc.NewError(jsonrpc.CodeInternalError, jsonrpc.MsgCapacityExhausted).WithCause(listen.Failed(listen.ErrOverloaded))
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

// parseCancelled reads the params of notifications/cancelled: an object with
// requestId (a string or an integer) and an optional string reason. Anything
// else is malformed (ok false): such cancellations are ignored.
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
