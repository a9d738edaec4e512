package stdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcplisten/listen/jsonrpc"
)

// writeReq is one message for the writer goroutine.
type writeReq struct {
	// line is the message and its '\n', owned by the request.
	line []byte
	// entry, when set, is the request the message belongs to: the message is
	// dropped if the client cancelled it meanwhile.
	entry *entry
	// done receives the result (buffer of one: the writer never waits).
	done chan error
}

// errNotOneLine is returned for a message that holds a newline and is not
// valid JSON (so it cannot be compacted onto one line). Nothing is written.
var errNotOneLine = errors.New("stdio: message is not valid JSON and spans lines")

// reply writes the error response err for id (no id when id is not valid).
func (c *conn) reply(id jsonrpc.ID, err error) {
	_ = c.send(nil, jsonrpc.ErrorResponse(id, err))
}

// send writes msg as one line and waits until it was written, dropped (its
// request e was cancelled: then it returns at once, even while the writer is
// busy) or the connection was lost. msg is copied: the caller may reuse it as
// soon as send returns. A message holding a newline (the JSON of a handler
// result or an error's data may) is compacted first.
func (c *conn) send(e *entry, msg []byte) error {
	var gone chan struct{} // nil (never ready) for messages of no request
	if e != nil {
		if e.cancelled.Load() {
			return e.cause
		}
		gone = e.gone
	}
	var line []byte
	if bytes.ContainsAny(msg, "\r\n") {
		var buf bytes.Buffer
		buf.Grow(len(msg) + 1)
		if err := json.Compact(&buf, msg); err != nil {
			c.srv.log.Warn("stdio: message dropped", "err", errNotOneLine)
			return errNotOneLine
		}
		buf.WriteByte('\n')
		line = buf.Bytes()
	} else {
		line = make([]byte, len(msg)+1)
		copy(line, msg)
		line[len(msg)] = '\n'
	}
	req := &writeReq{line: line, entry: e, done: make(chan error, 1)}
	select {
	case c.writes <- req:
	case <-c.dead:
		return c.deadError()
	case <-gone:
		return e.cause
	}
	select {
	case err := <-req.done:
		return err
	case <-c.dead:
		return c.deadError()
	case <-gone:
		// The writer drops it unless it is being written already.
		return e.cause
	}
}

// writeLoop is the writer goroutine: the only one that writes to w. It ends
// when Serve closes writerStop, after every writer is gone.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case req := <-c.writes:
			req.done <- c.writeOne(req, &timer)
		case <-c.writerStop:
			return
		}
	}
}

// writeOne writes one line within WriteTimeout. A write that fails or times
// out kills the connection.
func (c *conn) writeOne(req *writeReq, timer **time.Timer) error {
	if e := req.entry; e != nil && e.cancelled.Load() {
		return e.cause
	}
	select {
	case <-c.dead:
		return c.deadError()
	default:
	}
	if *timer == nil {
		*timer = time.AfterFunc(c.srv.opts.WriteTimeout, c.writeTimedOut)
	} else {
		(*timer).Reset(c.srv.opts.WriteTimeout)
	}
	_, err := c.w.Write(req.line)
	if !(*timer).Stop() {
		// The timeout fired: wait for its kill, whatever Write returned.
		<-c.timeoutDone
		return c.deadError()
	}
	if err != nil {
		c.kill(fmt.Errorf("stdio: write: %w", err))
		return c.deadError()
	}
	return nil
}

// writeTimedOut runs when a write took longer than WriteTimeout.
func (c *conn) writeTimedOut() {
	defer close(c.timeoutDone)
	c.kill(fmt.Errorf("%w (after %v)", ErrWriteTimeout, c.srv.opts.WriteTimeout))
}
