package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcplisten/listen/jsonrpc"
)

// runHandler runs one Handler call and answers it when it is a request (e is
// nil for a notification). It owns one unit of conn.active and one of
// MaxInFlight, with size bytes (the message's).
func (c *conn) runHandler(e *entry, msg jsonrpc.Message, size int) {
	defer c.release()
	defer c.giveSlot(size)
	ctx := c.hctx
	if e != nil {
		defer e.cancel(context.Canceled)
		ctx = e.ctx
	}
	result, err := c.call(ctx, msg)
	if e == nil {
		if err != nil {
			c.srv.log.Debug("stdio: notification handler failed", "method", msg.Method, "err", err)
		}
		return
	}
	c.removeEntry(e)
	var out []byte
	if err != nil {
		out = jsonrpc.ErrorResponse(e.id, err)
	} else if out, err = resultResponse(e.id, result); err != nil {
		c.srv.log.Warn("stdio: handler returned a result that is not JSON", "method", msg.Method, "id", e.id.Raw())
		out = jsonrpc.ErrorResponse(e.id, jsonrpc.NewError(jsonrpc.CodeInternalError, msgInternalError).WithCause(err))
	}
	_ = c.send(e, out)
}

// call runs the handler, turning a panic into -32603 "Internal error".
func (c *conn) call(ctx context.Context, msg jsonrpc.Message) (result json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			c.srv.log.Warn("stdio: handler panicked", "method", msg.Method, "panic", v)
			result = nil
			err = jsonrpc.NewError(jsonrpc.CodeInternalError, msgInternalError).WithCause(fmt.Errorf("stdio: handler panic: %v", v))
		}
	}()
	return c.srv.opts.Handler.Handle(ctx, msg)
}

// errResultNotJSON is the private cause of the internal error that answers a
// handler result that is not JSON.
var errResultNotJSON = fmt.Errorf("stdio: handler result is not JSON")

// resultResponse shapes the JSON-RPC result response for id. An empty result
// is {}; a result that is not JSON is an error.
func resultResponse(id jsonrpc.ID, result json.RawMessage) ([]byte, error) {
	result = bytes.TrimSpace(result)
	if len(result) == 0 {
		result = json.RawMessage("{}")
	}
	if !json.Valid(result) {
		return nil, errResultNotJSON
	}
	b := make([]byte, 0, 40+len(id.Raw())+len(result))
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id.Raw()...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	return append(b, '}'), nil
}
