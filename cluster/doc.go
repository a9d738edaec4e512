// Package cluster is the part of a bridge between the instances of one MCP
// server that does not depend on the broker: the wire envelope, its
// numbering, timestamps and signatures, replay protection, gap detection
// and the resynchronisation of the listeners. The nested modules
// natsbridge (NATS) and redisbridge (Redis) are built on it and share its
// Options (with the hooks and the logger) and Stats; start there. This
// package is for writing a bridge over another broker.
//
// A bridge makes a Node for the instance's hub.Hub with a Transport (the
// scope its messages travel on, and a Send function), hands it every
// message its broker delivers (Node.Receive), and tells it when the
// connection comes back (Node.Reconnected). NewNode joins the node to the
// hub as its relay (hub.Hub.Join), so every Publish on the hub, whoever
// calls it, reaches the other instances; the node delivers theirs with
// hub.Hub.PublishLocal.
//
// # Goroutines
//
// A Node starts no goroutine of its own, except that with Options.Quota
// it runs the quota's reporter from NewNode to Close. Relay (from the hub's Publish)
// runs in the publisher's goroutine; Receive in the bridge's delivery
// goroutine, one message at a time; Reconnected, Dropped and Connection
// in the bridge's; a loss resync in Receive's goroutine, or on a timer's
// goroutine when throttled. Close leaves the hub and waits for a running
// timer. Hooks (Options.OnDrop...) run on the goroutine that caused them
// and must not call Close. All methods are safe for concurrent use, except Receive (one
// goroutine at a time).
//
// # Envelope
//
// Each message is one JSON object, version 1:
//
//	{"v":1,"o":"<origin>","n":<sequence>,"t":<unix ms>,"k":"<kind>", ...}
//
// "o" is the sending node's random id (16 bytes, base64url: a new one at
// every start, the sender's epoch), "n" its sequence number from 1, "t"
// its clock in Unix milliseconds (never decreasing), "k" one of tools,
// prompts, resources (the list changes), updated (resources/updated, with
// "u": the URI), ext (an extension event, with "x": the extension id,
// "s": the selector, "d": the payload) or sync (no event: announces the
// sender's number). "p" holds an event's Params, "m" its Metadata and "a"
// its Scope (listen.Event.Scope: a scoped event reaches only its scope's
// listens on every instance; every instance of a cluster must know "a",
// as all of this version do).
// Members are omitted when empty; unknown members are ignored; an
// incompatible change gets a new version. Params, metadata and selectors
// are written by the core's JSON encoder and read back as json.RawMessage,
// so a remote stream renders an event byte for byte as the local one.
//
// # Delivery
//
// The hub's Publish hands the event to the node before its local fan-out;
// the node numbers it under a lock and calls Send, so one instance's
// publications leave in order. A node ignores its own messages, so an
// event reaches each listener once. Brokers lose messages (a disconnected
// or slow subscriber); the notifications are invalidation hints, so a node
// repairs a loss by telling its listeners to refetch: it publishes locally
// the list changes of Options.Resync (and resources/updated for
// Options.ResyncURIs) after a reconnect, after a gap in an origin's
// numbers (after the event that revealed it, at most one per
// ResyncInterval), after broker-side drops, and on Node.Resync.
//
// # Trust
//
// Whoever can publish on the broker's channel speaks for the server to
// every listener: restrict it with the broker's permissions. Whatever the
// sender, a node removes the _meta keys the MCP specification reserves
// from every event it receives (the keys whose prefix, the part before the
// first "/", has "modelcontextprotocol" or "mcp" as its second
// dot-separated label, in any case: io.modelcontextprotocol/serverInfo,
// dev.mcp/x, but not com.example.mcp/z), validates it, and never reaches a
// listener whose filter does not select it. With
// Options.AuthKeys every message is signed: Message.Sig is the
// HMAC-SHA256, under the first key, of the scope, a newline and the
// envelope, in unpadded base64url; a receiver checks it against each key
// (constant time) before decoding, and drops unsigned or forged messages.
// A holder of a key is trusted like an instance. Every message a node
// drops, forged, replayed, stale or oversized, is counted (Stats.Dropped,
// Stats.DroppedBytes) and reported to Options.OnDrop; Options.Logger logs
// drops at a bounded rate (a line per 10 s), since a forger chooses how
// many there are.
//
// # Replay protection
//
// With AuthKeys a node drops a signed message that is a copy, also after
// it restarts, by three rules on the signed "o", "n" and "t":
//
//   - stale: "t" is missing, or further than Options.Freshness (default
//     30 s) from the receiver's clock;
//   - replayed: "t" is before the receiver started (or last forgot its
//     peers, past 4096 origins). The receiver also resynchronises its
//     listeners (throttled), since it may be a genuine message from an
//     instance whose clock is behind;
//   - replayed: "n" is not above the last number accepted from "o".
//
// So a captured message never reaches a listener twice, before or after a
// restart; a replayer can at most cause a resync per ResyncInterval, and
// only during the first Freshness after a receiver starts. Clocks of the
// instances must agree within Freshness.
//
// # Quotas
//
// A Quota holds each tenant, and each principal within its tenant, to a
// quota of open listens across the instances (QuotaOptions: both keys are
// functions of the listen's request). The server calls its Acquire for
// every listen (listen.Quota) and the instance's bridge carries it
// (Options.Quota). Each instance counts the listens open on it per key;
// its node reports the counts to the others in messages of kind "quota"
// ("q": {"c": {token: count}}, a key named by 12 bytes of its SHA-256,
// base64url; "h": a hello, asking for the others' counts; "b": a bye),
// numbered, stamped and signed like events: the changed counts at most
// once per QuotaOptions.Interval (default 10 ms), all of them every
// TTL/3 (default 1 s). An instance admits a listen when its own count plus
// the counts the others last reported is under the quota and, while other
// instances admit listens of the key too (their count of it rose within
// the last TTL/3; n counts them and this one), when it has admitted fewer
// than ⌈room/n⌉ of them since its own last report, room being what the
// quota left when that report left: the instances that see the same room
// share it instead of each filling it. A refusal is -32603 "Subscription
// quota exceeded for this tenant" (or "... for this principal") and wraps
// listen.ErrOverQuota, which the server answers with 429 and Retry-After.
//
// Slack. A report reaches the others at most Interval + d after the
// change it reports (d: the broker's delivery time), so the deployment
// holds at most Q + A listens of a key with quota Q, where A is the number
// of the key's listens the other instances admitted during the Interval +
// d before the latest admission. Under a rate r of admitted opens spread
// over N instances, A ≈ r × (N−1)/N × (Interval + d): with the defaults,
// 1,000 admitted opens per second over 3 instances and d ≈ 1 ms, about 7.
// Sharing the room only refuses more, so the bound holds with it; in
// practice it keeps the excess far below (docs/quotas.md has the figures),
// at the cost of filling a room a share per Interval. A lost report is
// repaired by the next full one, within TTL/3.
//
// Fallback. While its bridge reports the broker unreachable (a status
// other than Connected, see Options.OnConnection), and once its node is
// closed, an instance admits a listen when its own count is under its
// local share max(1, ⌊Q/n⌋), n counting itself and the instances whose
// reports were live when it lost the broker. With every instance cut off
// the deployment holds at most n × max(1, ⌊Q/n⌋) ≤ max(Q, n) (listens
// open before are not ended). When only some are (a partition), the
// others keep their counts for TTL, then forget them: up to Q plus the
// cut-off instances' shares can then be open. A node's Close tells the
// others (a bye: they forget its counts at once); an instance that stops
// without it is forgotten after TTL (checked every TTL/3), and until then
// its clients' listens, opened again elsewhere, are refused. An instance
// that starts, or reconnects, asks for the others' counts and takes them
// into account once they arrive (about Interval + 2d later; at the latest
// at their next full report); until then it admits as if they held none.
// A node without Options.Quota ignores quota messages; instances of
// earlier versions drop them (Drops.Malformed).
package cluster
