// Package otel records OpenTelemetry metrics for subscriptions/listen: the
// streams a server holds open, how they open, close and why, the listens it
// refuses, the notifications its hubs publish, deliver and drop, and how
// long a fan-out takes. It is fed by the public hooks of the hub and the
// transports and uses the OpenTelemetry metric API only: the application
// chooses the SDK and the exporter (Prometheus, OTLP, ...). Import it under
// another name, such as listenotel, next to go.opentelemetry.io/otel.
//
// # Wiring
//
//	m, err := listenotel.New(listenotel.Options{MeterProvider: mp}) // mp: an SDK MeterProvider
//	hopts, lopts, sopts := hub.Options{}, listen.Options{}, streamhttp.Options{}
//	m.InstrumentHub(&hopts)                                        // published, dropped, fan-out time
//	m.Instrument(&lopts)                                           // streams and refusals, every transport
//	m.InstrumentHTTP(&sopts)                                       // keep-alives
//	h, _ := hub.New(hopts)
//	handler, _ := streamhttp.New(listen.NewServer(m.Source(h), lopts), sopts) // Source: delivered notifications
//
// InstrumentHub, Instrument, InstrumentHTTP and InstrumentBridge (for the
// cluster.Options of natsbridge and redisbridge) chain the hooks already
// set: each records, then calls the hook it replaced.
//
// # Goroutines
//
// The package starts no goroutine. A measurement takes no lock of its own
// (only the SDK's); the first use of a transport kind takes a brief one to
// build its attribute sets. Every hook records in the goroutine that called
// it, then calls the hook it wrapped. Metrics has nothing to close: shut
// the MeterProvider down as the SDK says.
//
// # Without a provider
//
// New with a nil MeterProvider (or the no-op one) returns nil Metrics, which
// are valid and disabled: Source(src) returns src and the Instrument
// methods leave the options as they are. A hub without hooks does not even
// read the clock, so nothing costs anything. (To use the global provider,
// pass otel.GetMeterProvider() explicitly.)
//
// # Instruments
//
// Every instrument is created on the meter named ScopeName.
//
//	name                                  kind            unit            attributes
//	mcp.listen.streams.open               UpDownCounter   {stream}        transport
//	mcp.listen.streams.capacity           UpDownCounter   {stream}        (none: the Server's limit)
//	mcp.listen.streams.opened             Counter         {stream}        transport
//	mcp.listen.streams.closed             Counter         {stream}        transport, close.reason
//	mcp.listen.streams.write_timeouts     Counter         {stream}        transport
//	mcp.listen.requests.refused           Counter         {request}       transport, refusal.cause
//	mcp.listen.keepalives.sent            Counter         {keepalive}     transport
//	mcp.listen.notifications.published    Counter         {notification}  notification.kind
//	mcp.listen.notifications.delivered    Counter         {notification}  transport, notification.kind
//	mcp.listen.notifications.dropped      Counter         {notification}  notification.kind
//	mcp.listen.fanout.duration            Histogram       s               notification.kind
//	mcp.listen.bridge.published           Counter         {message}       bridge.broker, notification.kind, bridge.outcome
//	mcp.listen.bridge.received            Counter         {message}       bridge.broker, notification.kind
//	mcp.listen.bridge.dropped             Counter         {message}       bridge.broker, bridge.drop.reason
//	mcp.listen.bridge.resyncs             Counter         {resync}        bridge.broker, bridge.resync.reason
//	mcp.listen.bridge.disconnected        UpDownCounter   {bridge}        bridge.broker
//
// Metrics says what each counts and where it comes from; the bridge
// instruments are InstrumentBridge's, Metrics.Quota adds a tenant quota's.
// Every counter series starts at zero (see Metrics), so that the first
// refusal or drop is seen by rate() and increase().
//
// # Dashboard and alerts
//
// The monitoring directory of this module holds a Grafana dashboard and
// Prometheus alert rules (with their promtool unit tests) for these
// instruments as the OpenTelemetry Prometheus exporter names them
// (mcp_listen_streams_open, ...); docs/operations.md has a runbook line
// for each alert. A refusal answered in-band (a JSON-RPC error on stdio, a
// 4xx that an HTTP 5xx alert does not see) and an early ending inside a
// 200 stream count like any other, in requests.refused and streams.closed.
//
// # Attributes
//
// Only low-cardinality values, from fixed sets; never a URI, a request id,
// an extension id or a principal:
//
//	mcp.listen.transport          streamable_http, stdio (a transport's listen.Transport.Kind)
//	mcp.listen.notification.kind  tools_list_changed, prompts_list_changed, resources_list_changed,
//	                              resource_updated, extension
//	mcp.listen.close.reason       complete, cancelled, disconnected, error, shutdown, other,
//	                              revoked, expired, lifetime, fell_behind (the early endings)
//	mcp.listen.refusal.cause      capacity, shutdown, quota, auth, validation, error
//	mcp.listen.bridge.*           broker (nats, redis), outcome (ok, error), a drop reason
//	                              or resync reason (cluster.DropInfo, ResyncInfo)
//
// Attribute sets are built once (in New and the first time a transport kind
// is seen), so recording allocates nothing.
//
// # Overhead
//
// With an SDK provider, a hub publication pays about 380 ns of CPU more
// (whatever the number of listeners), a delivered notification about
// 535 ns, an open and a close together about 520 ns; nothing allocates but
// a stream's wrapper and its hooks when it opens (five small objects).
// docs/performance.md gives the measurements.
package otel
