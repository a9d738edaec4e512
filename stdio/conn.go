package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// conn is one connection being served: the reader goroutine, the writer
// goroutine, one goroutine per listen and per handler call, and on a Conn
// the peer (which holds a unit of active until it closes).
//
// Every goroutine that may write holds a unit of active while it runs (the
// reader holds one while it handles a line). quiet is closed once the
// connection stopped taking messages (stopping) and active is back to zero:
// from then on nothing more can be written, and Serve stops the writer.
//
// Bounds: slots (MaxInFlight) is taken by the reader for every handler call
// and every request forwarded to the peer, with the message's bytes
// (bytesInFlight, at most MaxLineBytes but for a lone message), and given
// back once the call's response, or the peer's answer, was written (or
// dropped); the reader waits for them, which stops the reading: a client
// that does not read its output stops being read. inbound (capacity MaxInFlight) is the queue of messages
// for the peer; the reader waits when it is full. Output is not queued: each
// message waits in its sender until the writer wrote it.
type conn struct {
	srv *Server
	// r and w are set before serve registers the connection and never
	// change afterwards.
	r io.Reader
	w io.Writer
	// peer: non-listen messages go to the Conn's peer, not to the Handler.
	peer bool

	// base carries the values of Serve's context without its cancellation:
	// subscriptions are ended by the connection, not by ctx directly.
	base context.Context
	// hctx is the parent of every handler context: Serve's context, also
	// cancelled when the connection is lost.
	hctx    context.Context
	hcancel context.CancelCauseFunc

	// writes carries messages to the writer goroutine (unbuffered).
	writes chan *writeReq
	// writing is true while the writer goroutine is inside w.Write.
	writing atomic.Bool
	// stopped is closed when the connection stops taking messages
	// (stopping): EOF, a read error, a drain or a kill.
	stopped chan struct{}
	// dead is closed by kill: the connection is lost, writes fail at once.
	dead chan struct{}
	// writerStop is closed by Serve once quiet, to end the writer goroutine.
	writerStop chan struct{}
	// writerDone and readerDone are closed by the writer and the reader
	// goroutines as they exit.
	writerDone chan struct{}
	readerDone chan struct{}
	// timeoutDone is closed by the write-timeout callback after its kill.
	timeoutDone chan struct{}
	// finished is closed when serve returns.
	finished chan struct{}
	// slots holds one value per handler call or forwarded request whose
	// response is not written yet (capacity MaxInFlight).
	slots chan struct{}
	// bytesInFlight adds up the sizes of the messages holding a unit of
	// slots (at most MaxLineBytes, or one message); bytesFreed (capacity
	// 1) wakes the reader when some are given back.
	bytesMu       sync.Mutex
	bytesInFlight int
	bytesFreed    chan struct{}
	// inbound queues the messages for the peer (capacity MaxInFlight; nil
	// without a peer). The reader goroutine closes it as it exits.
	inbound chan []byte
	// peerDone is closed by Conn.Close.
	peerDone chan struct{}

	mu sync.Mutex
	// entries holds the in-flight request ids: open (or opening) listens,
	// handler calls and requests forwarded to the peer. Each leaves it
	// before its final message (or the peer's answer) is written, or when
	// the client cancels it.
	entries map[jsonrpc.ID]*entry
	// forwards holds the requests forwarded to the peer and not answered
	// yet, by the id the peer knows them by; lastPeerID is the last such id
	// given (ids count up from 1). A request leaves forwards when the peer
	// answers it (or when it could not be queued), and gives back its unit
	// of slots once that answer was written or dropped.
	forwards   map[uint64]*entry
	lastPeerID uint64
	// forwardsIdle is closed while forwards is empty (replaced by an open
	// channel when a request is added to it): ReadMessage's io.EOF waits
	// for it.
	forwardsIdle chan struct{}
	// active counts the goroutines that may still write (see conn).
	active int
	// started: serve set the connection up (r, w, the contexts).
	started bool
	// stopping: no more messages are taken (EOF, read error, drain, kill).
	stopping bool
	// quiet is closed once stopping and active == 0 (closed under mu).
	quiet       chan struct{}
	quietClosed bool
	drainErr    error // set by the first drain: what Serve returns
	deadErr     error // set by kill: what Serve returns, takes precedence
	readErr     error // a read error other than EOF
	// inputEnded: the reader saw EOF or a read error, and exits by itself.
	inputEnded bool
	// readTried: a drain or a kill tried to stop the pending Read;
	// readStopped: it could.
	readTried, readStopped bool
	// writeStuck: a kill found a Write pending that it could not stop.
	writeStuck bool
	// peerHeld: the peer holds a unit of active (from serve until Close or
	// kill). peerClosed: Conn.Close was called.
	peerHeld, peerClosed bool
}

