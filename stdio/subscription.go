package stdio

import (
	"context"
	"errors"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
)

// runListen opens the subscription of e, admitted in slot, and serves it
// to its end, then frees the slot. It owns one unit of conn.active.
func (c *conn) runListen(e *entry, slot *listen.Slot, req *listen.Request) {
	defer c.release()
	// Both contexts are cancelled only once the subscription is closed (or
	// was never opened), so these cancels never end a live stream.
	defer e.ownerCancel(context.Canceled)
	defer e.serveCancel(context.Canceled)

	sub, err := slot.Open(e.ownerCtx, e.ownerCtx, req)
	c.mu.Lock()
	abort := e.abort
	if err == nil && abort == nil {
		e.opened = true
	}
	c.mu.Unlock()

	switch {
	case err != nil:
		c.removeEntry(e)
		slot.Done(nil)
		if abort != nil {
			// Cancelled or disconnected while opening: nothing is written.
			c.srv.log.Debug("stdio: listen ended while opening", "id", e.id.Raw(), "reason", abort)
			return
		}
		c.srv.log.Debug("stdio: listen refused", "id", e.id.Raw(), "err", err)
		_ = c.send(e, jsonrpc.ErrorResponse(e.id, err))
		return
	case abort != nil:
		c.removeEntry(e)
		sub.Close(abort)
		slot.Done(sub.CloseReason())
		c.srv.log.Debug("stdio: listen ended while opening", "id", e.id.Raw(), "reason", sub.CloseReason())
		return
	}

	reason := sub.Serve(e.serveCtx, listen.Sink{
		Write: func(msg []byte) error { return c.subWrite(e, msg) },
		Final: func(msg []byte, ended error) error { return c.subFinal(e, msg, ended) },
	})
	c.removeEntry(e)
	slot.Done(reason)
	c.srv.log.Debug("stdio: subscription closed", "id", e.id.Raw(), "reason", reason, "class", listen.Classify(reason))
}

// subWrite is the Sink.Write of e's subscription.
func (c *conn) subWrite(e *entry, msg []byte) error {
	if e.cancelled.Load() {
		return e.cause
	}
	return c.send(e, msg)
}

// subFinal is the Sink.Final of e's subscription: before the terminal
// message it frees the id (so the client may reuse it as soon as it reads
// the terminal) and, when the server ends the stream (a drain, an early
// ending: ended), writes notifications/cancelled first.
func (c *conn) subFinal(e *entry, msg []byte, ended error) error {
	if e.cancelled.Load() {
		return e.cause
	}
	c.removeEntry(e)
	if c.srv.opts.OmitShutdownCancelled {
		return c.send(e, msg)
	}
	reason := ""
	switch {
	case e.shutdown.Load(), errors.Is(ended, listen.ErrShutdown):
		reason = shutdownReason
	case ended != nil:
		reason = endedReason(ended)
	}
	if reason != "" {
		if err := c.send(e, serverCancelled(e.id, reason)); err != nil {
			return err
		}
	}
	return c.send(e, msg)
}

// endedReason is the reason of the notifications/cancelled that precedes
// the terminal message of a listen the server ended early (an early
// ending: see listen.Options.EndWithError): "Subscription ended: " and the
// ending's class, such as "Subscription ended: revoked".
func endedReason(reason error) string {
	return "Subscription ended: " + listen.Classify(reason)
}

// serverCancelled returns the notifications/cancelled the server sends for
// the listen id before the terminal message of a stream it ends (reason:
// shutdownReason, or endedReason's). It carries the subscription id in
// _meta, like every message of the stream.
func serverCancelled(id jsonrpc.ID, reason string) []byte {
	b := make([]byte, 0, 160+2*len(id.Raw())+len(reason))
	b = append(b, `{"jsonrpc":"2.0","method":"`+spec.MethodCancelled+`","params":{"_meta":{"`+spec.MetaSubscriptionID+`":`...)
	b = append(b, id.Raw()...)
	b = append(b, `},"reason":`...)
	b = strconv.AppendQuote(b, reason) // ASCII: quoted as JSON would
	b = append(b, `,"requestId":`...)
	b = append(b, id.Raw()...)
	return append(b, "}}"...)
}

// auth calls Options.Auth with the connection's context, recovering a
// panic (the listen then has no principal).
func (c *conn) auth() (auth any, expiry time.Time) {
	defer func() {
		if v := recover(); v != nil {
			c.srv.log.Error("stdio: Auth panicked", "panic", v, "stack", string(debug.Stack()))
		}
	}()
	return c.srv.opts.Auth(c.hctx)
}
