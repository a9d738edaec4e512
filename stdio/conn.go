package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// conn is one connection being served: the reader (Serve's own goroutine),
// the writer goroutine, and one goroutine per listen and per handler call.
//
// Every goroutine that may write holds a unit of active while it runs (the
// reader holds one while it handles a line). quiet is closed once the
// connection stopped taking messages (stopping) and active is back to zero:
// from then on nothing more can be written, and Serve stops the writer.
type conn struct {
	srv *Server
	r   io.Reader
	w   io.Writer

	// base carries the values of Serve's context without its cancellation:
	// subscriptions are ended by the connection, not by ctx directly.
	base context.Context
	// hctx is the parent of every handler context: Serve's context, also
	// cancelled when the connection is lost.
	hctx    context.Context
	hcancel context.CancelCauseFunc

	// writes carries messages to the writer goroutine (unbuffered).
	writes chan *writeReq
	// dead is closed by kill: the connection is lost, writes fail at once.
	dead chan struct{}
	// writerStop is closed by Serve once quiet, to end the writer goroutine.
	writerStop chan struct{}
	// writerDone is closed by the writer goroutine as it exits.
	writerDone chan struct{}
	// timeoutDone is closed by the write-timeout callback after its kill.
	timeoutDone chan struct{}

	mu sync.Mutex
	// entries holds the in-flight request ids: open (or opening) listens and
	// handler calls. An entry leaves it before its final message is written,
	// or when the client cancels it.
	entries map[jsonrpc.ID]*entry
	// listens counts the listen entries, for MaxSubscriptions.
	listens int
	// active counts the goroutines that may still write (see conn).
	active int
	// stopping: no more messages are taken (EOF, read error, drain, kill).
	stopping bool
	// quiet is closed once stopping and active == 0 (closed under mu).
	quiet       chan struct{}
	quietClosed bool
	drainErr    error // set by the first drain: what Serve returns
	deadErr     error // set by kill: what Serve returns, takes precedence
	readErr     error // a read error other than EOF
}

// entry is one in-flight request id.
type entry struct {
	id      jsonrpc.ID
	handler bool

	// Handler calls: the call's context.
	ctx    context.Context
	cancel context.CancelCauseFunc

	// Listens: ownerCtx is given to listen.Open (so it is the subscription's
	// owner); it is cancelled only to abort an Open in progress. serveCtx is
	// given to Subscription.Serve; its cause ends the stream.
	ownerCtx    context.Context
	ownerCancel context.CancelCauseFunc
	serveCtx    context.Context
	serveCancel context.CancelCauseFunc
	opened      bool  // under conn.mu: Open returned and serving began
	abort       error // under conn.mu: the reason it ended while opening

	// shutdown: a drain ended it; its terminal message is preceded by
	// notifications/cancelled.
	shutdown atomic.Bool
	// cancelled: the client cancelled it; nothing more is written for it.
	// cause (written before cancelled is set) is the listen.Cancelled reason.
	// gone is closed right after cancelled is set, to release a send that
	// waits for the writer.
	cancelled atomic.Bool
	cause     error
	gone      chan struct{}
}

// end ends e with reason. Call with conn.mu held.
func (e *entry) end(reason error) {
	if e.handler {
		e.cancel(reason)
		return
	}
	if !e.opened && e.abort == nil {
		e.abort = reason
		e.ownerCancel(reason)
	}
	e.serveCancel(reason)
}

func newConn(ctx context.Context, srv *Server, r io.Reader, w io.Writer) *conn {
	c := &conn{
		srv:         srv,
		r:           r,
		w:           w,
		base:        context.WithoutCancel(ctx),
		writes:      make(chan *writeReq),
		dead:        make(chan struct{}),
		writerStop:  make(chan struct{}),
		writerDone:  make(chan struct{}),
		timeoutDone: make(chan struct{}),
		entries:     make(map[jsonrpc.ID]*entry),
		quiet:       make(chan struct{}),
	}
	c.hctx, c.hcancel = context.WithCancelCause(ctx)
	return c
}

// serve runs the connection; see Server.Serve.
func (c *conn) serve(ctx context.Context) error {
	go c.writeLoop()
	drained := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(drained)
		c.drain(context.Cause(ctx))
	})

	c.readLoop()
	<-c.quiet
	if !stop() {
		// The drain callback started: wait for it to return.
		<-drained
	}
	close(c.writerStop)
	<-c.writerDone
	c.hcancel(context.Canceled)

	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.deadErr != nil:
		return c.deadErr
	case c.drainErr != nil:
		return c.drainErr
	default:
		return c.readErr
	}
}

