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

// sseWriter writes a stream's frames. It is used by one goroutine, the one
// that runs Subscription.Serve.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	// keepDeadline: on HTTP/1.x a deadline is only refreshed when less than
	// half of it is left, and not cleared between writes (an expired write
	// deadline does nothing to an idle HTTP/1 connection, and the next write
	// refreshes it first). On HTTP/2 a deadline that expires between writes
	// resets the stream, so there every write sets and clears its own.
	keepDeadline bool
	deadline     time.Time
	// started is set once the 200 status line and headers were sent.
	started bool
	// broken is set after a failed write: the response is unusable.
	broken bool
	// scratch holds a message whose line breaks had to be replaced; it is
	// dropped after use, so a stream keeps no large buffer.
	scratch []byte
}

// message writes msg as one SSE event and flushes it. It does not keep msg.
func (s *sseWriter) message(msg []byte) error {
	if bytes.ContainsAny(msg, "\r\n") {
		// Raw line breaks can only be insignificant whitespace in valid
		// JSON (inside strings they are escaped), and they would end the
		// SSE data line: turn them into spaces.
		s.scratch = append(s.scratch[:0], msg...)
		oneLine(s.scratch)
		msg = s.scratch
		defer func() { s.scratch = nil }()
	}
	return s.send(eventPrefix, msg, eventSuffix)
}

// ping writes a keep-alive comment.
func (s *sseWriter) ping() error { return s.send(keepAliveFrame) }

// send writes parts and flushes them within the write timeout (at least half
// of it on HTTP/1.x, where the deadline is refreshed lazily; see
// keepDeadline).
func (s *sseWriter) send(parts ...[]byte) (err error) {
	if s.broken {
		return errBroken
	}
	defer func() {
		if err != nil {
			s.broken = true
		}
	}()
	if s.timeout > 0 {
		now := time.Now()
		if !s.keepDeadline || s.deadline.Sub(now) < s.timeout/2 {
			s.deadline = now.Add(s.timeout)
			if err := s.rc.SetWriteDeadline(s.deadline); err != nil && !errors.Is(err, http.ErrNotSupported) {
				return err
			}
		}
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
	if s.timeout > 0 && !s.keepDeadline {
		if err := s.rc.SetWriteDeadline(time.Time{}); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
	}
	return nil
}

// finish bounds the bytes net/http writes after the handler returns (the
// last chunk) by one more write timeout.
func (s *sseWriter) finish() {
	if s.timeout > 0 && s.started && !s.broken {
		_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	}
}

// errBroken is returned by writes after a failed one.
var errBroken = errors.New("streamhttp: response already failed")