// entryKind tells what an in-flight request id belongs to.
type entryKind uint8

const (
	kindListen  entryKind = iota // a subscriptions/listen
	kindHandler                  // a Handler call
	kindForward                  // a request forwarded to the peer
)

// entry is one in-flight request id.
type entry struct {
	id   jsonrpc.ID
	kind entryKind

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

	// Requests forwarded to the peer: the id the peer knows it by.
	peerID uint64
	// size is the bytes of the request (handler calls and forwarded
	// requests), counted while it holds its unit of MaxInFlight.
	size int

	// shutdown: a drain ended it; its terminal message is preceded by
	// notifications/cancelled.
	shutdown atomic.Bool
	// cancelled: the client cancelled it; nothing more is written for it
	// (for a forwarded request: the peer's answer is dropped). cause
	// (written before cancelled is set) is the listen.Cancelled reason.
	// gone is closed right after cancelled is set, to release a send that
	// waits for the writer (nil for forwarded requests, whose answer is
	// checked before it is sent).
	cancelled atomic.Bool
	cause     error
	gone      chan struct{}
}

// end ends e with reason. Call with conn.mu held.
func (e *entry) end(reason error) {
	switch e.kind {
	case kindHandler:
		e.cancel(reason)
	case kindListen:
		if !e.opened && e.abort == nil {
			e.abort = reason
			e.ownerCancel(reason)
		}
		e.serveCancel(reason)
	}
	// A request forwarded to the peer is the peer's: it learns of the end
	// from ReadMessage and WriteMessage.
}

func (s *Server) newConn(r io.Reader, w io.Writer, peer bool) *conn {
	c := &conn{
		srv:          s,
		r:            r,
		w:            w,
		peer:         peer,
		writes:       make(chan *writeReq),
		stopped:      make(chan struct{}),
		dead:         make(chan struct{}),
		writerStop:   make(chan struct{}),
		writerDone:   make(chan struct{}),
		readerDone:   make(chan struct{}),
		timeoutDone:  make(chan struct{}),
		finished:     make(chan struct{}),
		slots:        make(chan struct{}, s.opts.MaxInFlight),
		bytesFreed:   make(chan struct{}, 1),
		peerDone:     make(chan struct{}),
		entries:      make(map[jsonrpc.ID]*entry),
		forwards:     make(map[uint64]*entry),
		forwardsIdle: closedChan(),
		quiet:        make(chan struct{}),
	}
	if peer {
		c.inbound = make(chan []byte, s.opts.MaxInFlight)
	}
	return c
}

// errServeTwice is returned by a second Serve of the same Conn.
var errServeTwice = errors.New("stdio: Conn.Serve called more than once")

// errPeerClosed is the drain cause of Conn.Close; Serve returns nil for it.
var errPeerClosed = errors.New("stdio: the peer closed the connection")

// serve runs the connection; see Server.Serve.
func (c *conn) serve(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return errServeTwice
	}
	c.started = true
	c.base = context.WithoutCancel(ctx)
	c.hctx, c.hcancel = context.WithCancelCause(ctx)
	restoreR, restoreW := func() {}, func() {}
	if !c.srv.opts.BlockingFiles {
		if f, ok := c.r.(*os.File); ok {
			c.r, restoreR = pollable(f)
		}
		if f, ok := c.w.(*os.File); ok {
			c.w, restoreW = pollable(f)
		}
	}
	peerClosed := c.peerClosed
	if c.peer && !peerClosed {
		c.peerHeld = true
		c.active++
	}
	c.mu.Unlock()
	defer close(c.finished)
	defer c.hcancel(context.Canceled)

	if !c.srv.register(c) {
		c.refuse()
		restoreR()
		restoreW()
		return ErrServerClosed
	}
	defer c.srv.unregister(c)

	go c.writeLoop()
	go c.readLoop()
	drained := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(drained)
		c.drain(context.Cause(ctx))
	})
	if peerClosed {
		c.drain(errPeerClosed)
	}

	<-c.quiet
	if !stop() {
		// The drain callback started: wait for it to return.
		<-drained
	}
	close(c.writerStop)

	c.mu.Lock()
	writeStuck := c.writeStuck
	readWait := c.inputEnded || c.readStopped
	c.mu.Unlock()
	if writeStuck {
		c.srv.linger(c.writerDone)
	} else {
		<-c.writerDone
		restoreW()
	}
	if readWait {
		<-c.readerDone
		restoreR()
	} else {
		c.srv.linger(c.readerDone)
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.deadErr != nil && writeStuck:
		return fmt.Errorf("%w; the Write is still pending: it could not be interrupted (see Serve)", c.deadErr)
	case c.deadErr != nil:
		return c.deadErr
	case c.drainErr != nil && c.drainErr != errPeerClosed:
		return c.drainErr
	default:
		return c.readErr
	}
}

