package streamhttp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/internal/fastpath"
)

// SSE framing. Every JSON-RPC message is one event named "message" whose
// data is the message on a single line; a keep-alive is a comment.
var (
	eventPrefix    = []byte("event: message\ndata: ")
	eventSuffix    = []byte("\n\n")
	keepAliveFrame = []byte(": keep-alive\n\n")
)

// writeDeadline bounds every write of one stream by the write timeout. Both
// write paths use it: net/http's ResponseWriter (through its
// http.ResponseController) and a taken-over connection. It is used by one
// goroutine, the one that runs Subscription.Serve.
type writeDeadline struct {
	conn interface{ SetWriteDeadline(time.Time) error }
	// timeout is the write timeout; it is positive (see Options).
	timeout time.Duration
	// lazy (HTTP/1.x): the deadline is refreshed only when less than half
	// of it is left, and is not cleared between writes (an expired write
	// deadline does nothing to an idle HTTP/1 connection, and the next write
	// refreshes it first). Otherwise (HTTP/2, where a deadline that expires
	// between writes resets the stream) every write sets and clears its own.
	lazy bool
	at   time.Time
}

// arm sets the deadline before a write: the write gets all of the timeout,
// or, when lazy, at least half of it.
func (d *writeDeadline) arm() error {
	now := time.Now()
	if d.lazy && d.at.Sub(now) >= d.timeout/2 {
		return nil
	}
	d.at = now.Add(d.timeout)
	return d.set(d.at)
}

// disarm clears the deadline after a write, unless lazy.
func (d *writeDeadline) disarm() error {
	if d.lazy {
		return nil
	}
	return d.set(time.Time{})
}

// set sets the deadline. A ResponseWriter that does not support deadlines
// (http.ErrNotSupported) is written without one.
func (d *writeDeadline) set(at time.Time) error {
	if err := d.conn.SetWriteDeadline(at); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

// sseWriter writes a stream's frames through net/http's ResponseWriter. It
// is used by one goroutine, the one that runs Subscription.Serve.
type sseWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	deadline writeDeadline
	// started is set once the 200 status line and headers were sent.
	started bool
	// broken is set after a failed write: the response is unusable.
	broken bool
	// scratch holds a message whose line breaks had to be replaced; it is
	// dropped after use, so a stream keeps no large buffer.
	scratch []byte
}

// newSSEWriter returns the writer of w, whose writes are bounded by timeout
// (lazily on HTTP/1.x: see writeDeadline).
func newSSEWriter(w http.ResponseWriter, timeout time.Duration, http1 bool) *sseWriter {
	rc := http.NewResponseController(w)
	return &sseWriter{w: w, rc: rc, deadline: writeDeadline{conn: rc, timeout: timeout, lazy: http1}}
}

// message writes msg as one SSE event and flushes it. It does not keep msg.
func (s *sseWriter) message(msg []byte) error {
	if bytes.ContainsAny(msg, "\r\n") {
		s.scratch = append(s.scratch[:0], msg...)
		oneLine(s.scratch)
		msg = s.scratch
		defer func() { s.scratch = nil }()
	}
	return s.send(eventPrefix, msg, eventSuffix)
}

// ping writes a keep-alive comment.
func (s *sseWriter) ping() error { return s.send(keepAliveFrame) }

// send writes parts and flushes them within the write deadline.
func (s *sseWriter) send(parts ...[]byte) (err error) {
	if s.broken {
		return errBroken
	}
	defer func() {
		if err != nil {
			s.broken = true
		}
	}()
	if err := s.deadline.arm(); err != nil {
		return err
	}
	if !s.started {
		s.started = true
		s.w.WriteHeader(http.StatusOK)
	}
	for _, p := range parts {
		if _, err := s.w.Write(p); err != nil {
			return err
		}
	}
	if err := s.rc.Flush(); err != nil {
		return err
	}
	return s.deadline.disarm()
}

// finish bounds the bytes net/http writes after the handler returns (the
// last chunk) by one more write timeout.
func (s *sseWriter) finish() {
	if s.started && !s.broken {
		_ = s.deadline.set(time.Now().Add(s.deadline.timeout))
	}
}

// oneLine turns raw line breaks into spaces: in valid JSON they can only be
// insignificant whitespace (inside strings they are escaped), and they would
// end the SSE data line.
func oneLine(b []byte) {
	if bytes.IndexByte(b, '\n') < 0 && bytes.IndexByte(b, '\r') < 0 {
		return // the common case, found at memchr speed
	}
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
}

// errBroken is returned by writes after a failed one.
var errBroken = errors.New("streamhttp: response already failed")

