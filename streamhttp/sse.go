package streamhttp

import (
	"bytes"
	"errors"
	"net/http"
	"time"
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
