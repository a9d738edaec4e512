package streamhttp

import (
	"time"

	"github.com/mcplisten/listen"
)

// How the server ends a stream before its source does, in one place: every
// early end ends the stream with a cause that names why (stream.end, under
// Handler.mu), and the core writes what that cause calls for. Today every
// such cause matches listen.ErrShutdown, so the wire form is the completion
// result (MCP: a server that tears a subscription down SHOULD send it); the
// cause is what OnClose, the Source's Stream.Close and metrics see.
//
//	Shutdown            listen.ErrShutdown   every stream
//	EndStreams          ErrEnded             the streams of the principals it selects
//	Options.Expiry      ErrExpired           a stream whose credential's expiry has passed

// ErrEnded is the close reason of a stream ended by Handler.EndStreams
// (OnClose gets it, and the Source's Stream.Close). It also matches
// listen.ErrShutdown: as in a shutdown, the server ends the stream on its
// own initiative, so the client is sent the completion result before the
// stream ends (MCP: a server that tears a subscription down SHOULD send
// it). Test for errors.Is(reason, ErrEnded) first to tell the two apart.
var ErrEnded error = endedError{}

type endedError struct{}

func (endedError) Error() string { return "streamhttp: stream ended by the server (EndStreams)" }

// Is makes errors.Is(err, listen.ErrShutdown) true.
func (endedError) Is(target error) bool { return target == listen.ErrShutdown }

// ErrExpired is the close reason of a stream whose expiry (Options.Expiry:
// the expiry of the credential it was opened with) has passed, and the
// cause of the 401 refusal of a listen whose expiry has passed before it
// was admitted. Like ErrEnded it matches listen.ErrShutdown: the client is
// sent the completion result, then the stream ends, so a client re-listens
// at once and its credential is judged again (a refreshed token opens a new
// stream; the expired one is refused). Test for errors.Is(reason,
// ErrExpired) first to tell it from a shutdown.
var ErrExpired error = expiredError{}

type expiredError struct{}

func (expiredError) Error() string {
	return "streamhttp: stream ended by the server: its credential expired (Options.Expiry)"
}

// Is makes errors.Is(err, listen.ErrShutdown) true.
func (expiredError) Is(target error) bool { return target == listen.ErrShutdown }

// endEarly ends st with cause, and reports whether this call ended it. A
// stream is ended, and its cause read, under h.mu, where it moves to the
// fanout (see stream.end).
func (h *Handler) endEarly(st *stream, cause error) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if st.cause() != nil {
		return false
	}
	st.end(cause)
	return st.cause() == cause
}

// startExpiry arms st's expiry, if it has one, once st is admitted: a
// runtime timer (no goroutine until it fires; it fires at once for an
// expiry already past) ends st with ErrExpired. end stops it.
func (h *Handler) startExpiry(st *stream) {
	c := st.cred
	if c == nil || c.expires.IsZero() {
		return
	}
	c.expiry = time.AfterFunc(time.Until(c.expires), func() { h.endEarly(st, ErrExpired) })
}

// EndStreams ends the streams whose principal match selects, and returns
// how many it ended. match is called once per stream, with what
// Options.Authenticate returned for its request (nil without
// Authenticate; listen.Request.Auth), on the calling goroutine and without
// any lock held; it must not block. Each stream it selects is sent its
// completion result, as in a shutdown, and closed with reason ErrEnded;
// EndStreams does not wait for that (OnClose and Stats report it).
//
// It covers every stream from the moment its request was authenticated:
// open streams, listens being opened (they are acknowledged, then
// completed), and requests whose body is still being read (they are
// admitted, acknowledged and completed). So a server that revokes a
// credential first makes Authenticate refuse it, then calls EndStreams: no
// stream of that principal is left, and a client that opens a new listen is
// judged by Authenticate. For credentials that expire, set Options.Expiry
// instead. A panic in match goes up to the caller.
func (h *Handler) EndStreams(match func(auth any) bool) int {
	// match runs without h.mu (it is the application's code).
	h.mu.Lock()
	ts := make([]*stream, 0, len(h.streams.items)+len(h.pending))
	for _, st := range h.streams.items {
		if st.cause() == nil {
			ts = append(ts, st)
		}
	}
	for st := range h.pending {
		if st.cause() == nil {
			ts = append(ts, st)
		}
	}
	h.mu.Unlock()
	n := 0
	for _, st := range ts {
		if match(st.auth()) && h.endEarly(st, ErrEnded) {
			n++
		}
	}
	return n
}