// maxKeptBuffer is the largest frame buffer a stream or a writer loop keeps
// between messages: a larger one, grown for a large event, is dropped.
const maxKeptBuffer = 64 << 10

// ErrUnexpectedBytes is the cause (inside a listen.Disconnected reason) of
// a taken-over stream whose client sent bytes after its listen request: a
// listen's client has nothing more to send on that connection, so the
// stream ends at the first such byte, which is never read further.
var ErrUnexpectedBytes = errors.New("streamhttp: the client sent bytes after its listen request")

// takenOver is an HTTP/1.x listen stream whose connection the Handler took
// over (http.Hijacker) once the subscription was open: it writes the status
// line, the headers and raw SSE events straight to the connection, and the
// body ends when the connection closes (Connection: close). net/http's
// request goroutine returns and its per-connection buffers are freed.
//
// On Linux, a stream whose subscription can be served in steps (a hub stream)
// is served by the Handler's fanout instead, with no goroutine of its own
// while idle (see fanout). Any other stream owns two goroutines: run, which
// serves the stream and ends it, and watch, which reads the connection to
// see the client leave. run closes the connection when the stream ends,
// which ends watch, and waits for it.
type takenOver struct {
	conn net.Conn
	st   *stream

	head     []byte // status line and headers, sent with the first frame
	deadline writeDeadline
	buf      []byte // one frame; reused
	broken   bool

	watched chan struct{} // closed when watch returns
}

// takeover hijacks w's connection for the open stream of request r, and
// returns it with the response head to write first and the reason the
// stream must end at once, if any (early). It reports false when the
// connection cannot be hijacked (the stream then stays inside net/http).
func (h *Handler) takeover(w http.ResponseWriter, r *http.Request) (conn net.Conn, head *[]byte, early error, ok bool) {
	head = &plainHead
	if len(w.Header()) > 0 { // headers set before the handler: a head of its own
		own := responseHead(w.Header())
		head = &own
	}

	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, nil, nil, false
	}
	// A listen's client sends nothing after its request: bytes it did send
	// already (read ahead into net/http's buffer, dropped with it) end the
	// stream before it starts.
	if brw.Reader.Buffered() > 0 {
		early = listen.Disconnected(ErrUnexpectedBytes)
	}
	// From now on the fanout or watch sees the client leave. If it left
	// before (net/http then ended the request's context), the stream ends
	// now.
	if r.Context().Err() != nil && early == nil {
		early = listen.Disconnected(context.Cause(r.Context()))
	}
	return conn, head, early, true
}

// plainHead is the response head of a taken-over stream whose response had
// no header set yet (the usual case), made once.
var plainHead = responseHead(nil)

// responseHead returns the status line and headers of a taken-over stream's
// 200 response: base's headers with the stream's (see setStreamHeaders),
// Connection: close, and no length or transfer coding.
func responseHead(base http.Header) []byte {
	hdr := base.Clone()
	if hdr == nil {
		hdr = http.Header{}
	}
	setStreamHeaders(hdr)
	hdr.Set("Connection", "close")
	hdr.Del("Content-Length")
	hdr.Del("Transfer-Encoding")
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	_ = hdr.Write(&head)
	head.WriteString("\r\n")
	return head.Bytes()
}

// serveTakenOver serves st, the stream of request r, on its taken-over
// connection conn (head to write first; early, if not nil, ends it at
// once): on the Handler's fanout when it can, else on a goroutine of its
// own (run), with its serving context.
func (h *Handler) serveTakenOver(st *stream, r *http.Request, conn net.Conn, head *[]byte, early error) {
	if h.fast != nil && h.fast.start(st, conn, head, early) {
		return
	}
	t := &takenOver{
		conn:     conn,
		st:       st,
		head:     *head,
		deadline: writeDeadline{conn: conn, timeout: h.opts.WriteTimeout, lazy: true},
		watched:  make(chan struct{}),
	}
	st.serving(r, early)
	go t.run(h)
}

// run serves the stream to its end and ends it (see Handler.end): the
// connection is closed, and watch waited for, after OnClose.
func (t *takenOver) run(h *Handler) {
	go t.watch()
	sink := listen.Sink{Write: t.message, KeepAlive: h.opts.KeepAlive, Ping: h.pinger(t.st.sub, t.ping)}
	reason := t.st.sub.Serve(t.st.ctx, sink)
	h.end(t.st, reason, t.letGo)
}

// letGo closes the connection and waits for watch to return.
func (t *takenOver) letGo() {
	_ = t.conn.Close()
	<-t.watched
}

