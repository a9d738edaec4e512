// Package cluster is the part of a bridge between the instances of one MCP
// server that does not depend on the broker: the wire envelope, its
// numbering, timestamps and signatures, replay protection, gap detection
// and the resynchronisation of the listeners. The nested modules
// natsbridge (NATS) and redisbridge (Redis) are built on it and share its
// Options (with the hooks and the logger) and Stats; start there. This
// package is for writing a bridge over another broker.
//
// A bridge makes a Node for the instance's hub.Hub with a Transport (a
// scope and a Send function), hands it every message its broker delivers
// (Node.Receive) and tells it when the connection comes back
// (Node.Reconnected). The node joins the hub as its relay, so every
// Publish reaches the other instances; it delivers theirs locally.
//
// # Goroutines
//
// A Node starts no goroutine of its own but, with Options.Quota, the
// quota's reporter, from NewNode to Close. The relay runs in the
// publisher's goroutine; Receive in the bridge's delivery goroutine, one
// message at a time; a throttled resync on a timer's goroutine. Close
// leaves the hub and waits for a running timer. Hooks run on the goroutine
// that caused them and must not call Close. All methods are safe for
// concurrent use, except Receive (one goroutine at a time).
//
// # Envelope
//
// Each message is one JSON object, version 1,
// {"v":1,"o":"<origin>","n":<sequence>,"t":<unix ms>,"k":"<kind>", ...}:
// "o" is the sending node's random id (a new one at every start), "n" its
// sequence number from 1, "t" its clock in Unix milliseconds (never
// decreasing), "k" one of tools, prompts, resources, updated (with "u":
// the URI), ext (with "x", "s", "d": the extension id, selector, payload),
// sync (no event: announces the sender's number) or quota (see Quotas).
// "p" holds an event's Params, "m" its Metadata and "a" its Scope. Members
// are omitted when empty; unknown members are ignored; an incompatible
// change gets a new version. Params, metadata and selectors are read back
// as json.RawMessage, so a remote stream renders an event byte for byte
// as the local one.
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
// (io.modelcontextprotocol/..., dev.mcp/...) from every event it receives,
// validates it, and never reaches a listener whose filter does not select
// it. With
// Options.AuthKeys every message is signed: Message.Sig is the
// HMAC-SHA256, under the first key, of the scope, a newline and the
// envelope, in unpadded base64url; a receiver checks it against each key
// (constant time) before decoding, and drops unsigned or forged messages.
// A holder of a key is trusted like an instance. Every message a node
// drops, forged, replayed, stale or oversized, is counted (Stats.Dropped,
// Stats.DroppedBytes) and reported to Options.OnDrop; Options.Logger logs
// them at a bounded rate (a line per 10 s).
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
// A replayer can at most cause a resync per ResyncInterval; clocks must
// agree within Freshness.
//
// # Quotas
//
// A Quota holds each tenant, and each principal within its tenant, to a
// quota of open listens across the instances (QuotaOptions; both keys are
// functions of the listen's request): the server calls its Acquire for
// every listen (listen.Options.Quota) and the bridge carries the
// instances' counts (Options.Quota) in messages of kind "quota", numbered,
// stamped and signed like events. A refusal is -32603 "Subscription quota
// exceeded for this tenant" (or "... for this principal"), wrapping
// listen.ErrOverQuota (HTTP 429 with Retry-After). The deployment holds a
// key with quota Q to at most Q + A listens, A being the key's listens the
// other instances admitted within QuotaOptions.Interval plus the broker's
// delivery time; while the broker is unreachable each instance admits up
// to its local share max(1, ⌊Q/n⌋). The details: docs/quotas.md.
package cluster
