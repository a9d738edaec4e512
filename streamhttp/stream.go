package streamhttp

import (
	"context"
	"net/http"
	"time"

	"github.com/mcplisten/listen"
)

// stream is one admitted listen, from its admission to its end (see
// Handler.end). It is created on the request's goroutine, and served there
// or, once its connection is taken over, on a goroutine of its own or on
// the Handler's fanout (Linux, a stream with a listen.Poller).
type stream struct {
	// ctx is the serving context given to Subscription.Serve. It ends
	// through cancel, with the cause Serve acts on: listen.ErrShutdown
	// (Shutdown: the completion is written), a Disconnected reason (the
	// client left: the request ended, or a taken-over connection's reader
	// saw it close), or nil once the stream has ended. End the stream with
	// end, and read its cause with cause: they also serve a fast stream,
	// which has no context of its own (see fanout.start).
	ctx    context.Context
	cancel context.CancelCauseFunc
	// fast is the stream's place on the fanout, once it is there (set
	// under Handler.mu; it then ends through fast.cancel, and ctx is only the
	// Handler's shared context for logf).
	fast *fastStream
	// sub is the subscription, once opened. The stream owns it: it is
	// opened without an owner context (listen.OpenOwned with context.Background() as the owner),
	// and stop closes it if it is still open, however the stream ends (even
	// by a panic in a hook), so a subscription never outlives its stream. A
	// client disconnect or a failed write ends ctx instead, so that Serve
	// closes the subscription with the precise reason.
	sub *listen.Subscription
	// cred is the request's credential, nil when Options.Authenticate
	// returned nil (or is not set) and it has no expiry: most streams do
	// not pay for the fields.
	cred *credential
	// key is the stream's MaxStreamsPerKey key; keyed reports whether the
	// stream counts against it (set by admit, under the Handler's mu).
	key   string
	keyed bool
	// slot is the stream's index in Handler.streams, -1 when not there
	// (under Handler.mu).
	slot int32
}

// credential is what a stream keeps of its request's credential.
type credential struct {
	// auth is what Options.Authenticate returned for the request, for
	// EndStreams and StreamKey.
	auth any
	// expires is when the stream must end (Options.Expiry; zero: never):
	// its subscription's listen.Request.Expiry, whose timer the core keeps.
	expires time.Time
}

// auth returns what Options.Authenticate returned for st's request (nil
// without it).
func (st *stream) auth() any {
	if st.cred == nil {
		return nil
	}
	return st.cred.auth
}

// streamSet is a set of streams, each at its slot: O(1) add and remove.
type streamSet struct {
	items []*stream
}

func (s *streamSet) add(st *stream) {
	st.slot = int32(len(s.items))
	s.items = append(s.items, st)
}

// remove takes st out, if it is in.
func (s *streamSet) remove(st *stream) {
	i := st.slot
	if i < 0 {
		return
	}
	last := s.items[len(s.items)-1]
	s.items[i], last.slot = last, i
	s.items[len(s.items)-1] = nil
	s.items = s.items[:len(s.items)-1]
	st.slot = -1
	if cap(s.items) > 64 && len(s.items) < cap(s.items)/4 {
		s.items = append([]*stream(nil), s.items...) // a mass close gives memory back
	}
}

// newStream returns the stream of the listen request r. Its context keeps
// r's context values (CanRead gets them for a covered sub-resource; logf
// finds the http.Server's ErrorLog there), not its cancellation: the stream
// may outlive its request (see takeover).
func newStream(r *http.Request) *stream {
	base := context.WithoutCancel(r.Context())
	st := &stream{slot: -1}
	st.ctx, st.cancel = context.WithCancelCause(base)
	return st
}

// end ends the stream with cause (the first cause counts), as cancel does
// for a stream served with ctx. Call it with Handler.mu held, or on a
// stream that cannot move to the fanout any more (fast is read).
func (st *stream) end(cause error) {
	if st.fast != nil {
		st.fast.cancel(cause)
		return
	}
	st.cancel(cause)
}

// cause returns the cause the stream was ended with, or nil (with
// Handler.mu held, as for end).
func (st *stream) cause() error {
	if st.fast != nil {
		return st.fast.ended()
	}
	if st.ctx.Err() != nil {
		return context.Cause(st.ctx)
	}
	return nil
}

// stop ends st: its subscription, if still open, is closed (reason
// Disconnected with cause listen.ErrOwnerGone; normally it has been closed
// with its own reason already), and its context ends.
func (st *stream) stop() {
	if st.sub != nil {
		st.sub.Close(listen.Disconnected(listen.ErrOwnerGone))
	}
	if st.cancel != nil { // nil for a fast stream, which has no context of its own
		st.cancel(nil)
	}
}
