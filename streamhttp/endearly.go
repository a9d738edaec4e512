package streamhttp

import "github.com/mcplisten/listen"

// How the server ends a stream before its source does. The rules live in
// the core: the serving state machine writes each ending, in the form
// listen.Options.EndWithError chooses; this Handler names the causes it
// ends streams with (stream.end, under Handler.mu):
//
//	Shutdown            listen.ErrShutdown   every stream: the completion result
//	EndStreams          ErrEnded             the streams of the principals it selects (listen.ErrRevoked)
//	Options.Expiry      ErrExpired           a stream whose credential expired (listen.ErrExpired: the
//	                                         core's timer, from listen.Request.Expiry)

// ErrEnded is the close reason of a stream ended by Handler.EndStreams
// (OnClose gets it, and the Source's Stream.Close). It also matches
// listen.ErrRevoked: the server ends the stream of a principal it no
// longer trusts, so the client is sent the early ending of a revoked
// principal (by default the completion result with the reason "revoked";
// see listen.Options.EndWithError), and Stats counts it as Revoked.
var ErrEnded error = endedError{}

type endedError struct{}

func (endedError) Error() string { return "streamhttp: stream ended by the server (EndStreams)" }

// Is makes errors.Is(err, listen.ErrRevoked) true.
func (endedError) Is(target error) bool { return target == listen.ErrRevoked }

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

// EndStreams ends the streams whose principal match selects, and returns
// how many it ended. match is called once per stream, with what
// Options.Authenticate returned for its request (nil without
// Authenticate; listen.Request.Auth), on the calling goroutine and without
// any lock held; it must not block. Each stream it selects is sent the
// early ending of a revoked principal and closed with reason ErrEnded
// (which matches listen.ErrRevoked); EndStreams does not wait for that
// (OnClose and Stats report it). listen.Access.End does the same for the
// streams of every transport; this one also reaches the requests of this
// Handler that are not open yet.
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