// refuse ends a connection Serve refused (the Server is shut down): the
// peer's calls fail with ErrServerClosed.
func (c *conn) refuse() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.deadErr = ErrServerClosed
	c.setStoppingLocked()
	close(c.dead)
	c.peerHeld = false
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

func (c *conn) setStoppingLocked() {
	if !c.stopping {
		c.stopping = true
		close(c.stopped)
	}
}

// takeSlot waits for room for the size bytes of the message that takes it,
// then for a unit of MaxInFlight: the messages holding a unit add up to at
// most MaxLineBytes, but one is always let in when none holds one. false if
// the connection stopped taking messages meanwhile. Only the reader calls
// it.
func (c *conn) takeSlot(size int) bool {
	for logged := false; ; logged = true {
		c.bytesMu.Lock()
		inFlight := c.bytesInFlight
		if inFlight == 0 || inFlight+size <= c.srv.opts.MaxLineBytes {
			c.bytesInFlight += size
			c.bytesMu.Unlock()
			break
		}
		c.bytesMu.Unlock()
		if !logged {
			c.srv.log.Debug("stdio: reading waits for bytes in flight to be answered",
				"in_flight", inFlight, "message", size, "limit", c.srv.opts.MaxLineBytes)
		}
		select {
		case <-c.bytesFreed:
		case <-c.stopped:
			return false
		}
	}
	select {
	case c.slots <- struct{}{}:
		return true
	case <-c.stopped:
		c.giveBytes(size)
		return false
	}
}

// giveBytes gives back size bytes of MaxLineBytes in flight.
func (c *conn) giveBytes(size int) {
	c.bytesMu.Lock()
	c.bytesInFlight -= size
	c.bytesMu.Unlock()
	select {
	case c.bytesFreed <- struct{}{}: // the reader may be waiting for room
	default: // a wake-up is pending already
	}
}

// giveSlot gives back a unit of MaxInFlight and its size bytes.
func (c *conn) giveSlot(size int) {
	c.giveBytes(size)
	<-c.slots
}

// inputDone records the end of the input: EOF or a read error ends every
// listen as disconnected; handler calls in flight go on and are answered,
// and the peer may still answer what it read.
func (c *conn) inputDone(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inputEnded = true
	if !c.stopping {
		c.setStoppingLocked()
		if !errors.Is(err, io.EOF) {
			c.readErr = fmt.Errorf("stdio: read: %w", err)
			c.srv.log.Warn("stdio: read failed", "err", err)
		}
		reason := listen.Disconnected(err)
		for _, e := range c.entries {
			if e.kind == kindListen {
				e.end(reason)
			}
		}
	}
	c.maybeQuietLocked()
}

// drain stops reading and ends every listen with ErrShutdown (Serve writes
// its completion). Handler calls in flight go on; the peer reads io.EOF once
// it has read what was queued. cause is what Serve returns (the first
// drain's).
func (c *conn) drain(cause error) { c.stopTaking(cause, true) }

// stopTaking stops reading, as the first step of a drain; with endListens
// it also ends every open listen with ErrShutdown. Server.Shutdown stops
// taking without ending the listens: its listen.Server ends them, paced.
// A later call ends them if its endListens says so.
func (c *conn) stopTaking(cause error, endListens bool) {
	c.mu.Lock()
	if c.deadErr != nil {
		c.mu.Unlock()
		return
	}
	if c.drainErr == nil {
		c.drainErr = cause
	}
	c.setStoppingLocked()
	if endListens {
		for _, e := range c.entries {
			if e.kind == kindListen {
				e.shutdown.Store(true)
				e.serveCancel(listen.ErrShutdown)
			}
		}
	}
	c.stopReadLocked()
}

