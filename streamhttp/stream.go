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
// the Handler's fanout (Linux, a hub stream: see internal/fastpath).
type stream struct {
	// ctx is the serving context given to Subscription.Serve. It ends
	// through cancel, with the cause Serve acts on: listen.ErrShutdown
	// (Shutdown: the completion is written), a Disconnected reason (the
	// client left: the request ended, or a taken-over connection's reader
	// saw it close), or nil once the stream has ended. A fast stream has
	// no context of its own (see fanout.start): cancel is nil, ctx the
	// Handler's shared one.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// sub is the subscription, once opened. The stream owns it: it is
	// opened without an owner context (listen.Slot.Open with context.Background() as the owner),
	// and stop closes it if it is still open, however the stream ends (even
	// by a panic in a hook), so a subscription never outlives its stream. A
	// client disconnect or a failed write ends ctx instead, so that Serve
	// closes the subscription with the precise reason.
	sub *listen.Subscription
	// slot is the listen's place on the Server, from Begin (once its
	// request is authenticated) to Done (see Handler.end).
	slot *listen.Slot
	// expires is when the stream must end (Options.Expiry; zero: never):
	// its subscription's listen.Request.Expiry, whose timer the core keeps.
	expires time.Time
}

// newStream returns the stream of the listen request r. Its context keeps
// r's context values (CanRead gets them for a covered sub-resource; logf
// finds the http.Server's ErrorLog there), not its cancellation: the stream
// may outlive its request (see takeover).
func newStream(r *http.Request) *stream {
	base := context.WithoutCancel(r.Context())
	st := &stream{}
	st.ctx, st.cancel = context.WithCancelCause(base)
	return st
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
