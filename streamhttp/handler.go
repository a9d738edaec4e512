package streamhttp

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/jsonrpc"
)

// Handler serves subscriptions/listen over MCP 2026-07-28 Streamable HTTP:
// each listen is one POST whose response is an SSE stream (see the package
// documentation for the request checks, the stream and its endings).
//
// A Handler is safe for concurrent use. An HTTP/2 stream runs on the
// net/http goroutine of its request; an HTTP/1.x stream, once open, on a
// goroutine of the Handler's that took its connection over (see
// Options.NoTakeover), which ends with the stream. Drain or Shutdown ends the
// streams (Shutdown waits for them); the Handler is not reusable after that.
type Handler struct {
	src  listen.Source
	opts Options

	mu sync.Mutex
	// streams holds the admitted listens (being opened or streaming).
	streams  map[*slot]struct{}
	draining bool
	// drained is closed (under mu) once draining and no stream is left.
	drained chan struct{}

	opened  atomic.Uint64
	closed  atomic.Uint64
	refused atomic.Uint64
}

// slot is one admitted listen.
type slot struct {
	// cancel ends the stream's serving context; Drain passes
	// listen.ErrShutdown.
	cancel context.CancelCauseFunc
}

// New returns a Handler that opens every listen on src. opts may be nil; it
// is copied (see Options for the defaults). New panics if src is nil.
func New(src listen.Source, opts *Options) *Handler {
	if src == nil {
		panic("streamhttp: nil Source")
	}
	return &Handler{
		src:     src,
		opts:    withDefaults(opts),
		streams: make(map[*slot]struct{}),
		drained: make(chan struct{}),
	}
}

// Stats is a snapshot of a Handler's counters.
type Stats struct {
	// Active is the number of admitted listens: being opened or streaming.
	Active int
	// Opened counts the subscriptions opened since New.
	Opened uint64
	// Closed counts the subscriptions whose stream has ended.
	Closed uint64
	// Refused counts the listens refused with 503: over MaxStreams or
	// during shutdown.
	Refused uint64
	// Draining reports whether Drain or Shutdown was called.
	Draining bool
}

// Stats returns the Handler's counters.
func (h *Handler) Stats() Stats {
	h.mu.Lock()
	active, draining := len(h.streams), h.draining
	h.mu.Unlock()
	return Stats{
		Active:   active,
		Opened:   h.opened.Load(),
		Closed:   h.closed.Load(),
		Refused:  h.refused.Load(),
		Draining: draining,
	}
}

// ServeHTTP serves one listen request: it refuses it with a JSON-RPC error
// response, or streams its subscription until it ends.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// owner owns the subscription (see listen.Open): it ends when ServeHTTP
	// returns, however it returns, so an abandoned subscription is always
	// closed. It does not end on a client disconnect or a failed write:
	// those end the serving context instead, so that Serve closes the
	// subscription with the precise reason (the write error, such as a
	// write deadline, or the request's cancellation) without a race.
	owner, endOwner := context.WithCancel(context.WithoutCancel(r.Context()))
	handedOver := false
	defer func() {
		if !handedOver {
			endOwner()
		}
	}()
	sub, s, ctx, f := h.open(owner, w, r)
	if f != nil {
		f.write(h, w, r)
		return
	}
	released := false
	defer func() {
		if !released {
			h.release(s)
		}
	}()
	h.opened.Add(1)
	if h.opts.OnOpen != nil {
		h.opts.OnOpen(sub)
	}
	if !h.opts.NoTakeover && r.ProtoMajor == 1 {
		if t := h.takeover(w, s, ctx); t != nil {
			// The stream now belongs to t's goroutine, which releases the
			// slot and ends the owner.
			handedOver, released = true, true
			go t.run(h, sub, endOwner)
			return
		}
	}

	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("X-Accel-Buffering", "no")
	hdr.Del("Content-Length")
	if r.ProtoMajor == 1 {
		// A listen holds its connection for its whole life; do not reuse it
		// afterwards (its write deadline would outlive the stream).
		hdr.Set("Connection", "close")
	}
	sw := &sseWriter{w: w, rc: http.NewResponseController(w), timeout: h.opts.WriteTimeout, keepDeadline: r.ProtoMajor == 1}
	sink := listen.Sink{Write: sw.message}
	if h.opts.KeepAlive > 0 {
		sink.KeepAlive = h.opts.KeepAlive
		sink.Ping = h.pinger(sub, sw.ping)
	}
	reason := sub.Serve(ctx, sink)
	sw.finish()

	h.closed.Add(1)
	if h.opts.OnClose != nil {
		h.opts.OnClose(sub, reason)
	}
}

