package streamhttp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"

	"github.com/mcplisten/listen"
)

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

// takeover hijacks w's connection for the open stream st of request r. It
// returns nil when the connection cannot be hijacked (the stream then stays
// inside net/http).
func (h *Handler) takeover(st *stream, w http.ResponseWriter, r *http.Request) *takenOver {
	head := plainHead
	if len(w.Header()) > 0 { // headers set before the handler: a head of its own
		head = responseHead(w.Header())
	}

	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil
	}
	// A listen's client sends nothing after its request: bytes it did send
	// already (read ahead into net/http's buffer, dropped with it) end the
	// stream before it starts.
	if brw.Reader.Buffered() > 0 {
		st.cancel(listen.Disconnected(ErrUnexpectedBytes))
	}
	// From now on watch sees the client leave. If it left before (net/http
	// then ended the request's context), the stream ends now.
	if r.Context().Err() != nil {
		st.cancel(listen.Disconnected(context.Cause(r.Context())))
	}
	return &takenOver{
		conn:     conn,
		st:       st,
		head:     head,
		deadline: writeDeadline{conn: conn, timeout: h.opts.WriteTimeout, lazy: true},
		watched:  make(chan struct{}),
	}
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

// start serves the stream: on the Handler's fanout when it can, else on a
// goroutine of its own (run).
func (t *takenOver) start(h *Handler) {
	if h.fast != nil && h.fast.start(h, t) {
		return
	}
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
