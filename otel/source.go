package otel

import (
	"context"
	"sync/atomic"

	"github.com/mcplisten/listen"
)

// Source returns src wrapped so that every notification its streams hand
// to a subscription, and the subscription then writes, is counted in
// mcp.listen.notifications.delivered, by transport (the request's
// listen.Transport.Kind) and kind. Give the wrapper to the transport in
// place of src. Its streams are wrapped so that they
// keep what the source's streams can do: a hub stream is still served
// without a goroutine of its own. A nil or disabled m returns src itself.
//
// A notification counts once the subscription asks for the next one,
// which it does only after the write returned (the demand rule of
// listen.Stream): one whose write failed, or that was pulled while the
// stream was ending and never written, is not counted. With a stream that
// is not a listen.NotifyStream, the worker's next pull races the stream's
// close, so the last notification written before a close may go uncounted.
func (m *Metrics) Source(src listen.Source) listen.Source {
	if m == nil || src == nil {
		return src
	}
	return &source{m: m, src: src}
}

type source struct {
	m   *Metrics
	src listen.Source
}

// Open opens src's stream and wraps it.
func (s *source) Open(ctx context.Context, req *listen.Request, supported listen.Filter) (listen.Filter, listen.Stream, error) {
	accepted, st, err := s.src.Open(ctx, req, supported)
	if err != nil || st == nil {
		return accepted, st, err
	}
	var kind string
	if req != nil {
		kind = req.Transport.Kind
	}
	c := &counter{t: s.m.recorder(kind)}
	w := counted{inner: st, c: c}
	if ns, ok := st.(listen.NotifyStream); ok {
		return accepted, &countedNotify{counted: w, ns: ns}, nil
	}
	return accepted, &w, nil
}

// counted is a stream of Source: its counter sees each pull, each event
// handed out and the close. It is a listen.NotifyStream (countedNotify)
// exactly when the stream it wraps is one.
type counted struct {
	inner listen.Stream
	c     *counter
}

func (w *counted) Next() (listen.Event, error) {
	w.c.confirm()
	ev, err := w.inner.Next()
	if err == nil && ev.Kind != 0 {
		w.c.event(ev)
	}
	return ev, err
}

func (w *counted) Close(reason error) {
	defer w.c.forget(reason)
	w.inner.Close(reason)
}

// EventsValidated passes on the wrapped stream's word that its events were
// validated when they were published (the hub's streams give it), so that
// a subscription does not validate them again: the counter does not change
// them.
func (w *counted) EventsValidated() bool {
	v, ok := w.inner.(interface{ EventsValidated() bool })
	return ok && v.EventsValidated()
}

// countedNotify is counted for a listen.NotifyStream.
type countedNotify struct {
	counted
	ns listen.NotifyStream
}

func (w *countedNotify) TryNext() (listen.Event, bool, error) {
	w.c.confirm()
	ev, ok, err := w.ns.TryNext()
	if ok && err == nil && ev.Kind != 0 {
		w.c.event(ev)
	}
	return ev, ok, err
}

func (w *countedNotify) SetNotify(notify func()) { w.ns.SetNotify(notify) }

// counter counts the events its stream's subscription wrote. pending holds
// the kind of the event last handed out until the next pull confirms it was
// written (or dropped by the subscription's own filter); the close forgets
// it.
type counter struct {
	t       *transport
	pending atomic.Uint32
}

func (c *counter) confirm() {
	if k := c.pending.Swap(0); k != 0 {
		c.t.m.delivered.Add(ctx, 1, c.t.delivered[kindIndex(listen.Kind(k))]...)
	}
}

func (c *counter) event(ev listen.Event) { c.pending.Store(uint32(ev.Kind)) }

func (c *counter) forget(error) { c.pending.Store(0) }
