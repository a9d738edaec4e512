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
	// saw it close), or nil once the stream has ended. A fast stream
	// replaces both (under Handler.mu) when it starts: see fanout.start.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// sub is the subscription, once opened. The stream owns it: it is
	// opened without an owner context (listen.OpenOwned with a nil owner),
	// and stop closes it if it is still open, however the stream ends (even
	// by a panic in a hook), so a subscription never outlives its stream. A
	// client disconnect or a failed write ends ctx instead, so that Serve
	// closes the subscription with the precise reason.
	sub *listen.Subscription
	// auth is what Options.Authenticate returned for the request (nil
	// without it), for EndStreams.
	auth any
	// expires is when the stream must end (Options.Expiry; zero: never);
	// expiry is its timer, armed once the stream is admitted and stopped
	// when it ends (see startExpiry).
	expires time.Time
	expiry  *time.Timer
	// key is the stream's MaxStreamsPerKey key; keyed reports whether the
	// stream counts against it (set by admit, under the Handler's mu).
	key   string
	keyed bool
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
	st.cancel(nil)
}
