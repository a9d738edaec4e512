package otel

import (
	"context"
	"errors"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"

	"github.com/mcplisten/listen"
)

// ScopeName is the instrumentation scope (the meter's name) of every
// instrument of this package.
const ScopeName = "github.com/mcplisten/listen/otel"

// Attribute keys. Their values come from small fixed sets (see the package
// documentation): never a URI, a request id or a principal.
const (
	// attrTransport is the transport kind: "streamable_http", "stdio", or
	// the Kind of another transport's listen.Transport.
	attrTransport = attribute.Key("mcp.listen.transport")
	// attrNotificationKind is the event kind (listen.Kind.String):
	// "tools_list_changed", "prompts_list_changed",
	// "resources_list_changed", "resource_updated" or "extension".
	attrNotificationKind = attribute.Key("mcp.listen.notification.kind")
	// attrCloseReason is a stream's close reason class (listen.Classify).
	attrCloseReason = attribute.Key("mcp.listen.close.reason")
	// attrRefusalCause is why a listen was refused: "capacity",
	// "shutdown", "quota", "auth", "validation" or "error" (see Metrics).
	attrRefusalCause = attribute.Key("mcp.listen.refusal.cause")
)

// Options configure New.
type Options struct {
	// MeterProvider provides the meter of every instrument. Nil (or a
	// go.opentelemetry.io/otel/metric/noop provider) disables the package:
	// New returns Metrics whose hooks are the ones given, unchanged, so
	// nothing is measured and nothing costs anything. Pass
	// otel.GetMeterProvider() for the global provider.
	MeterProvider metric.MeterProvider
	// FanoutBuckets are the bucket boundaries, in seconds, advised for the
	// mcp.listen.fanout.duration histogram. Nil means defaultFanoutBuckets.
	// A View of the SDK still overrides them.
	FanoutBuckets []float64
}

// defaultFanoutBuckets are the default boundaries of the fan-out duration
// histogram, in seconds (see Options.FanoutBuckets).
var defaultFanoutBuckets = []float64{
	0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005,
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1,
}

// Metrics holds the instruments and hands out the hooks that feed them:
// InstrumentHub for a hub.Hub, Source for the delivered notifications,
// Instrument for a listen.Server (every transport's streams and
// refusals), InstrumentHTTP for Streamable HTTP's keep-alives and
// InstrumentBridge for a bridge between instances. Create it with New. All its methods are safe for concurrent use, and a nil *Metrics is
// valid and disabled.
//
// What each counts, and where it comes from:
//
//   - streams.open, streams.opened: +1 at the Server's OnOpen (the
//     subscription is open, its acknowledgement about to be written);
//     streams.open −1 and streams.closed +1 at its OnClose, under the
//     stream's transport kind.
//   - streams.capacity: the stream limit of the Server, what streams.open
//     (summed over transports) is to be read against: Instrument adds
//     listen.Options.MaxStreams (1024 when zero),
//     summed over the Servers instrumented, without a transport
//     attribute: the limit covers every transport of a Server.
//   - streams.closed: by close reason class (listen.Classify): complete,
//     cancelled, disconnected, error, shutdown, other, and one per early
//     ending (revoked, expired, lifetime, fell_behind).
//   - streams.write_timeouts: streams cut because a write missed the write
//     deadline, a client that stopped reading (a close reason that is
//     Disconnected with os.ErrDeadlineExceeded, streamhttp, or
//     stdio.ErrWriteTimeout as its cause). Each is also in streams.closed
//     as disconnected. On stdio one timed-out write ends the connection, so
//     every listen of that connection counts.
//   - requests.refused: listens answered with an error instead of a
//     stream (listen.Options.OnRefuse), by cause: capacity (the error's
//     cause is listen.ErrOverloaded), shutdown (listen.ErrShutdown), quota
//     (listen.ErrOverQuota: MaxStreamsPerKey or a listen.Quota), auth
//     (Authenticate or CheckOrigin refused it: a *streamhttp.AuthError,
//     streamhttp.MsgUnauthorized or streamhttp.MsgForbidden, or an expired
//     principal), validation (any other error but -32603: parse, method,
//     params, headers, protocol version, body size, a duplicate id) and
//     error (any other -32603, such as "Subscription source failed to
//     open"). On
//     Streamable HTTP it counts every request the listen handler refused,
//     a wrong method or a body too large included (validation).
//   - keepalives.sent: keep-alive comments written (streamhttp's
//     OnKeepAlive; stdio sends none).
//   - notifications.published: events published to a hub (OnPublish),
//     one per publication whatever it matched; with a bridge between
//     instances, the events received from the others too, since the bridge
//     publishes them to the local hub.
//   - notifications.delivered: notifications a subscription took from its
//     stream and wrote (Source; see there for when one counts). An
//     extension event that the subscription drops (its extension not
//     negotiated by the client) counts too.
//   - notifications.dropped: events lost to full listener queues of a hub
//     (OnOverflow; per listener: an event dropped by three queues counts
//     3), the oldest queued under DropOldest, the new one under DropNewest.
//   - fanout.duration: how long each publication took to hand its event
//     to every selected listener (hub.PublishInfo.Duration). Default
//     buckets: 10 µs to 1 s (Options.FanoutBuckets).
//
// Every series of a counter is created at zero before its first count: a
// transport's (by close reason, refusal cause and notification kind) in
// Instrument for Streamable HTTP and stdio (InstrumentHTTP makes Streamable
// HTTP's too), when it is first seen for another kind, a hub's published
// and dropped (by kind) in InstrumentHub, a bridge's in InstrumentBridge. A scraper such as
// Prometheus then sees the first refusal or drop as an increase
// from 0, which rate() and increase() count, instead of a series that
// appears at 1 and whose first count is lost.
type Metrics struct {
	streamsOpen   metric.Int64UpDownCounter
	capacity      metric.Int64UpDownCounter
	streamsOpened metric.Int64Counter
	streamsClosed metric.Int64Counter
	writeTimeouts metric.Int64Counter
	refused       metric.Int64Counter
	keepAlives    metric.Int64Counter
	published     metric.Int64Counter
	delivered     metric.Int64Counter
	dropped       metric.Int64Counter
	fanout        metric.Float64Histogram

	// byKind are the attribute options of each listen.Kind (index 0 is
	// "invalid"), computed once.
	byKind    [numKinds][]metric.AddOption
	recByKind [numKinds][]metric.RecordOption

	provider metric.MeterProvider

	mu         sync.RWMutex
	transports map[string]*transport
}

