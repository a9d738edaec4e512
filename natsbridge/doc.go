// Package natsbridge carries subscriptions/listen events between the
// instances of one MCP server over NATS: each instance keeps its own
// hub.Hub (its listen streams are opened on it, for example through
// streamhttp), and a Bridge joins that hub to a NATS subject, so that a
// change published on any instance reaches the matching listeners on every
// instance, exactly once each, in the order it was published.
//
//	h, _ := hub.New(hub.Options{})
//	br, err := natsbridge.Connect(nats.DefaultURL, h, natsbridge.Options{},
//		nats.UserCredentials("instance.creds")) // nats.go's own options
//	defer br.Close()
//	listens, err := streamhttp.New(h, streamhttp.Options{...})
//	http.Handle("/mcp", listens)
//	br.ToolsListChanged()                // every instance's tools listeners
//	br.ResourceUpdated("file:///a.txt") // every listener watching file:///a.txt
//
// Or join a connection you already have with New(nc, h, opts).
//
// # Delivery
//
// Bridge.Publish delivers the event to the local hub, then publishes it
// once on the subject Options.Prefix + ".events" (default
// "mcp.listen.events"). Every bridge subscribed there delivers what it
// receives to its own hub, except its own messages: each message carries
// its bridge's random instance id (Bridge.ID), and a bridge ignores its
// own (Stats.Echoes). So an event reaches each local listener once, from
// the local publish, and each remote listener once, from NATS. Publish the
// event through the bridge only: publishing the same change on the hub as
// well would deliver it twice locally.
//
// Order: NATS keeps the order of the messages one connection publishes on
// one subject, a bridge numbers and hands its messages to nats.go in
// Publish order (under a lock), and each bridge delivers what it receives
// from one goroutine, in arrival order. So Publish calls ordered by
// happens-before on one bridge reach every listener, local and remote, in
// that order. Events of different bridges, or concurrent Publish calls,
// have no defined relative order.
//
// # At most once, and resynchronisation
//
// NATS core is at-most-once: a message published while a subscriber is
// disconnected from the broker, or that a subscriber cannot take in time,
// is gone. The notifications carried here are invalidation hints
// (list_changed: "fetch the list again"; resources/updated: "read the
// resource again"), so a lost hint is repaired by telling the listeners to
// refetch. A bridge does that, publishing locally the list change kinds of
// Options.Resync (default: tools, prompts and resources) and, with
// Options.ResyncURIs, a resources/updated per URI:
//
//   - after its connection to NATS is re-established (ResyncReconnect),
//     once a round trip shows the server has the re-sent subscription:
//     whatever is published after the resync reaches the bridge, and
//     whatever was published during the outage is covered;
//   - after it finds messages of another instance missing
//     (ResyncLoss): every message carries its bridge's sequence number, and
//     a gap (Stats.Gaps) means lost messages, for instance over a broken
//     route inside a NATS cluster; also when nats.go dropped messages over
//     the subscription's pending limits (Drops.SlowConsumer). Loss resyncs
//     are at most one per Options.ResyncInterval, and reach the listeners
//     after the event whose sequence number revealed the gap;
//   - when the application calls Bridge.Resync (ResyncManual).
//
// After a reconnect a bridge also publishes a small sync message carrying
// its next sequence number. What it published while cut off and could not
// hand to NATS then shows up as a gap at the other instances, which
// resynchronise their own listeners; what nats.go buffered meanwhile is
// delivered normally.
//
// So no listener keeps a stale view without being told. A listener may
// receive a resync hint it did not strictly need, or, rarely, two for one
// outage; hints are idempotent. A listen opened while the bridge is
// disconnected learns of remote changes from the resync that follows the
// reconnect.
//
// # Publishing while disconnected
//
// Publish always delivers to the local hub first, so local listeners are
// served whatever the state of NATS. Then:
//
//   - while nats.go reconnects it buffers the message (up to
//     nats.ReconnectBufSize, 8 MiB by default) and sends it after the
//     reconnect: it counts as published (Stats.Published), and reaches the
//     instances subscribed by then (the others resynchronise anyway);
//   - when nats.go refuses it (buffer full or disabled, connection closed),
//     Publish still returns the local report and a nil error: the failure
//     is counted (Stats.PublishErrors) and reported to Hooks.OnPublishOut,
//     and the other instances learn of it through the gap after the
//     reconnect.
//
// Publish returns an error only when it published nothing at all: an
// invalid event (the core's validation error), a payload that does not
// encode as JSON (ErrEncode), an envelope over the size limit
// (ErrTooLarge), or a closed bridge (ErrClosed).
//
// # The envelope
//
// Each message is one JSON object, version 1:
//
//	{"v":1,"o":"<bridge id>","n":<sequence>,"k":"<kind>", ...}
//
// with k one of tools, prompts, resources (the list changes), updated
// (resources/updated, with "u": the URI), ext (an extension event, with
// "x": the extension id, "s": the selector, "d": the payload) or sync (no
// event). "p" holds an event's Params and "m" its Metadata. Members are
// omitted when empty. Params, metadata and selectors are written by the
// core's JSON encoder. A received event's params and metadata hold their
// values as json.RawMessage (an object under params "_meta" as a map of
// them, for the core to merge), which the core writes as they are: a
// remote stream renders an event byte for byte as the local one (1.0 stays
// 1.0). Selectors are read with json.Number. The payload is written with
// encoding/json and read back as a generic JSON value, or by
// Options.DecodePayload. Unknown members are ignored; an incompatible
// change gets a new version.
//
// A message received on the subject that is larger than
// Options.MaxMessageBytes, that is not a version 1 envelope, that comes
// from another version, or whose event fails listen.Event.Validate is
// dropped and counted (Stats.Dropped, Hooks.OnDrop); it never stops the
// bridge. With Options.AuthKeys, so is a message without a valid signature
// (checked first, before decoding) or a replayed one. The reserved _meta
// keys of a received event are removed (see Trust model).
//
// # Trust model
//
// A bridge does not authenticate publishers by itself: whoever can publish
// on the subject speaks for the MCP server to every listener of every
// instance. NATS permissions must restrict that: give the instances their
// own NATS user (or account) allowed to publish and subscribe on
// Prefix + ".events", and let no other user publish there (nor subscribe:
// the events tell which resources change). README.md shows such a
// configuration, which a test runs; an MCP server alone in its own NATS
// account is isolated from the other accounts by default.
//
// Without envelope authentication (Options.AuthKeys nil), a publisher on
// the subject that is not a bridge of this server (a forging peer) can:
//
//   - deliver any valid event to every listener whose filter selects it:
//     list changes, resources/updated for any URI, extension events with any
//     selector and payload (the extension's shaper decides what they
//     become), with any extra params and any non-reserved _meta keys;
//   - speak as any instance (origins are on the wire) and forge sequence
//     numbers or sync messages: a forged gap makes the bridges
//     resynchronise their listeners (at most once per ResyncInterval), a
//     forged high number hides the next real gap of that instance;
//   - flood the subject: each message costs a receiver its decoding (up to
//     MaxMessageBytes), and past the pending limits nats.go drops messages,
//     genuine ones too, after which the bridge resynchronises.
//
// It cannot, even so:
//
//   - set a _meta key the MCP specification reserves: a bridge removes
//     every such key (ReservedMetaKey: io.modelcontextprotocol/serverInfo,
//     io.modelcontextprotocol/subscriptionId, dev.mcp/..., any case) from
//     the metadata and the params _meta of every event it receives, before
//     its hub sees it. That is a sanitisation, not a drop: the rest of the
//     event is delivered, and Stats.Sanitised and ReceiveInfo.Stripped count
//     it. (The core sets the subscription id last in any case.) An extension
//     whose notifications need a reserved key sets it in its shaper, which
//     runs on the receiving instance; a shaper should not copy _meta out of
//     a payload that came over NATS;
//   - reach a listener whose filter does not select the event, or a client
//     that did not negotiate the event's extension;
//   - put on a stream what the core would not send for a local event: the
//     event is validated (listen.Event.Validate) and shaped by the
//     receiving server;
//   - send more than MaxMessageBytes, stop a bridge, or make it wait for a
//     listener.
//
// With Options.AuthKeys, a publisher that holds none of the keys can no
// longer deliver anything, nor cause a resync through sequence numbers or
// sync messages: its messages are dropped before they are decoded
// (Drops.Unauthenticated), and a verbatim copy of a signed message, which
// a peer that can read the subject may capture and publish again, is
// dropped once its origin's number has passed it (Drops.Replayed). It can
// still:
//
//   - flood the subject: each message then costs a receiver one HMAC per
//     key before the drop (see Benchmarks), and an overflow of the pending
//     limits still ends in a resync;
//   - replay, once, a signed message of an origin the receiver has not heard
//     from yet (an old message of an instance that has stopped, or of one
//     that has not published since the receiver started): a duplicate hint,
//     and at most one resync if that instance publishes again;
//   - read the events if it may subscribe: signing is not encryption. Use
//     subscribe permissions, and TLS between NATS and its clients.
//
// A holder of an accepted key is trusted like an instance. Give the keys
// to the instances of one MCP server only, and a different key to each MCP
// server (each Prefix): the signature covers the subject, so a message
// signed for one prefix is refused on another.
//
// # Authentication and the envelope version
//
// The signature travels in a NATS message header (AuthHeader), outside the
// envelope: authentication does not change the envelope, which stays
// version 1, and does not depend on its version. A bridge without AuthKeys
// ignores the header, so it accepts signed messages as before; a bridge
// with AuthKeys drops every unsigned message, whatever its version. Turning
// authentication on in a running deployment is therefore seamless in one
// direction only: while some instances have keys and others do not, the
// events published on the latter do not reach the listeners of the former,
// and nothing tells those listeners. Once every instance has its keys,
// call Bridge.Resync on each (or restart them all together). Key rotation,
// with a list of accepted keys, loses nothing (see Options.AuthKeys).
//
// # Benchmarks
//
// What authentication costs per event, from
//
//	go test -run '^$' -bench 'AuthSign|AuthVerify|Receive' -benchmem -count 5 ./natsbridge/
//	go test -run '^$' -bench 'Publish|CrossInstance' -benchmem -count 10 ./natsbridge/
//
// on a 2-core VM shared with other work (load average 11 to 16 during the
// runs). Figures are medians of the process CPU time per operation
// (cpu-ns/op or cpu-µs/event, steadier than elapsed time on a busy
// machine), with the range over the runs, for three envelopes: a list
// change (58 bytes), a resource update with some metadata (222 bytes) and
// a 4 KiB extension event.
//
//   - Signing (HMAC-SHA256 and base64): 343 ns [321–375], 415 ns
//     [399–418], 3.2 µs [3.1–3.3]; one 48-byte allocation.
//   - Verifying: 308 ns [286–316], 387 ns [379–505], 3.1 µs [2.9–3.3]; no
//     allocation. Each further key tried costs as much again: a message
//     signed with the second of two keys (a rotation), or with neither (a
//     forgery), 545–558 ns, 703–732 ns, 5.9 µs.
//   - A bridge receiving a message (nats.go's decoding of the header, then
//     the bridge's delivery path, into a hub without listeners): list
//     change 3.0 µs [2.8–3.7] without authentication, 4.5 µs [4.2–4.7]
//     with it (11 and 15 allocations); resource update 9.7 µs [9.2–11.0]
//     and 11.7 µs [11.1–14.2]; 4 KiB event 102 µs [96–114] and 101 µs
//     [93–104]. Beyond the HMAC, the difference is nats.go's header
//     decoding. A forged message is dropped after the header decoding
//     and the HMACs, before the envelope is decoded.
//   - Publish on the publishing instance (which also receives its own
//     message back and checks its signature): 3.0 µs [2.8–3.2] without,
//     6.1 µs [5.3–6.5] with authentication.
//   - The whole pipeline in one process (Publish on instance A, the NATS
//     server, B's bridge and hub, a real HTTP listen stream on B), at full
//     rate: 10.9 µs [10.0–13.3] of CPU per event without, 13.0 µs
//     [11.9–15.3] with authentication (21 and 32 allocations); latency p50
//     46.7 µs [43.6–53.9] and 50.2 µs [47.3–52.2], one event at a time.
//
// # Goroutines
//
// A Bridge owns two goroutines, both started by New and both ended by Close:
//
//   - the delivery goroutine (nats.go's goroutine of the bridge's
//     subscription) decodes each message and publishes its event to the
//     hub, one message at a time, in arrival order. It never blocks on a
//     listener: hub.Publish does not wait. Messages waiting for it are
//     bounded by Options.PendingMessages and PendingBytes;
//   - the control goroutine follows the connection's status (through
//     nats.Conn.StatusChanged: no handler of yours is replaced), the
//     subscription's slow consumer reports and the losses the delivery
//     goroutine finds, and runs the resynchronisations.
//
// Publish and Resync run in the caller's goroutine. Close stops the control
// goroutine, unsubscribes, waits for the delivery goroutine to finish the
// message in hand, and closes the connection only if Connect made it.
// Hooks run on the goroutine that caused them (see Hooks); a hook must not
// call Close. All methods are safe for concurrent use.
package natsbridge
