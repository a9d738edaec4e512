package listen

import (
	"context"
	"errors"
	"io"

	"github.com/mcplisten/listen/internal/core"
	"github.com/mcplisten/listen/jsonrpc"
)

// Source is the application boundary: it turns an opened listen request into
// a stream of events. Implement it to feed subscriptions from your own
// change feed, or use the hub subpackage's broadcast Hub.
//
// Open receives the supported filter (the request's filter already narrowed
// to what the server advertises, extension filters merged in) and the full
// request. It returns the filter it accepts, which must be a subset of
// supported (see Filter), and the stream. A nil accepted filter is the empty
// filter. If it returns an *jsonrpc.Error, that error goes to the client unchanged
// (so a source can pick its own code); any other error becomes the internal
// error "Subscription source failed to open", with the source's error kept
// as the private cause. A nil stream with a nil error is the internal error
// "Subscription source returned an invalid open result". A panic in Open
// becomes "Subscription source failed to open".
//
// The supported filter is the source's to keep: it is a fresh copy, detached
// from the request. The subscription keeps what it serves of the accepted
// filter (its flags, its URIs and its extension parts), not the map, and may
// share their values with it: neither side may modify it after Open
// returns.
//
// Open may be called concurrently for different requests.
type Source interface {
	Open(ctx context.Context, req *Request, supported Filter) (accepted Filter, stream Stream, err error)
}

// Stream is one opened subscription's event stream.
//
// Next returns the next event, blocking until one exists. It returns an error
// matching ErrClosed (or io.EOF) when the stream ended gracefully, and any
// other error when it failed. The subscription calls Next from a single
// goroutine (its worker) and never has two calls in flight; it calls Next
// again only after the previous event was written or dropped.
//
// Close releases the stream. It is called exactly once, with the reason (see
// Classify), possibly concurrently with a Next that is blocked: Close must
// make that Next return promptly (ErrClosed is the natural answer). Next may
// also be called after Close; it should then return ErrClosed. Close should
// return promptly; its panics are recovered and ignored.
//
// A stream that can also be pulled without blocking implements NotifyStream,
// and is then served with no goroutine of its own. A wrapper of a stream (to
// count, to release something on Close) keeps that ability when it is a
// NotifyStream exactly when the stream it wraps is one.
type Stream interface {
	Next() (Event, error)
	Close(reason error)
}

// NotifyStream is the optional interface of a Stream that can be pulled
// without blocking and that calls a function when it has something to
// pull. Serve pulls such a stream from its own goroutine, with no worker
// goroutine, and a transport can serve many of them from a few goroutines
// (streamhttp's fast path, on Linux). The hub's streams
// implement it. The demand rule is Next's: one pull after the
// acknowledgement, then one after each written or dropped event; Next is
// not called once SetNotify has been.
type NotifyStream interface {
	Stream
	// TryNext is Next without blocking: ok is false (and err nil) when no
	// event is ready yet. Otherwise it returns what Next would: an event, an
	// error matching ErrClosed for the end, or another error.
	TryNext() (ev Event, ok bool, err error)
	// SetNotify makes the stream call notify when, after a TryNext that
	// found nothing, an event may have become ready, and when the stream
	// ends (Close, or a graceful end that a TryNext will report). A stream
	// must arm it inside that TryNext: no wake-up may be lost between the
	// two calls. notify runs on the goroutine that caused it (a publisher,
	// a Close), possibly concurrently with itself and with TryNext, never
	// while the stream holds a lock: it returns promptly and does not
	// block. Extra calls are harmless. SetNotify is called once, before
	// the first TryNext.
	SetNotify(notify func())
}

// openSource calls src.Open with panic recovery and maps its results to the
// errors named at Source.
func openSource(ctx context.Context, src Source, req *Request, supported Filter) (accepted Filter, stream Stream, err error) {
	if p := catch("Source.Open", func() { accepted, stream, err = src.Open(ctx, req, supported) }); p != nil {
		return nil, nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen).WithCause(p)
	}
	if err != nil {
		if stream != nil {
			closeStream(stream, Failed(err))
		}
		var we *jsonrpc.Error
		if errors.As(err, &we) {
			return nil, nil, we
		}
		return nil, nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.SourceFailedToOpen).WithCause(err)
	}
	if stream == nil {
		return nil, nil, jsonrpc.NewError(jsonrpc.CodeInternalError, core.InvalidOpenResult)
	}
	if accepted == nil {
		accepted = Filter{}
	}
	return accepted, stream, nil
}

// nextEvent calls stream.Next with panic recovery and returns the outcome.
func nextEvent(stream Stream) (out Outcome) {
	if p := catch("Stream.Next", func() { out = outcomeOf(stream.Next()) }); p != nil {
		return Outcome{kind: outcomeError, Err: p}
	}
	return out
}