// acquire takes a unit of active unless the connection is stopping.
func (c *conn) acquire() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopping {
		return false
	}
	c.active++
	return true
}

// release gives back a unit of active.
func (c *conn) release() {
	c.mu.Lock()
	c.active--
	c.maybeQuietLocked()
	c.mu.Unlock()
}

func (c *conn) maybeQuietLocked() {
	if c.stopping && c.active == 0 && !c.quietClosed {
		c.quietClosed = true
		close(c.quiet)
	}
}

// inputDone records the end of the input: EOF or a read error ends every
// listen as disconnected; handler calls in flight go on and are answered.
func (c *conn) inputDone(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.stopping {
		c.stopping = true
		if !errors.Is(err, io.EOF) {
			c.readErr = fmt.Errorf("stdio: read: %w", err)
			c.srv.log.Warn("stdio: read failed", "err", err)
		}
		reason := listen.Disconnected(err)
		for _, e := range c.entries {
			if !e.handler {
				e.end(reason)
			}
		}
	}
	c.maybeQuietLocked()
}

// drain stops reading and ends every listen with ErrShutdown (Serve writes
// its completion). Handler calls in flight go on. cause is what Serve returns.
func (c *conn) drain(cause error) {
	c.mu.Lock()
	if c.drainErr != nil || c.deadErr != nil {
		c.mu.Unlock()
		return
	}
	c.drainErr = cause
	wasStopping := c.stopping
	c.stopping = true
	for _, e := range c.entries {
		if !e.handler {
			e.shutdown.Store(true)
			e.serveCancel(listen.ErrShutdown)
		}
	}
	c.maybeQuietLocked()
	c.mu.Unlock()
	if !wasStopping {
		interruptRead(c.r)
	}
}

// kill ends the connection at once with err: every listen is closed as
// Disconnected(err), every handler context is cancelled, pending and later
// writes fail, and the reader and the writer are stopped.
func (c *conn) kill(err error) {
	c.mu.Lock()
	if c.deadErr != nil {
		c.mu.Unlock()
		return
	}
	c.deadErr = err
	c.stopping = true
	close(c.dead)
	reason := listen.Disconnected(err)
	for _, e := range c.entries {
		e.end(reason)
	}
	c.hcancel(reason)
	c.maybeQuietLocked()
	c.mu.Unlock()
	c.srv.log.Warn("stdio: connection lost", "err", err)
	interruptWrite(c.w)
	interruptRead(c.r)
}

// deadError returns the kill error (call only after dead is closed).
func (c *conn) deadError() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deadErr
}

// removeEntry drops e from the in-flight ids, if it is still there.
func (c *conn) removeEntry(e *entry) {
	c.mu.Lock()
	c.removeEntryLocked(e)
	c.mu.Unlock()
}

func (c *conn) removeEntryLocked(e *entry) {
	if c.entries[e.id] == e {
		delete(c.entries, e.id)
		if !e.handler {
			c.listens--
		}
	}
}

// inFlight reports whether id is an open listen or a handler call.
func (c *conn) inFlight(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[id]
	return ok
}

// cancelRequest handles notifications/cancelled for id: the listen or the
// handler call is ended with listen.Cancelled(reason), nothing more is
// written for it, and the id is free at once. Unknown ids are ignored.
func (c *conn) cancelRequest(id jsonrpc.ID, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		c.srv.log.Debug("stdio: cancellation of an unknown request ignored", "id", id.Raw())
		return
	}
	c.removeEntryLocked(e)
	cause := listen.Cancelled(reason)
	e.cause = cause
	e.cancelled.Store(true)
	close(e.gone)
	e.end(cause)
}

// aLongTimeAgo is a deadline in the past, to stop a pending Read or Write.
var aLongTimeAgo = time.Unix(1, 0)

// interruptRead stops a Read pending on r, if it can (see Server.Serve).
func interruptRead(r io.Reader) {
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(aLongTimeAgo) == nil {
		return
	}
	if cl, ok := r.(io.Closer); ok {
		_ = cl.Close()
	}
}

// interruptWrite stops a Write pending on w, if it can (see Server.Serve).
func interruptWrite(w io.Writer) {
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(aLongTimeAgo) == nil {
		return
	}
	if cl, ok := w.(io.Closer); ok {
		_ = cl.Close()
	}
}
