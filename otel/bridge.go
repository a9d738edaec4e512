package otel

import (
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
)

// Attribute keys of the bridge instruments (InstrumentBridge).
const (
	// attrBroker names the bridge's broker: the broker argument of
	// InstrumentBridge ("nats", "redis").
	attrBroker = attribute.Key("mcp.listen.bridge.broker")
	// attrBridgeOutcome is ok or error: whether the broker's client took a
	// published message.
	attrBridgeOutcome = attribute.Key("mcp.listen.bridge.outcome")
	// attrDropReason is a cluster.DropInfo.Reason.
	attrDropReason = attribute.Key("mcp.listen.bridge.drop.reason")
	// attrResyncReason is a cluster.ResyncInfo.Reason.
	attrResyncReason = attribute.Key("mcp.listen.bridge.resync.reason")
)

var (
	dropReasons = [...]string{
		"too_large", "malformed", "unknown_version",
		"invalid_event", "slow_consumer", "panic",
		"unauthenticated", "replayed", "stale",
	}
	resyncReasons = [...]string{
		"reconnect", "loss", "manual",
	}
)

// InstrumentBridge sets the hooks of opts, the cluster.Options of a bridge
// between instances (natsbridge, redisbridge: Options.Options), to record
// on m's meter provider, each calling the hook that was set before, after
// recording; broker names the broker in the attribute
// mcp.listen.bridge.broker. Call it once per bridge, before its New or
// Connect, which copies the options. A nil (disabled) m leaves opts
// unchanged.
//
//	name                            kind           unit       attributes
//	mcp.listen.bridge.published     Counter        {message}  broker, notification.kind, bridge.outcome
//	mcp.listen.bridge.received      Counter        {message}  broker, notification.kind
//	mcp.listen.bridge.dropped       Counter        {message}  broker, bridge.drop.reason
//	mcp.listen.bridge.resyncs       Counter        {resync}   broker, bridge.resync.reason
//	mcp.listen.bridge.disconnected  UpDownCounter  {bridge}   broker
//
// published counts the events handed to the broker (outcome error: its
// client refused them, so they reached the local listeners only);
// received the events of other instances delivered to the local hub (the
// hub's instruments count them again as published); dropped the messages
// from the broker that were not delivered, by cluster.DropInfo.Reason (a slow
// consumer's drops in batches); resyncs the resynchronisations of the
// local listeners, by cluster.ResyncInfo.Reason; disconnected is 1 while the
// bridge's connection to its broker is lost (from an OnConnection with
// "disconnected" or "reconnecting" to one with
// "connected" or "closed") and 0 otherwise, summed over the
// bridges of the broker name. Every series of these instruments is created
// at zero here (see Metrics), one per kind, outcome and cluster reason. The
// hooks record in the goroutine that calls them and start none; recording
// allocates nothing for the reasons the cluster package defines.
func (m *Metrics) InstrumentBridge(broker string, opts *cluster.Options) {
	if m == nil || opts == nil {
		return
	}
	h := m.bridgeRecorder(broker)
	opts.OnPublishOut = chain(h.onPublishOut, opts.OnPublishOut)
	opts.OnReceive = chain(h.onReceive, opts.OnReceive)
	opts.OnDrop = chain(h.onDrop, opts.OnDrop)
	opts.OnResync = chain(h.onResync, opts.OnResync)
	opts.OnConnection = chain(h.onConnection, opts.OnConnection)
}

// chain returns a hook that calls record, then next when it is set.
func chain[T any](record, next func(T)) func(T) {
	if next == nil {
		return record
	}
	return func(i T) { record(i); next(i) }
}

