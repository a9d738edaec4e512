package streamhttp

import (
	"bytes"
	"context"
	"net"
	"net/http"

	"github.com/mcplisten/listen"
)

// takenOver is an HTTP/1.x listen stream whose connection the Handler took
// over (http.Hijacker) once the subscription was open: it writes the status
// line, the headers and raw SSE events straight to the connection, and the
// body ends when the connection closes (Connection: close). net/http's
// request goroutine returns and its per-connection buffers are freed.
//
// It owns two goroutines: run, which serves the stream and ends it, and
// watch, which reads the connection to see the client leave. run closes the
// connection when the stream ends, which ends watch, and waits for it.
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
	hdr := w.Header().Clone()
	setStreamHeaders(hdr)
	hdr.Set("Connection", "close")
	hdr.Del("Content-Length")
	hdr.Del("Transfer-Encoding")

	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil
	}
	// Bytes the client sent after its request are dropped with net/http's
	// read buffer: a listen's client sends nothing more.
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	_ = hdr.Write(&head)
	head.WriteString("\r\n")

	// From now on watch sees the client leave. If it left before (net/http
	// then ended the request's context), the stream ends now.
	if r.Context().Err() != nil {
		st.cancel(listen.Disconnected(context.Cause(r.Context())))
	}
	return &takenOver{
		conn:     conn,
		st:       st,
		head:     head.Bytes(),
		deadline: writeDeadline{conn: conn, timeout: h.opts.WriteTimeout, lazy: true},
		watched:  make(chan struct{}),
	}
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

// watch reads the connection until it fails: the client left (or run closed
// the connection), which ends the stream as Disconnected.
func (t *takenOver) watch() {
	defer close(t.watched)
	var b [1]byte
	for {
		if _, err := t.conn.Read(b[:]); err != nil {
			t.st.cancel(listen.Disconnected(err))
			return
		}
	}
}

// message writes msg as one SSE event.
func (t *takenOver) message(msg []byte) error {
	t.buf = append(t.buf[:0], eventPrefix...)
	start := len(t.buf)
	t.buf = append(t.buf, msg...)
	oneLine(t.buf[start:])
	t.buf = append(t.buf, eventSuffix...)
	err := t.write(t.buf)
	if cap(t.buf) > 64<<10 {
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
