// Package otel records OpenTelemetry metrics for subscriptions/listen: the
// streams a server holds open, how they open, close and why, the listens it
// refuses, the notifications its hubs publish, deliver and drop, and how
// long a fan-out takes. It is fed by the public hooks of the hub and the
// transports and uses the OpenTelemetry metric API only: the application
// chooses the SDK and the exporter (Prometheus, OTLP, ...).
//
// (Import it under another name, such as listenotel, next to
// go.opentelemetry.io/otel.)
//
// # Wiring
//
//	m, err := listenotel.New(listenotel.Options{MeterProvider: mp}) // mp: an SDK MeterProvider
//	h, _ := hub.New(hub.Options{Hooks: m.HubHooks(nil)})           // published, dropped, fan-out time
//	opts := streamhttp.Options{Listen: lopts}
//	m.InstrumentHTTP(&opts)                                        // streams, refusals, keep-alives
//	handler, _ := streamhttp.New(m.Source(h), opts)                // delivered notifications
//
// HubHooks, InstrumentHTTP and InstrumentStdio chain the hooks already set:
// each records, then calls the hook it replaced (HubHooks' argument, the
// option's previous value). For another transport, call the methods of
// Metrics.Transport(kind) from its hooks. The bridges between instances
// (natsbridge, redisbridge) take Metrics.BridgeHooks as their Hooks.
//
// # Without a provider
//
// New with a nil MeterProvider (or the no-op one) returns nil Metrics, which
// are valid and disabled: HubHooks(next) returns next, Source(src) returns
// src and the Instrument methods leave the options as they are. A hub
// without hooks does not even read the clock, so nothing costs anything.
// (To use the global provider, pass otel.GetMeterProvider() explicitly.)
//
// # Instruments
//
// Every instrument is created on the meter named ScopeName.
//
//	name                                  kind            unit            attributes
//	mcp.listen.streams.open               UpDownCounter   {stream}        transport
//	mcp.listen.streams.opened             Counter         {stream}        transport
//	mcp.listen.streams.closed             Counter         {stream}        transport, close.reason
//	mcp.listen.streams.write_timeouts     Counter         {stream}        transport
//	mcp.listen.requests.refused           Counter         {request}       transport, refusal.cause
//	mcp.listen.keepalives.sent            Counter         {keepalive}     transport
//	mcp.listen.notifications.published    Counter         {notification}  notification.kind
//	mcp.listen.notifications.delivered    Counter         {notification}  transport, notification.kind
//	mcp.listen.notifications.dropped      Counter         {notification}  notification.kind
//	mcp.listen.fanout.duration            Histogram       s               notification.kind
//
// What each counts, and where it comes from:
//
//   - streams.open, streams.opened: +1 at the transport's OnOpen (the
//     subscription is open, its acknowledgement about to be written);
//     streams.open −1 and streams.closed +1 at its OnClose.
//   - streams.closed: by close reason class (ReasonClass): complete,
//     cancelled, disconnected, error, shutdown, other.
//   - streams.write_timeouts: streams cut because a write missed the write
//     deadline, a client that stopped reading (a close reason that is
//     Disconnected with os.ErrDeadlineExceeded, streamhttp, or
//     stdio.ErrWriteTimeout as its cause). Each is also in streams.closed
//     as disconnected. On stdio one timed-out write ends the connection, so
//     every listen of that connection counts.
//   - requests.refused: listens answered with an error instead of a
//     stream (streamhttp's OnError, stdio's OnListenError), by cause
//     (RefusalCause): capacity, shutdown, auth, validation, error. On
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
//     buckets: DefaultFanoutBuckets, 10 µs to 1 s.
//
// # Attributes
//
// Only low-cardinality values, from fixed sets; never a URI, a request id,
// an extension id or a principal:
//
//	mcp.listen.transport          streamable_http, stdio (a transport's listen.Transport.Kind)
//	mcp.listen.notification.kind  tools_list_changed, prompts_list_changed, resources_list_changed,
//	                              resource_updated, extension
//	mcp.listen.close.reason       complete, cancelled, disconnected, error, shutdown, other
//	mcp.listen.refusal.cause      capacity, shutdown, auth, validation, error
//
// Attribute sets are built once (in New and the first time a transport kind
// is seen), so recording allocates nothing.
//
// # Goroutines
//
// The package starts no goroutine. A measurement takes no lock of its own
// (only the SDK's, inside it); the first use of a transport kind takes a
// brief one to build its attribute sets.
// Every hook records in the goroutine that called it (the publisher, the
// stream's serving goroutine, the request's goroutine), then calls the
// hook it wrapped. Metrics has nothing to close: shut the MeterProvider
// down as the SDK says.
//
// # Overhead
//
// Measured with the package's benchmarks (bench_test.go) on the 2-core
// shared VM the project develops on (kvm-clock, where one time.Now costs
// about 45 ns), with an SDK MeterProvider read by a manual reader ("otel")
// against no provider ("none"), and against hub.NopHooks ("hooks"), which
// isolates the price of having hub hooks at all (the hook calls and the two
// clock reads of PublishInfo.Duration) from the SDK's. The machine was
// shared with other developers' test runs (load average 11 to 13), so
// wall-clock ns/op swung by 2x between runs; the first table is CPU time
// per operation, (user+sys)/N of a whole run with GOMAXPROCS=1, which the
// load barely moves: median [range] of 5 runs each.
//
//	                                              none            hooks           otel            otel − none
//	Hub Publish + pull, 1 listener                170 [145–185]   280 [240–305]   550 [535–630]   +380 ns
//	Hub Publish + pull, 100 listeners             4.60 [4.45–4.70] µs  4.65 [4.55–4.80] µs  4.90 [4.75–5.05] µs  +300 ns (6.5%)
//	One delivered notification (Publish → Serve
//	→ written, through Source)                    235 [220–245]   330 [320–335]   770 [765–790]   +535 ns
//	Recording alone: hub OnPublish (a counter and a histogram)      265 [255–270] ns
//	Recording alone: Transport OnOpen + OnClose (four counters)     520 [500–530] ns
//
// So a publication pays about 110 ns for having hooks and 270 ns for the
// SDK's counter and histogram, whatever the number of listeners; a
// delivered notification pays its publication's share and about 170 ns
// for the delivered counter (one SDK Add with a precomputed attribute set).
// An open and a close of a stream pay about 520 ns together. Nothing
// allocates: the one allocation per publication in every variant is the
// hub's shared event, and each wrapped stream is one allocation per open.
// With no provider the code paths are those of a server without this
// package.
//
// The same benchmarks as go test ./otel/ -run '^$' -bench . -benchmem
// -count 5 (wall clock, median [range], ns/op) under that load:
//
//	                                   none                  hooks                 otel
//	Hub Publish + pull, 1 listener     613 [409–697]         561 [337–778]         997 [662–1870]
//	Hub Publish + pull, 100 listeners  11.0 [9.6–13.1] µs    12.2 [9.5–14.4] µs    11.7 [10.3–19.3] µs
//	One delivered notification         988 [590–1221]        954 [487–990]         1140 [1128–1436]
//
// where the differences drown in the noise.
package otel