// kill ends the connection at once with err: every listen is closed as
// Disconnected(err), every handler context is cancelled, pending and later
// writes fail, the peer's calls fail with err, and the reader and the writer
// are stopped.
func (c *conn) kill(err error) {
	c.mu.Lock()
	if c.deadErr != nil {
		c.mu.Unlock()
		return
	}
	c.deadErr = err
	c.setStoppingLocked()
	close(c.dead)
	if c.peerHeld {
		c.peerHeld = false
		c.active--
	}
	reason := listen.Disconnected(err)
	for _, e := range c.entries {
		e.end(reason)
	}
	c.hcancel(reason)
	c.srv.log.Warn("stdio: connection lost", "err", err)
	// Hold a unit of active while stopping the writer, so that Serve does
	// not look at writeStuck before it is known.
	c.active++
	c.mu.Unlock()
	stopped := interruptWrite(c.w)
	c.mu.Lock()
	if c.writing.Load() && !stopped {
		c.writeStuck = true
	}
	c.active--
	c.stopReadLocked()
}

// stopReadLocked stops the pending Read once (unless the input already
// ended), then unlocks c.mu. It holds a unit of active meanwhile, so that
// Serve does not look at readStopped before it is known.
func (c *conn) stopReadLocked() {
	try := !c.readTried && !c.inputEnded
	c.readTried = true
	if !try {
		c.maybeQuietLocked()
		c.mu.Unlock()
		return
	}
	c.active++
	c.mu.Unlock()
	ok := interruptRead(c.r)
	c.mu.Lock()
	c.readStopped = ok
	c.active--
	c.maybeQuietLocked()
	c.mu.Unlock()
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

// removeEntryLocked drops e from the in-flight ids, if it is still there,
// and reports whether it was.
func (c *conn) removeEntryLocked(e *entry) bool {
	if c.entries[e.id] != e {
		return false
	}
	delete(c.entries, e.id)
	return true
}

// addForwardLocked records e, a request handed to the peer.
func (c *conn) addForwardLocked(e *entry) {
	if len(c.forwards) == 0 {
		c.forwardsIdle = make(chan struct{})
	}
	c.forwards[e.peerID] = e
}

// removeForwardLocked forgets the request the peer knows as peerID.
func (c *conn) removeForwardLocked(peerID uint64) {
	delete(c.forwards, peerID)
	if len(c.forwards) == 0 {
		close(c.forwardsIdle)
	}
}

// closedChan returns a closed channel.
func closedChan() chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

// inFlight reports whether id is an open listen, a handler call or a
// forwarded request not yet answered.
func (c *conn) inFlight(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[id]
	return ok
}

// cancelRequest handles notifications/cancelled for id. A listen or a
// handler call is ended with listen.Cancelled(reason), nothing more is
// written for it, and the id is free at once. So is the id of a request
// forwarded to the peer: forwarded is then true and peerID is the peer's
// id for it, for the cancellation the peer is told of; the request still
// holds its unit of MaxInFlight until the peer answers, and that answer is
// dropped. An id not in flight changes nothing.
func (c *conn) cancelRequest(id jsonrpc.ID, reason string) (peerID uint64, forwarded bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[id]
	if !ok {
		c.srv.log.Debug("stdio: cancellation of an unknown request", "id", id.Raw())
		return 0, false
	}
	c.removeEntryLocked(e)
	e.cause = listen.Cancelled(reason)
	e.cancelled.Store(true)
	if e.kind == kindForward {
		return e.peerID, true
	}
	close(e.gone)
	e.end(e.cause)
	return 0, false
}

// aLongTimeAgo is a deadline in the past, to stop a pending Read or Write.
var aLongTimeAgo = time.Unix(1, 0)

// interruptRead stops a Read pending on r, if it can (see Server.Serve),
// and reports whether it could.
func interruptRead(r io.Reader) bool {
	if d, ok := r.(interface{ SetReadDeadline(time.Time) error }); ok && d.SetReadDeadline(aLongTimeAgo) == nil {
		return true
	}
	return closeToInterrupt(r)
}

// interruptWrite stops a Write pending on w, if it can (see Server.Serve),
// and reports whether it could.
func interruptWrite(w io.Writer) bool {
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok && d.SetWriteDeadline(aLongTimeAgo) == nil {
		return true
	}
	return closeToInterrupt(w)
}

// closeToInterrupt closes v if it is an io.Closer other than an *os.File:
// closing a blocking descriptor does not end a Read or Write pending on it
// (the descriptor is released only once that call returns).
func closeToInterrupt(v any) bool {
	if _, isFile := v.(*os.File); isFile {
		return false
	}
	if cl, ok := v.(io.Closer); ok {
		_ = cl.Close()
		return true
	}
	return false
}
