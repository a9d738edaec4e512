// Package otelnats records OpenTelemetry metrics for a natsbridge.Bridge:
// the events it received from other instances, the messages it dropped and
// its resynchronisations. It is the NATS part of
// github.com/mcplisten/listen/otel, apart so that a server without NATS
// does not build the NATS client.
//
//	b, err := natsbridge.Connect(url, h, natsbridge.Options{Hooks: otelnats.Hooks(m, nil)})
//
// # Instruments
//
// On the meter named otel.ScopeName:
//
//	name                       kind     unit       attributes
//	mcp.listen.nats.received   Counter  {message}  mcp.listen.notification.kind
//	mcp.listen.nats.dropped    Counter  {message}  mcp.listen.nats.drop.reason
//	mcp.listen.nats.resyncs    Counter  {resync}   mcp.listen.nats.resync.reason
//
// What each counts:
//
//   - received: events from other instances delivered to the local hub
//     (Hooks.OnReceive); the hub's own instruments count them again as
//     published, with their drops and fan-out time.
//   - dropped: messages from the subject that were not delivered, by
//     natsbridge.DropReason: too_large, malformed, unknown_version,
//     invalid_event, slow_consumer (nats.go's drops, reported in batches),
//     panic.
//   - resyncs: resynchronisations of the local listeners, by
//     natsbridge.ResyncReason: reconnect, loss, manual.
//
// The hooks record in the goroutine that calls them (see natsbridge.Hooks)
// and start none; recording allocates nothing.
package otelnats

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/natsbridge"
	listenotel "github.com/mcplisten/listen/otel"
)

// Attribute keys.
const (
	// AttrDropReason is a natsbridge.DropReason.
	AttrDropReason = attribute.Key("mcp.listen.nats.drop.reason")
	// AttrResyncReason is a natsbridge.ResyncReason.
	AttrResyncReason = attribute.Key("mcp.listen.nats.resync.reason")
)

var (
	dropReasons = [...]natsbridge.DropReason{
		natsbridge.ReasonTooLarge, natsbridge.ReasonMalformed, natsbridge.ReasonUnknownVersion,
		natsbridge.ReasonInvalidEvent, natsbridge.ReasonSlowConsumer, natsbridge.ReasonPanic,
	}
	resyncReasons = [...]natsbridge.ResyncReason{
		natsbridge.ResyncReconnect, natsbridge.ResyncLoss, natsbridge.ResyncManual,
	}
)

// numKinds is the number of listen.Kind values, the invalid zero included.
const numKinds = int(listen.KindExtension) + 1

// Hooks returns natsbridge.Hooks that record on m's meter provider, then
// call next (which may be nil). A nil (disabled) m returns next itself.
func Hooks(m *listenotel.Metrics, next natsbridge.Hooks) natsbridge.Hooks {
	if m == nil {
		return next
	}
	if next == nil {
		next = natsbridge.NopHooks{}
	}
	meter := m.MeterProvider().Meter(listenotel.ScopeName)
	h := &hooks{next: next}
	h.received, _ = meter.Int64Counter("mcp.listen.nats.received", metric.WithUnit("{message}"),
		metric.WithDescription("Events received from other instances and delivered to the local hub, by kind."))
	h.dropped, _ = meter.Int64Counter("mcp.listen.nats.dropped", metric.WithUnit("{message}"),
		metric.WithDescription("Messages from the NATS subject that were dropped, by reason."))
	h.resyncs, _ = meter.Int64Counter("mcp.listen.nats.resyncs", metric.WithUnit("{resync}"),
		metric.WithDescription("Resynchronisations of the local listeners, by reason."))
	h.ensure()
	for i := range numKinds {
		h.byKind[i] = opt(listenotel.AttrNotificationKind.String(listen.Kind(i).String()))
	}
	for i, r := range dropReasons {
		h.byDrop[i] = opt(AttrDropReason.String(string(r)))
	}
	for i, r := range resyncReasons {
		h.byResync[i] = opt(AttrResyncReason.String(string(r)))
	}
	return h
}

func opt(kv attribute.KeyValue) []metric.AddOption {
	return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(kv))}
}

type hooks struct {
	next     natsbridge.Hooks
	received metric.Int64Counter
	dropped  metric.Int64Counter
	resyncs  metric.Int64Counter
	byKind   [numKinds][]metric.AddOption
	byDrop   [len(dropReasons)][]metric.AddOption
	byResync [len(resyncReasons)][]metric.AddOption
}

// ensure replaces an instrument a broken provider did not create by a
// no-op one.
func (h *hooks) ensure() {
	for _, c := range []*metric.Int64Counter{&h.received, &h.dropped, &h.resyncs} {
		if *c == nil {
			*c, _ = noop.Meter{}.Int64Counter("")
		}
	}
}

// bg is the context of every measurement: hooks carry none.
var bg = context.Background()

// OnPublishOut calls next.
func (h *hooks) OnPublishOut(i natsbridge.PublishOutInfo) { h.next.OnPublishOut(i) }

// OnReceive records the received event, then calls next.
func (h *hooks) OnReceive(i natsbridge.ReceiveInfo) {
	k := int(i.EventKind)
	if k >= numKinds {
		k = 0
	}
	h.received.Add(bg, 1, h.byKind[k]...)
	h.next.OnReceive(i)
}

// OnDrop records the dropped messages, then calls next.
func (h *hooks) OnDrop(i natsbridge.DropInfo) {
	opts := []metric.AddOption{metric.WithAttributes(AttrDropReason.String(string(i.Reason)))}
	for j, r := range dropReasons {
		if r == i.Reason {
			opts = h.byDrop[j]
			break
		}
	}
	h.dropped.Add(bg, int64(i.Count), opts...)
	h.next.OnDrop(i)
}

// OnResync records the resynchronisation, then calls next.
func (h *hooks) OnResync(i natsbridge.ResyncInfo) {
	opts := []metric.AddOption{metric.WithAttributes(AttrResyncReason.String(string(i.Reason)))}
	for j, r := range resyncReasons {
		if r == i.Reason {
			opts = h.byResync[j]
			break
		}
	}
	h.resyncs.Add(bg, 1, opts...)
	h.next.OnResync(i)
}

// OnConnection calls next.
func (h *hooks) OnConnection(i natsbridge.ConnectionInfo) { h.next.OnConnection(i) }