// watch reads the connection until the client leaves (or run closes the
// connection), or sends a byte: either ends the stream as Disconnected,
// with ErrUnexpectedBytes as the cause for a byte. One read, of one byte,
// is all a client that keeps sending costs.
func (t *takenOver) watch() {
	defer close(t.watched)
	var b [1]byte
	n, err := t.conn.Read(b[:])
	if n > 0 {
		err = ErrUnexpectedBytes
	}
	t.st.cancel(listen.Disconnected(err))
}

// message writes msg as one SSE event.
func (t *takenOver) message(msg []byte) error {
	t.buf = append(t.buf[:0], eventPrefix...)
	start := len(t.buf)
	t.buf = append(t.buf, msg...)
	oneLine(t.buf[start:])
	t.buf = append(t.buf, eventSuffix...)
	err := t.write(t.buf)
	if cap(t.buf) > maxKeptBuffer {
		t.buf = nil // keep no large buffer after a large event
	}
	return err
}

// ping writes a keep-alive comment.
func (t *takenOver) ping() error { return t.write(keepAliveFrame) }

// write sends one frame (after the head, the first time) within the write
// deadline, refreshed lazily as on HTTP/1.x inside net/http.
func (t *takenOver) write(frame []byte) error {
	if t.broken {
		return errBroken
	}
	if err := t.deadline.arm(); err != nil {
		t.broken = true
		return err
	}
	var err error
	if t.head != nil {
		b := net.Buffers{t.head, frame}
		_, err = b.WriteTo(t.conn)
		t.head = nil
	} else {
		_, err = t.conn.Write(frame)
	}
	if err != nil {
		t.broken = true
	}
	return err
}

// fanout is the Handler's fast path (Linux; see internal/fastpath): it
// serves taken-over HTTP/1.x streams whose subscription its state machine
// can take in steps (a hub stream), with no goroutine while they are idle,
// from a few writer loops, one epoll watcher and one keep-alive timer.
type fanout struct {
	*fastpath.Fanout
}

// newFanout returns the fanout of h (whose options are set), or nil where
// there is no fast path.
func newFanout(h *Handler) *fanout {
	o := fastpath.Options{
		KeepAlive:       h.opts.KeepAlive,
		WriteTimeout:    h.opts.WriteTimeout,
		Prefix:          eventPrefix,
		Suffix:          eventSuffix,
		KeepAliveFrame:  keepAliveFrame,
		Clean:           oneLine,
		UnexpectedBytes: ErrUnexpectedBytes,
		// On a goroutine of the stream's own: the slot, OnClose, then
		// the socket (Handler.end), once the subscription is closed.
		Done: func(owner any, release func()) {
			st := owner.(*stream)
			<-st.sub.Closed()
			h.end(st, st.sub.CloseReason(), release)
		},
	}
	if hook := h.opts.OnKeepAlive; hook != nil {
		o.KeptAlive = func(owner any) { hook(owner.(*stream).sub) }
	}
	f := fastpath.New(o)
	if f == nil {
		return nil
	}
	return &fanout{Fanout: f}
}

// start serves st, whose connection conn was taken over (head to write
// first; early, if not nil, ends it at once), on the fanout, if it can be
// served there: its subscription has a state machine to take in steps and
// its connection is a socket. It reports false, having changed nothing,
// otherwise.
func (f *fanout) start(st *stream, conn net.Conn, head *[]byte, early error) bool {
	fs := f.Stream(conn, st.sub, head, st)
	if fs == nil {
		return false
	}
	// From now on the transport's side of the stream ends through
	// fs.Cancel (the hang-up watcher), and the server's through
	// Subscription.End. The stream has no context: nothing on the fast path
	// reads a request's values, and the request's context chain (net/http's
	// per-connection contexts, about 700 bytes) does not live as long as
	// the stream. An early end (see takeover) carries over.
	if early != nil {
		fs.Cancel(early)
	}
	fs.Run()
	return true
}

// wait returns once none of the fanout's goroutines is running, or ctx
// ended. Handler.Shutdown calls it once every stream has ended, so that
// no goroutine of the Handler outlives it.
func (f *fanout) wait(ctx context.Context) error { return f.Wait(ctx) }

// count returns the number of fast streams.
func (f *fanout) count() int { return f.Count() }

// pinger returns ping, reporting each keep-alive it wrote to
// Options.OnKeepAlive when that is set.
func (h *Handler) pinger(sub *listen.Subscription, ping func() error) func() error {
	hook := h.opts.OnKeepAlive
	if hook == nil {
		return ping
	}
	return func() error {
		if err := ping(); err != nil {
			return err
		}
		_ = core.SafeCall(func() { hook(sub) })
		return nil
	}
}
