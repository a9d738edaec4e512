package streamhttp

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	"github.com/mcplisten/listen"
)

// takenOver is an HTTP/1.x listen stream whose connection the Handler took
// over (http.Hijacker) once the subscription was open: it writes the status
// line, the headers and raw SSE events straight to the connection, and the
// body ends when the connection closes (Connection: close). net/http's
// request goroutine returns and its per-connection buffers are freed.
//
// It owns two goroutines: run, which serves the stream, and watch, which
// reads the connection to see the client leave. run closes the connection
// when the stream ends, which ends watch, and waits for it.
type takenOver struct {
	conn net.Conn
	slot *slot
	// ctx is the serving context: Drain (through slot.cancel, cause
	// listen.ErrShutdown) and watch (cause Disconnected) end it.
	ctx    context.Context
	cancel context.CancelCauseFunc

	head     []byte // status line and headers, sent with the first frame
	timeout  time.Duration
	keep     time.Duration
	deadline time.Time
	buf      []byte // one frame; reused
	broken   bool

	watched chan struct{} // closed when watch returns
}

// takeover hijacks w's connection for the open stream of slot s, whose
// serving context is ctx. It returns nil when the connection cannot be
// hijacked (the stream then stays inside net/http).
func (h *Handler) takeover(w http.ResponseWriter, s *slot, ctx context.Context) *takenOver {
	hdr := w.Header().Clone()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
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

	// The request's context ends when ServeHTTP returns, so the stream gets a
	// context of its own, which Drain reaches through the slot.
	sctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	h.mu.Lock()
	s.cancel = cancel
	h.mu.Unlock()
	if ctx.Err() != nil { // drained or left while being taken over
		if cause := context.Cause(ctx); errors.Is(cause, listen.ErrShutdown) {
			cancel(cause)
		} else {
			cancel(listen.Disconnected(cause))
		}
	}
	return &takenOver{
		conn:    conn,
		slot:    s,
		ctx:     sctx,
		cancel:  cancel,
		head:    head.Bytes(),
		timeout: h.opts.WriteTimeout,
		keep:    h.opts.KeepAlive,
		watched: make(chan struct{}),
	}
}

// run serves the stream to its end, then closes the connection, reports
// OnClose and releases the slot (last, so that Shutdown returns after it).
func (t *takenOver) run(h *Handler, sub *listen.Subscription, endOwner context.CancelFunc) {
	go t.watch()
	sink := listen.Sink{Write: t.message}
	if t.keep > 0 {
		sink.KeepAlive, sink.Ping = t.keep, h.pinger(sub, t.ping)
	}
	reason := sub.Serve(t.ctx, sink)
	_ = t.conn.Close()
	<-t.watched
	t.cancel(nil)
	endOwner()
	h.closed.Add(1)
	h.onClose(sub, reason)
	h.release(t.slot)
}

// onClose calls Options.OnClose for a taken-over stream. A panic in it is
// recovered: on the Handler's own goroutine it would end the process.
func (h *Handler) onClose(sub *listen.Subscription, reason error) {
	if h.opts.OnClose == nil {
		return
	}
	defer func() { _ = recover() }()
	h.opts.OnClose(sub, reason)
}

// watch reads the connection until it fails: the client left (or run closed
// the connection), which ends the stream as Disconnected.
func (t *takenOver) watch() {
	defer close(t.watched)
	var b [1]byte
	for {
		if _, err := t.conn.Read(b[:]); err != nil {
			t.cancel(listen.Disconnected(err))
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
// timeout, refreshed lazily as on HTTP/1.x inside net/http.
func (t *takenOver) write(frame []byte) error {
	if t.broken {
		return errBroken
	}
	if t.timeout > 0 {
		now := time.Now()
		if t.deadline.Sub(now) < t.timeout/2 {
			t.deadline = now.Add(t.timeout)
			if err := t.conn.SetWriteDeadline(t.deadline); err != nil {
				t.broken = true
				return err
			}
		}
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

// oneLine turns raw line breaks into spaces: in valid JSON they can only be
// insignificant whitespace (inside strings they are escaped), and they would
// end the SSE data line.
func oneLine(b []byte) {
	for i, c := range b {
		if c == '\r' || c == '\n' {
			b[i] = ' '
		}
	}
}
