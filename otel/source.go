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
// place of src. A stream that implements listen.PollStream (a hub's do) is
// wrapped as one, so the subscription still serves it without a worker
// goroutine, and a listen.NotifyStream as one too. A nil or disabled m returns src itself.
//
// A notification counts once the subscription asks for the next one,
// which it does only after the write returned (the demand rule of
// listen.Stream): one whose write failed, or that was pulled while the
// stream was ending and never written, is not counted. With a stream that
// is not a PollStream, the worker's next pull races the stream's close, so
// the last notification written before a close may go uncounted.
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
	t := s.m.Transport(kind)
	if ns, ok := st.(listen.NotifyStream); ok {
		return accepted, &notifyStream{pollStream: pollStream{stream: stream{inner: st, t: t}, poll: ns}, ns: ns}, nil
	}
	if ps, ok := st.(listen.PollStream); ok {
		return accepted, &pollStream{stream: stream{inner: st, t: t}, poll: ps}, nil
	}
	return accepted, &stream{inner: st, t: t}, nil
}

// stream counts the events its subscription wrote. pending holds the kind
// of the event last handed out until the next pull confirms it was written
// (or dropped by the subscription's own filter); Close forgets it.
type stream struct {
	inner   listen.Stream
	t       *Transport
	pending atomic.Uint32
}

func (s *stream) confirm() {
	if k := s.pending.Swap(0); k != 0 {
		s.t.m.delivered.Add(ctx, 1, s.t.delivered[kindIndex(listen.Kind(k))]...)
	}
}

// Next confirms the previous event and pulls the next one.
func (s *stream) Next() (listen.Event, error) {
	s.confirm()
	ev, err := s.inner.Next()
	if err == nil && ev.Kind != 0 {
		s.pending.Store(uint32(ev.Kind))
	}
	return ev, err
}

// Close forgets an unconfirmed event and closes the stream.
func (s *stream) Close(reason error) {
	s.pending.Store(0)
	s.inner.Close(reason)
}

// pollStream is stream for a listen.PollStream (one allocation per open
// either way).
type pollStream struct {
	stream
	poll listen.PollStream
}

// TryNext confirms the previous event and polls for the next one.
func (s *pollStream) TryNext() (listen.Event, bool, error) {
	s.confirm()
	ev, ok, err := s.poll.TryNext()
	if ok && err == nil && ev.Kind != 0 {
		s.pending.Store(uint32(ev.Kind))
	}
	return ev, ok, err
}

// Ready is the inner stream's.
func (s *pollStream) Ready() <-chan struct{} { return s.poll.Ready() }

// notifyStream is pollStream for a listen.NotifyStream (a hub's streams
// are), so that a transport still serves it without a goroutine of its own
// (listen.Subscription.Poller; streamhttp's fast path).
type notifyStream struct {
	pollStream
	ns listen.NotifyStream
}

// SetNotify is the inner stream's.
func (s *notifyStream) SetNotify(notify func()) { s.ns.SetNotify(notify) }
