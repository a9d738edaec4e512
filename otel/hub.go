package otel

import "github.com/mcplisten/listen/hub"

// HubHooks returns hooks for hub.Options.Hooks that record every
// publication (mcp.listen.notifications.published, and its fan-out time in
// mcp.listen.fanout.duration) and every overflow
// (mcp.listen.notifications.dropped), by event kind, then call next (which
// may be nil). It creates the series of published and dropped at zero, one
// per event kind (see Metrics). A nil or disabled m returns next itself, so
// a hub without other hooks keeps none and pays nothing.
func (m *Metrics) HubHooks(next hub.Hooks) hub.Hooks {
	if m == nil {
		return next
	}
	for _, o := range m.byKind[1:] {
		m.published.Add(ctx, 0, o...)
		m.dropped.Add(ctx, 0, o...)
	}
	if next == nil {
		next = hub.NopHooks{}
	}
	return &hubHooks{m: m, next: next}
}

type hubHooks struct {
	m    *Metrics
	next hub.Hooks
}

// OnOpen calls next.
func (h *hubHooks) OnOpen(i hub.OpenInfo) { h.next.OnOpen(i) }

// OnPublish records the publication and its fan-out time, then calls next.
func (h *hubHooks) OnPublish(i hub.PublishInfo) {
	k := kindIndex(i.EventKind)
	h.m.published.Add(ctx, 1, h.m.byKind[k]...)
	h.m.fanout.Record(ctx, i.Duration.Seconds(), h.m.recByKind[k]...)
	h.next.OnPublish(i)
}

// OnOverflow records the dropped events, then calls next.
func (h *hubHooks) OnOverflow(i hub.OverflowInfo) {
	h.m.dropped.Add(ctx, int64(i.Dropped), h.m.byKind[kindIndex(i.EventKind)]...)
	h.next.OnOverflow(i)
}

// OnShutdown calls next.
func (h *hubHooks) OnShutdown(i hub.ShutdownInfo) { h.next.OnShutdown(i) }

// OnClose calls next.
func (h *hubHooks) OnClose(i hub.CloseInfo) { h.next.OnClose(i) }
