// Package redisbridge carries subscriptions/listen events between the
// instances of one MCP server over Redis: each instance keeps its own
// hub.Hub (its listen streams are opened on it, for example through
// streamhttp or gosdk), and a Bridge joins that hub to one Redis stream,
// so that a change published on any instance's hub reaches the matching
// listeners on every instance, once each, in the order it was published.
//
//	h, _ := hub.New(hub.Options{})
//	br, err := redisbridge.Connect("redis://mcp-instance:secret@redis.internal:6379", h, redisbridge.Options{})
//	defer br.Close()
//	listens, err := streamhttp.New(listen.NewServer(h, opts), streamhttp.Options{})
//	h.ToolsListChanged()                // every instance's tools listeners
//	h.ResourceUpdated("file:///a.txt") // every listener watching it, on every instance
//
// Or give New your go-redis options (TLS, credentials provider, dialer).
// The bridge joins the hub as its relay, as natsbridge
// does, and shares with it package cluster (the envelope, signatures,
// replay protection, resynchronisation, Options and Stats), whose
// documentation gives the delivery semantics and the trust model.
//
// # Goroutines
//
// A Bridge owns two goroutines, both started by New and both ended by
// Close:
//
//   - the reader goroutine reads the stream (a script, at most 256 entries
//     and Options.ReadBytes at a time; once it has caught up, a blocking
//     XREAD of one entry, up to 5 s) and hands each entry to the node
//     (cluster.Node.Receive), which delivers its event to the hub, one at a
//     time, in stream order; it never blocks on a listener. It reconnects
//     with a backoff (50 ms to 2 s) and runs the reconnect resync;
//   - the writer goroutine appends the outbox to the stream.
//
// The relay runs in the goroutine of the hub's Publish (it only queues).
// Close leaves the hub, lets the writer append what is queued (up to 2 s),
// then closes both connections and waits for both goroutines. Hooks must
// not call Close. All methods are safe for concurrent use.
//
// # One stream for delivery and recovery
//
// Every instance appends its events to one Redis stream (XADD, trimmed to
// about Options.StreamLength entries) and reads it from the last entry it
// read (a blocking XREAD once it has caught up): the stream is both the
// live fan-out and the record a bridge catches up from, one total order of
// all the instances' events (a pub/sub channel beside it would carry every
// event twice). A bridge whose connection comes back reads on if the
// stream still holds the last entry it read (no listener misses anything),
// else resynchronises its listeners (Redis restarted, or trimmed past it). Gaps in another instance's numbers (its own
// writes that failed) resynchronise too.
//
// Publishing never waits for Redis: the envelope is queued in the outbox
// (Options.OutboxBytes, 8 MiB), appended by the writer in order. While Redis cannot
// be reached the outbox holds the events and sends them once it answers;
// a batch in flight on a connection that breaks is counted as lost
// (Stats.PublishErrors), not sent again, so no entry is ever appended
// twice, and a sync message then shows the gap to the others. A full
// outbox serves the local listeners only, counted the same way.
//
// The bridge opens two connections of its own (reader, writer), with no
// go-redis retries. It needs Redis 5 or later (streams, Lua scripts); the
// ACL a user needs is XADD, XREAD, XRANGE and XINFO STREAM on the stream
// key, EVAL and EVALSHA (the reader's two scripts run XRANGE and XINFO
// STREAM), plus PING, HELLO and CLIENT SETNAME (it names its connections
// mcplisten-redisbridge): README.md shows such an ACL, which a test runs.
//
// # Authentication and permissions
//
// With Options.AuthKeys each entry carries its signature in the field "s"
// beside the envelope "d"; the stamps and numbers it covers make a
// captured entry useless, also to an instance that restarted (see cluster,
// Replay protection). Whoever can append to the stream speaks for the
// server: give the instances their own Redis user restricted to the
// stream's key, and let no other user touch it.
//
// # Floods
//
// Redis bounds an entry only by its proto-max-bulk-len (512 MiB a field,
// by default), not by Options.MaxMessageBytes, and the ACL lets whoever
// may append to the stream append as much as Redis takes. The reader
// bounds what that makes an instance hold: it fetches entries with a Lua
// script that returns at most Options.ReadBytes (default
// 4 MiB) of envelopes and signatures at a time and only the fields "d" and
// "s", and that skips, without sending it, an entry whose envelope is
// larger than MaxMessageBytes (or whose "s" is longer than 256 bytes): the
// bridge counts it as cluster.Drops.TooLarge, with its size in
// cluster.DropInfo.Bytes. Its starting position and the reconnect check
// use another script, which sends no entry. One entry is still read
// whole: the one a reader that has caught up waits for (XREAD BLOCK COUNT
// 1: Redis has no blocking read of less than a whole entry). Lower
// proto-max-bulk-len (1 MiB is the least Redis accepts) to bound that
// one, and Redis's own memory (figures: docs/performance.md).
//
// # Quotas
//
// With Options.Quota (a cluster.Quota) the bridge carries the instance's
// counts of open listens on the same stream (docs/quotas.md): under churn
// up to one entry per QuotaOptions.Interval and one every TTL/3, which
// shortens how far back (StreamLength entries) a bridge can catch up.
package redisbridge
