package listen

import "github.com/mcplisten/listen/internal/valid"

// StreamHooks are the functions WrapStream calls around the methods of the
// stream it wraps. Each is optional. They run on the goroutine that calls the
// wrapped method and must be safe for the concurrency of the Stream
// contract: Pull and Event never concurrently with each other (one pull at a
// time), Close possibly concurrently with a blocked pull.
type StreamHooks struct {
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

// WrapStream returns inner with hooks called around its methods: a source
// that counts, traces or releases something per stream wraps its streams
// with it instead of writing a wrapper type. The result keeps inner's
// abilities: it is a NotifyStream exactly when inner is one, so a wrapped
// hub stream is still served without a goroutine of its own. A nil inner is
// returned as is.
func WrapStream(inner Stream, hooks StreamHooks) Stream {
	if inner == nil {
		return nil
	}
	w := wrapped{inner: inner, hooks: hooks}
	if ns, ok := inner.(NotifyStream); ok {
		return &wrappedNotify{wrapped: w, ns: ns}
	}
	return &w
}

// wrapped is WrapStream's result for a plain Stream.
type wrapped struct {
	inner Stream
	hooks StreamHooks
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

// wrappedNotify is WrapStream's result for a NotifyStream.
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
// they were published (internal/valid: the hub's streams), looking through
// WrapStream's wrappers (their hooks see the events and do not change
// them: StreamHooks.Event), so that a subscription does not validate them again for each
// listener.
func validatedStream(stream Stream) bool {
	for {
		switch w := stream.(type) {
		case *wrapped:
			stream = w.inner
		case *wrappedNotify:
			stream = w.inner
		default:
			return valid.Validated(stream)
		}
	}
}

var (
	_ Stream       = (*wrapped)(nil)
	_ NotifyStream = (*wrappedNotify)(nil)
)