// numKinds is the number of listen.Kind values, the invalid zero included.
const numKinds = int(listen.KindExtension) + 1

// kindIndex maps k to its slot in the per-kind tables (0 for an invalid
// kind).
func kindIndex(k listen.Kind) int {
	if int(k) >= numKinds {
		return 0
	}
	return int(k)
}

// New creates the instruments on opts.MeterProvider's meter (ScopeName). It
// fails only if the provider refuses an instrument; the Metrics returned
// then still records on the instruments that were created. With no
// provider it returns disabled Metrics (see Options.MeterProvider) and no
// error.
func New(opts Options) (*Metrics, error) {
	mp := opts.MeterProvider
	if mp == nil {
		return nil, nil
	}
	if _, ok := mp.(noop.MeterProvider); ok {
		return nil, nil
	}
	meter := mp.Meter(ScopeName)
	buckets := opts.FanoutBuckets
	if buckets == nil {
		buckets = defaultFanoutBuckets
	}

	m := &Metrics{provider: mp, transports: make(map[string]*transport)}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	var err error
	m.streamsOpen, err = meter.Int64UpDownCounter("mcp.listen.streams.open",
		metric.WithUnit("{stream}"), metric.WithDescription("Listen streams open now."))
	errs = append(errs, err)
	m.capacity, err = meter.Int64UpDownCounter("mcp.listen.streams.capacity",
		metric.WithUnit("{stream}"), metric.WithDescription("Listen streams the transport may hold open at once (its stream limit)."))
	errs = append(errs, err)
	m.streamsOpened = counter("mcp.listen.streams.opened", "{stream}",
		"Listen streams opened (acknowledged).")
	m.streamsClosed = counter("mcp.listen.streams.closed", "{stream}",
		"Listen streams closed, by close reason class.")
	m.writeTimeouts = counter("mcp.listen.streams.write_timeouts", "{stream}",
		"Listen streams cut because a write missed the write deadline (a client that stopped reading).")
	m.refused = counter("mcp.listen.requests.refused", "{request}",
		"Listen requests answered with an error instead of a stream, by cause.")
	m.keepAlives = counter("mcp.listen.keepalives.sent", "{keepalive}",
		"Keep-alives written to idle listen streams.")
	m.published = counter("mcp.listen.notifications.published", "{notification}",
		"Events published to a hub, by kind.")
	m.delivered = counter("mcp.listen.notifications.delivered", "{notification}",
		"Notifications written to listen streams, by transport and kind.")
	m.dropped = counter("mcp.listen.notifications.dropped", "{notification}",
		"Events dropped by full listener queues of a hub, by kind.")
	m.fanout, err = meter.Float64Histogram("mcp.listen.fanout.duration",
		metric.WithUnit("s"), metric.WithDescription("Duration of a hub publication's fan-out to its listeners."),
		metric.WithExplicitBucketBoundaries(buckets...))
	errs = append(errs, err)

	for i := range numKinds {
		set := attribute.NewSet(attrNotificationKind.String(listen.Kind(i).String()))
		m.byKind[i] = []metric.AddOption{metric.WithAttributeSet(set)}
		m.recByKind[i] = []metric.RecordOption{metric.WithAttributeSet(set)}
	}
	m.ensureNoNil()
	return m, errors.Join(errs...)
}

// ensureNoNil replaces an instrument the provider failed to create (the
// API returns nil with the error in that case only if the provider is
// broken) by a no-op one, so that recording never panics.
func (m *Metrics) ensureNoNil() {
	nm := noop.Meter{}
	for _, c := range []*metric.Int64UpDownCounter{&m.streamsOpen, &m.capacity} {
		if *c == nil {
			*c, _ = nm.Int64UpDownCounter("")
		}
	}
	for _, c := range []*metric.Int64Counter{&m.streamsOpened, &m.streamsClosed, &m.writeTimeouts,
		&m.refused, &m.keepAlives, &m.published, &m.delivered, &m.dropped} {
		if *c == nil {
			*c, _ = nm.Int64Counter("")
		}
	}
	if m.fanout == nil {
		m.fanout, _ = nm.Float64Histogram("")
	}
}

// ctx is the context of every measurement: hooks carry none.
var ctx = context.Background()