// pollEvent calls stream.TryNext with panic recovery. ok is false when no
// event is ready.
func pollEvent(stream NotifyStream) (out Outcome, ok bool) {
	var ev Event
	var ready bool
	var err error
	if p := catch("Stream.TryNext", func() { ev, ready, err = stream.TryNext() }); p != nil {
		return Outcome{kind: outcomeError, Err: p}, true
	}
	if err == nil && !ready {
		return Outcome{}, false
	}
	return outcomeOf(ev, err), true
}

// outcomeOf turns what a pull returned into its outcome.
func outcomeOf(ev Event, err error) Outcome {
	switch {
	case err == nil && ev.Kind == 0: // neither an event nor an error
		return Outcome{kind: outcomeError, Err: errEventInvalid}
	case err == nil:
		return Outcome{kind: outcomeEvent, Event: ev}
	case errors.Is(err, ErrClosed) || errors.Is(err, io.EOF):
		return Outcome{kind: outcomeClosed, Err: ErrClosed}
	default:
		return Outcome{kind: outcomeError, Err: err}
	}
}

// closeStream calls stream.Close, swallowing panics: close always succeeds.
func closeStream(stream Stream, reason error) {
	_ = core.SafeCall(func() { stream.Close(reason) })
}

// streamHooks are the functions wrapStream calls around the methods of the
// stream it wraps. Each is optional. They run on the goroutine that calls the
// wrapped method and must be safe for the concurrency of the Stream
// contract: Pull and Event never concurrently with each other (one pull at a
// time), Close possibly concurrently with a blocked pull.
type streamHooks struct {
	// Pull is called at the start of every pull (Next, or TryNext for a
	// NotifyStream): the subscription asks for the next event only once the
	// previous one was written or dropped.
	Pull func()
	// Event is called with each event a pull returns (not for the end of
	// the stream, an error, or a TryNext that found nothing). It must not
	// modify the event's maps: the event may be shared by many streams.
	Event func(ev Event)
	// Close is called once the wrapped stream's Close has returned, with
	// its reason.
	Close func(reason error)
}

// wrapStream returns inner with hooks called around its methods: a source
// that counts, traces or releases something per stream wraps its streams
// with it instead of writing a wrapper type. The result keeps inner's
// abilities: it is a NotifyStream exactly when inner is one, so a wrapped
// hub stream is still served without a goroutine of its own. A nil inner is
// returned as is.
func wrapStream(inner Stream, hooks streamHooks) Stream {
	if inner == nil {
		return nil
	}
	w := wrapped{inner: inner, hooks: hooks}
	if ns, ok := inner.(NotifyStream); ok {
		return &wrappedNotify{wrapped: w, ns: ns}
	}
	return &w
}

// wrapped is wrapStream's result for a plain Stream.
type wrapped struct {
	inner Stream
	hooks streamHooks
}

func (w *wrapped) Next() (Event, error) {
	if w.hooks.Pull != nil {
		w.hooks.Pull()
	}
	ev, err := w.inner.Next()
	if err == nil && ev.Kind != 0 && w.hooks.Event != nil {
		w.hooks.Event(ev)
	}
	return ev, err
}

func (w *wrapped) Close(reason error) {
	if w.hooks.Close != nil {
		defer w.hooks.Close(reason)
	}
	w.inner.Close(reason)
}

// wrappedNotify is wrapStream's result for a NotifyStream.
type wrappedNotify struct {
	wrapped
	ns NotifyStream
}

func (w *wrappedNotify) TryNext() (Event, bool, error) {
	if w.hooks.Pull != nil {
		w.hooks.Pull()
	}
	ev, ok, err := w.ns.TryNext()
	if ok && err == nil && ev.Kind != 0 && w.hooks.Event != nil {
		w.hooks.Event(ev)
	}
	return ev, ok, err
}

func (w *wrappedNotify) SetNotify(notify func()) { w.ns.SetNotify(notify) }

// validatedStream reports whether the events of stream were validated when
// they were published (core.ValidatedStream: the hub's streams), looking through
// wrapStream's wrappers (their hooks see the events and do not change
// them: streamHooks.Event), so that a subscription does not validate them again for each
// listener.
func validatedStream(stream Stream) bool {
	for {
		switch w := stream.(type) {
		case *wrapped:
			stream = w.inner
		case *wrappedNotify:
			stream = w.inner
		default:
			return core.Validated(stream)
		}
	}
}

var (
	_ Stream       = (*wrapped)(nil)
	_ NotifyStream = (*wrappedNotify)(nil)
)