// bridgeRecorder makes a bridge's instruments, every series at zero.
func (m *Metrics) bridgeRecorder(broker string) *bridgeHooks {
	meter := m.provider.Meter(ScopeName)
	h := &bridgeHooks{broker: attrBroker.String(broker)}
	h.published, _ = meter.Int64Counter("mcp.listen.bridge.published", metric.WithUnit("{message}"),
		metric.WithDescription("Events handed to the broker for the other instances, by kind and outcome."))
	h.received, _ = meter.Int64Counter("mcp.listen.bridge.received", metric.WithUnit("{message}"),
		metric.WithDescription("Events received from other instances and delivered to the local hub, by kind."))
	h.dropped, _ = meter.Int64Counter("mcp.listen.bridge.dropped", metric.WithUnit("{message}"),
		metric.WithDescription("Messages from the broker that were dropped, by reason."))
	h.resyncs, _ = meter.Int64Counter("mcp.listen.bridge.resyncs", metric.WithUnit("{resync}"),
		metric.WithDescription("Resynchronisations of the local listeners, by reason."))
	h.disconnected, _ = meter.Int64UpDownCounter("mcp.listen.bridge.disconnected", metric.WithUnit("{bridge}"),
		metric.WithDescription("Bridges whose connection to the broker is lost."))
	for _, c := range []*metric.Int64Counter{&h.published, &h.received, &h.dropped, &h.resyncs} {
		if *c == nil { // a broken provider: record nothing
			*c, _ = noop.Meter{}.Int64Counter("")
		}
	}
	if h.disconnected == nil {
		h.disconnected, _ = noop.Meter{}.Int64UpDownCounter("")
	}
	for i := range numKinds {
		kind := attrNotificationKind.String(listen.Kind(i).String())
		h.byKind[i] = h.opt(kind)
		h.okByKind[i] = h.opt(kind, attrBridgeOutcome.String("ok"))
		h.errByKind[i] = h.opt(kind, attrBridgeOutcome.String("error"))
	}
	for i, r := range dropReasons {
		h.byDrop[i] = h.opt(attrDropReason.String(r))
	}
	for i, r := range resyncReasons {
		h.byResync[i] = h.opt(attrResyncReason.String(r))
	}
	h.one = h.opt()
	// Every series at zero; the invalid kind is left out.
	for i := 1; i < numKinds; i++ {
		h.published.Add(ctx, 0, h.okByKind[i]...)
		h.published.Add(ctx, 0, h.errByKind[i]...)
		h.received.Add(ctx, 0, h.byKind[i]...)
	}
	for _, o := range h.byDrop {
		h.dropped.Add(ctx, 0, o...)
	}
	for _, o := range h.byResync {
		h.resyncs.Add(ctx, 0, o...)
	}
	h.disconnected.Add(ctx, 0, h.one...)
	return h
}

// bridgeHooks record a bridge's hooks on its instruments.
type bridgeHooks struct {
	broker attribute.KeyValue

	published, received, dropped, resyncs metric.Int64Counter
	disconnected                          metric.Int64UpDownCounter
	// down is whether this bridge counts in disconnected.
	down atomic.Bool

	byKind, okByKind, errByKind [numKinds][]metric.AddOption
	byDrop                      [len(dropReasons)][]metric.AddOption
	byResync                    [len(resyncReasons)][]metric.AddOption
	one                         []metric.AddOption // the broker alone
}

// opt is the attribute set of the broker and kvs, built once.
func (h *bridgeHooks) opt(kvs ...attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(append(kvs, h.broker)...))}
}

// onPublishOut records the publication.
func (h *bridgeHooks) onPublishOut(i cluster.PublishOutInfo) {
	k := kindIndex(i.EventKind)
	if i.Err != nil {
		h.published.Add(ctx, 1, h.errByKind[k]...)
	} else {
		h.published.Add(ctx, 1, h.okByKind[k]...)
	}
}

// onReceive records the received event.
func (h *bridgeHooks) onReceive(i cluster.ReceiveInfo) {
	h.received.Add(ctx, 1, h.byKind[kindIndex(i.EventKind)]...)
}

// onDrop records the dropped messages.
func (h *bridgeHooks) onDrop(i cluster.DropInfo) {
	var opts []metric.AddOption
	for j, r := range dropReasons {
		if r == i.Reason {
			opts = h.byDrop[j]
			break
		}
	}
	if opts == nil {
		opts = h.opt(attrDropReason.String(i.Reason))
	}
	h.dropped.Add(ctx, int64(i.Count), opts...)
}

// onResync records the resynchronisation.
func (h *bridgeHooks) onResync(i cluster.ResyncInfo) {
	var opts []metric.AddOption
	for j, r := range resyncReasons {
		if r == i.Reason {
			opts = h.byResync[j]
			break
		}
	}
	if opts == nil {
		opts = h.opt(attrResyncReason.String(i.Reason))
	}
	h.resyncs.Add(ctx, 1, opts...)
}

// onConnection records a connection lost or found again in
// mcp.listen.bridge.disconnected.
func (h *bridgeHooks) onConnection(i cluster.ConnectionInfo) {
	switch i.Status {
	case "connected", "closed":
		if h.down.CompareAndSwap(true, false) {
			h.disconnected.Add(ctx, -1, h.one...)
		}
	default: // Disconnected, Reconnecting
		if h.down.CompareAndSwap(false, true) {
			h.disconnected.Add(ctx, 1, h.one...)
		}
	}
}
