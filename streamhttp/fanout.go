package streamhttp

import (
	"context"
	"net/http"
	"sync/atomic"

	"github.com/mcplisten/listen/internal/fastpath"
)

// fanout is the Handler's fast path (Linux; see internal/fastpath): it
// serves taken-over HTTP/1.x streams whose subscription its state machine
// can take in steps (a hub stream), with no goroutine while they are idle,
// from a few writer loops, one epoll watcher and one keep-alive timer.
type fanout struct {
	*fastpath.Fanout
	base atomic.Pointer[baseContext] // the last baseContext
}

// newFanout returns the fanout of h (whose options are set), or nil where
// there is no fast path.
func newFanout(h *Handler) *fanout {
	o := fastpath.Options{
		KeepAlive:       h.opts.KeepAlive,
		WriteTimeout:    h.opts.WriteTimeout,
		Prefix:          eventPrefix,
		Suffix:          eventSuffix,
		KeepAliveFrame:  keepAliveFrame,
		Clean:           oneLine,
		UnexpectedBytes: ErrUnexpectedBytes,
		// On a goroutine of the stream's own: the slot, OnClose, then
		// the socket (Handler.end), once the subscription is closed.
		Done: func(owner any, release func()) {
			st := owner.(*stream)
			<-st.sub.Closed()
			h.end(st, st.sub.CloseReason(), release)
		},
	}
	if hook := h.opts.OnKeepAlive; hook != nil {
		o.KeptAlive = func(owner any) { hook(owner.(*stream).sub) }
	}
	f := fastpath.New(o)
	if f == nil {
		return nil
	}
	return &fanout{Fanout: f}
}

// start serves the taken-over stream t on the fanout, if it can be served
// there: its subscription has a state machine to take in steps and its
// connection is a socket. It reports false, having changed nothing,
// otherwise.
func (f *fanout) start(h *Handler, t *takenOver) bool {
	fs := f.Stream(t.conn, t.st.sub, t.head, t.st)
	if fs == nil {
		return false
	}
	// From now on the transport's side of the stream ends through
	// fs.Cancel (the hang-up watcher), and the server's through
	// Subscription.End; its ctx is the Handler's shared one and the old
	// one is dropped (nothing else ends it: takeover ended it, if at all,
	// before now), so that its chain (net/http's per-connection contexts,
	// about 700 bytes) does not live as long as the stream. An end of the
	// old context carries over.
	st := t.st
	old := st.ctx
	st.ctx, st.cancel = f.baseContext(old), nil
	if old.Err() != nil {
		fs.Cancel(context.Cause(old))
	}
	fs.Run()
	return true
}

// wait returns once none of the fanout's goroutines is running, or ctx
// ended. Handler.Shutdown calls it once every stream has ended, so that
// no goroutine of the Handler outlives it.
func (f *fanout) wait(ctx context.Context) error { return f.Wait(ctx) }

// count returns the number of fast streams.
func (f *fanout) count() int { return f.Count() }

// baseContext returns the context a fast stream keeps in place of the
// request's (old): only the http.Server, where logf finds its ErrorLog,
// shared by the fanout's streams of that server.
func (f *fanout) baseContext(old context.Context) context.Context {
	srv := old.Value(http.ServerContextKey)
	if b := f.base.Load(); b != nil && b.srv == srv {
		return b.ctx
	}
	b := &baseContext{srv: srv, ctx: context.Background()}
	if srv != nil {
		b.ctx = context.WithValue(b.ctx, http.ServerContextKey, srv)
	}
	f.base.Store(b)
	return b.ctx
}

// baseContext is a context of fanout.baseContext and its server.
type baseContext struct {
	srv any
	ctx context.Context
}