// open decodes and admits a listen and opens its subscription, owned by
// owner. It returns the serving context: the request's context, which also
// ends on Drain (cause listen.ErrShutdown). On success the request and its
// body are no longer referenced: the subscription kept only copies of what
// it serves.
func (h *Handler) open(owner context.Context, w http.ResponseWriter, r *http.Request) (*listen.Subscription, *slot, context.Context, *refusal) {
	req, f := h.decode(w, r)
	if f != nil {
		return nil, nil, nil, f
	}
	ctx, cancel := context.WithCancelCause(r.Context())
	s := &slot{cancel: cancel}
	if f := h.admit(s, req.ID); f != nil {
		cancel(nil)
		return nil, nil, nil, f
	}
	// The request's context reaches Source.Open, CanRead and the extension
	// hooks, so a slow open sees the client leave; the owner guards the
	// subscription afterwards.
	defer func() {
		if v := recover(); v != nil {
			h.release(s) // a panic out of OpenOwned must not leak the slot
			panic(v)
		}
	}()
	sub, err := listen.OpenOwned(r.Context(), owner, h.src, req, &h.opts.Listen)
	if err != nil {
		h.release(s)
		if r.Context().Err() != nil {
			// The client left while the source was opening: there is
			// nobody to answer, and it is not a server error.
			return nil, nil, nil, &refusal{}
		}
		we := jsonrpc.AsError(err, "Internal error")
		return nil, nil, nil, refuse(statusOf(we.Code), req.ID, we)
	}
	return sub, s, ctx, nil
}

// admit takes a stream slot for s, or refuses with 503 when the Handler is
// draining or at MaxStreams.
func (h *Handler) admit(s *slot, id jsonrpc.ID) *refusal {
	h.mu.Lock()
	defer h.mu.Unlock()
	var err *jsonrpc.Error
	switch {
	case h.draining:
		err = jsonrpc.NewError(jsonrpc.CodeInternalError, MsgShuttingDown).WithCause(listen.ErrShutdown)
	case h.opts.MaxStreams > 0 && len(h.streams) >= h.opts.MaxStreams:
		err = jsonrpc.NewError(jsonrpc.CodeInternalError, jsonrpc.MsgCapacityExhausted).WithCause(listen.ErrOverloaded)
	default:
		h.streams[s] = struct{}{}
		return nil
	}
	h.refused.Add(1)
	return refuse(http.StatusServiceUnavailable, id, err)
}

// release frees s's slot.
func (h *Handler) release(s *slot) {
	s.cancel(nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.streams, s)
	if h.draining && len(h.streams) == 0 {
		select {
		case <-h.drained:
		default:
			close(h.drained)
		}
	}
}

// Drain starts a graceful shutdown and returns at once: new listens are
// refused with 503 (-32603 "Server is shutting down"), and every open stream
// is sent its completion result and closed with reason listen.ErrShutdown (a
// listen still being opened is acknowledged, then completed). Drain is
// idempotent. Its signature fits http.Server.RegisterOnShutdown.
func (h *Handler) Drain() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.draining {
		return
	}
	h.draining = true
	for s := range h.streams {
		s.cancel(listen.ErrShutdown)
	}
	if len(h.streams) == 0 {
		close(h.drained)
	}
}

// Shutdown drains the Handler (see Drain) and waits until every stream has
// ended, OnClose included, or ctx ends. It returns nil, or ctx's error when
// ctx ended first; the streams still ending then go on ending on their own,
// each within one write timeout of its completion write.
func (h *Handler) Shutdown(ctx context.Context) error {
	h.Drain()
	select {
	case <-h.drained:
		return nil
	default:
	}
	select {
	case <-h.drained:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
