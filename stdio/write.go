package stdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
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
	// state: reqPending until the writer takes it (reqTaken) or its sender
	// gives up waiting (reqAbandoned); whoever moves it first decides
	// whether it is written.
	state atomic.Uint32
	// done receives the result (buffer of one: the writer never waits).
	done chan error
}

const (
	reqPending uint32 = iota
	reqTaken
	reqAbandoned
)

// errNotOneLine is returned for a message that holds a newline and is not
// valid JSON (so it cannot be compacted onto one line). Nothing is written.
var errNotOneLine = errors.New("stdio: message is not valid JSON and spans lines")

// reply writes the error response err for id (no id when id is not valid).
func (c *conn) reply(id jsonrpc.ID, err error) {
	_ = c.send(nil, jsonrpc.ErrorResponse(id, err))
}

// send writes msg as one line and waits until it was written, dropped (its
// request e was cancelled: then it returns at once, even while the writer is
// writing it) or the connection was lost. msg is copied: the caller
// may reuse it as soon as send returns. A message holding a newline (the
// JSON of a handler result or an error's data may) is compacted first.
func (c *conn) send(e *entry, msg []byte) error {
	return c.sendLine(e, nil, msg)
}

// sendLine is send, for a message of the peer when ctx is not nil: it then
// also gives up when ctx ends or the peer closes before the writer took the
// message (it was not written), and otherwise reports the write's result.
func (c *conn) sendLine(e *entry, ctx context.Context, msg []byte) error {
	var gone, ctxDone, peerDone <-chan struct{} // nil: never ready
	if e != nil {
		if e.cancelled.Load() {
			return e.cause
		}
		gone = e.gone
	}
	if ctx != nil {
		ctxDone = ctx.Done()
		peerDone = c.peerDone
	}
	line, err := oneLine(msg)
	if err != nil {
		c.srv.log.Warn("stdio: message dropped", "err", err)
		return err
	}
	req := &writeReq{line: line, entry: e, done: make(chan error, 1)}
	select {
	case c.writes <- req:
	case <-c.dead:
		return c.deadError()
	case <-gone:
		return e.cause
	case <-ctxDone:
		return ctx.Err()
	case <-peerDone:
		return ErrConnClosed
	}
	var why error
	select {
	case err := <-req.done:
		return err
	case <-c.dead:
		return c.deadError()
	case <-gone:
		// The stream ends at once; the writer drops the message unless it
		// is writing it already.
		req.state.CompareAndSwap(reqPending, reqAbandoned)
		return e.cause
	case <-ctxDone:
		why = ctx.Err()
	case <-peerDone:
		why = ErrConnClosed
	}
	if req.state.CompareAndSwap(reqPending, reqAbandoned) {
		return why
	}
	// The writer is writing it: its result is the truth.
	select {
	case err := <-req.done:
		return err
	case <-c.dead:
		return c.deadError()
	}
}

// oneLine returns msg and a '\n' in a new slice, compacting msg first if it
// holds a line break.
func oneLine(msg []byte) ([]byte, error) {
	if bytes.ContainsAny(msg, "\r\n") {
		var buf bytes.Buffer
		buf.Grow(len(msg) + 1)
		if err := json.Compact(&buf, msg); err != nil {
			return nil, errNotOneLine
		}
		buf.WriteByte('\n')
		return buf.Bytes(), nil
	}
	line := make([]byte, len(msg)+1)
	copy(line, msg)
	line[len(msg)] = '\n'
	return line, nil
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
			if req.state.CompareAndSwap(reqPending, reqTaken) {
				req.done <- c.writeOne(req, &timer)
			}
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
	c.writing.Store(true)
	_, err := c.w.Write(req.line)
	c.writing.Store(false)
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
