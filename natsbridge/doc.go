// Package natsbridge carries subscriptions/listen events between the
// instances of one MCP server over NATS: each instance keeps its own
// hub.Hub (its listen streams are opened on it, for example through
// streamhttp or gosdk), and a Bridge joins that hub to one NATS subject, so
// that a change published on any instance's hub reaches the matching
// listeners on every instance, once each, in the order it was published.
//
//	h, _ := hub.New(hub.Options{})
//	br, err := natsbridge.Connect("nats://nats.internal:4222", h, natsbridge.Options{},
//		nats.UserCredentials("instance.creds")) // nats.go's own options
//	defer br.Close()
//	listens, err := streamhttp.New(h, streamhttp.Options{...})
//	h.ToolsListChanged()                // every instance's tools listeners
//	h.ResourceUpdated("file:///a.txt") // every listener watching it, on every instance
//
// Or join a connection you already have with New(nc, h, opts).
//
// The bridge joins the hub as its relay: every Publish on
// the hub, whoever calls it (your code, gosdk's republishing of the go-sdk
// server's notifications), is also published once on the subject
// Options.Prefix + ".events" (default "mcp.listen.events"), and the events
// the other instances publish there are delivered to the hub's listeners.
// The broker-neutral part, shared with redisbridge, is the package
// github.com/mcplisten/listen/cluster: the envelope, its numbering,
// timestamps and signatures, replay protection, gap detection and
// resynchronisation, the Options embedded here (cluster.Options, with its
// hooks and logger) and Stats. Its documentation gives the delivery
// semantics and the trust model; this one what NATS adds.
//
// # Goroutines
//
// A Bridge owns two goroutines, both started by New and both ended by
// Close:
//
//   - the delivery goroutine (nats.go's goroutine of the bridge's
//     subscription) hands each message to the node (cluster.Node.Receive),
//     which delivers its event to the hub, one message at a time, in
//     arrival order. It never blocks on a listener: the hub's local publication
//     does not wait;
//   - the control goroutine follows the connection's status (through
//     nats.Conn.StatusChanged: no handler of yours is replaced) and the
//     subscription's slow consumer reports, and runs the reconnect resync.
//
// The relay runs in the goroutine of the hub's Publish. Close leaves the
// hub, stops the control goroutine, unsubscribes, waits for the delivery
// goroutine to finish the message in hand, and closes the connection only
// if Connect made it. Hooks run on the goroutine that caused them and must
// not call Close. All methods are safe for concurrent use.
//
// # NATS
//
// NATS keeps the order of one connection's messages on one subject, so
// publications ordered by happens-before on one instance reach every
// listener in that order. NATS core is at-most-once: a message published
// while a subscriber is cut off, or that a subscriber cannot take in time
// (over Options.PendingMessages or PendingBytes: cluster.Drops.
// SlowConsumer), is gone. A bridge resynchronises its listeners (the
// list changes of Options.Resync, and Options.ResyncURIs) after such
// drops, after a gap in another instance's sequence numbers, and after
// its connection is re-established, once a round trip shows that the
// server has the re-sent subscription, so that whatever is published
// after the resync reaches it. It then sends a sync message with its next
// number: what it could not hand to NATS while cut off shows up as a gap
// at the others.
//
// While nats.go reconnects it buffers outgoing messages (up to
// nats.ReconnectBufSize, 8 MiB by default) and sends them after the
// reconnect; when it refuses one (buffer full or disabled, connection
// closed), the hub's Publish still serves the local listeners and returns
// no error: the loss is counted (Stats.PublishErrors, OnPublishOut) and
// the others learn of it through the gap. The server's max_payload
// bounds an envelope as MaxMessageBytes does (with the signature header):
// the hub's Publish refuses a larger one (cluster.ErrTooLarge).
//
// # Authentication and permissions
//
// With Options.AuthKeys the signature travels in the NATS header
// AuthHeader, outside the envelope (NATS server 2.2 or later); the stamps
// and numbers it covers make a captured message useless, also to an
// instance that restarted (see cluster, Replay protection). Whoever can
// publish on the subject speaks for the server: give the instances their
// own NATS user (or account) allowed to publish and subscribe on
// Prefix + ".events", and let no other user publish or subscribe there.
// README.md shows such a configuration, which a test runs, and the
// figures of the benchmarks (authentication costs about 2 µs of CPU per
// event across the pipeline).
//
// # Quotas
//
// With Options.Quota (a cluster.Quota, also given to the server as
// listen.Options.Quota) the bridge carries the instance's counts of open
// listens per tenant and principal on the same subject, so that a
// tenant's quota holds across the instances within a small slack, each
// instance falling back to a local share while NATS is unreachable: see
// the cluster package documentation, Quotas, and docs/quotas.md.
package natsbridge
