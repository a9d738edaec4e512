package streamhttp

import (
	"context"
	"net/http"

	"github.com/mcplisten/listen"
)

// stream is one admitted listen, from its admission to its end (see
// Handler.end). It is created on the request's goroutine, and served there
// or, once its connection is taken over, on a goroutine of its own.
type stream struct {
	// ctx is the serving context given to Subscription.Serve. It ends
	// through cancel, with the cause Serve acts on: listen.ErrShutdown
	// (Shutdown: the completion is written), a Disconnected reason (the
	// client left: the request ended, or a taken-over connection's reader
	// saw it close), or nil once the stream has ended.
	ctx    context.Context
	cancel context.CancelCauseFunc
	// owner owns the subscription (see listen.OpenOwned). It ends with the
	// stream, however the stream ends (even by a panic in a hook), so a
	// subscription never outlives its stream. It does not end on a client
	// disconnect or a failed write: those end ctx instead, so that Serve
	// closes the subscription with the precise reason without a race.
	owner    context.Context
	endOwner context.CancelFunc
	// sub is the subscription, once opened.
	sub *listen.Subscription
	// auth is what Options.Authenticate returned for the request (nil
	// without it), for EndStreams.
	auth any
	// key is the stream's MaxStreamsPerKey key; keyed reports whether the
	// stream counts against it (set by admit, under the Handler's mu).
	key   string
	keyed bool
}

// newStream returns the stream of the listen request r. Its contexts keep
// r's context values, not its cancellation: the stream may outlive its
// request (see takeover).
func newStream(r *http.Request) *stream {
	base := context.WithoutCancel(r.Context())
	st := &stream{}
	st.ctx, st.cancel = context.WithCancelCause(base)
	st.owner, st.endOwner = context.WithCancel(base)
	return st
}

// stop ends st's contexts: its subscription, if still open, is closed by
// its owner's end.
func (st *stream) stop() {
	st.endOwner()
	st.cancel(nil)
}
