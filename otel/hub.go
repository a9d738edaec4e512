package otel

import "github.com/mcplisten/listen/hub"

// InstrumentHub sets opts' OnPublish and OnOverflow to record every
// publication (mcp.listen.notifications.published, and its fan-out time in
// mcp.listen.fanout.duration) and every overflow
// (mcp.listen.notifications.dropped), by event kind, each calling the hook
// that was set before, after recording. It creates the series of
// published and dropped at zero, one per event kind (see Metrics). Call it
// before hub.New, which copies the options. A nil or disabled m leaves
// opts unchanged, so a hub without other hooks keeps none and pays
// nothing.
func (m *Metrics) InstrumentHub(opts *hub.Options) {
	if m == nil || opts == nil {
		return
	}
	for _, o := range m.byKind[1:] {
		m.published.Add(ctx, 0, o...)
		m.dropped.Add(ctx, 0, o...)
	}
	onPublish, onOverflow := opts.OnPublish, opts.OnOverflow
	opts.OnPublish = func(i hub.PublishInfo) {
		k := kindIndex(i.EventKind)
		m.published.Add(ctx, 1, m.byKind[k]...)
		m.fanout.Record(ctx, i.Duration.Seconds(), m.recByKind[k]...)
		if onPublish != nil {
			onPublish(i)
		}
	}
	opts.OnOverflow = func(i hub.OverflowInfo) {
		m.dropped.Add(ctx, int64(i.Dropped), m.byKind[kindIndex(i.EventKind)]...)
		if onOverflow != nil {
			onOverflow(i)
		}
	}
}
