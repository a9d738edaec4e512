// Package hub is an in-process broadcast [listen.Source]: the Hub. Open
// subscriptions on it with [listen.Open], publish events with
// [Hub.Publish] (or the helpers [Hub.ToolsListChanged],
// [Hub.PromptsListChanged], [Hub.ResourcesListChanged] and
// [Hub.ResourceUpdated]), and every subscription whose accepted filter
// selects an event receives it, in order.
//
//	h, _ := hub.New(hub.Options{})             // MaxBuffer 100, DropOldest
//	sub, err := listen.Open(ctx, h, req, opts)  // the hub accepts the supported filter verbatim
//	go sub.Serve(ctx, sink)
//	h.ToolsListChanged()                        // reaches every toolsListChanged listener
//	h.ResourceUpdated("file:///a.txt")          // reaches the listeners watching that URI
//	h.Shutdown(ctx)                             // end every stream gracefully, wait for their close
//
// # Listeners and selection
//
// Each stream the hub opens is a listener: its accepted filter, a bounded
// FIFO queue, and room for one blocked Next. Publish selects listeners
// through an index, never by scanning them all:
//
//   - a list change goes to the listeners whose filter has its key
//     (toolsListChanged, promptsListChanged, resourcesListChanged) true;
//   - a resource update goes to the listeners whose resourceSubscriptions
//     name its URI, found in a map from URI to listeners, and to the folder
//     listeners one of whose URIs covers it (see Folder listeners);
//   - an extension event goes to the listeners whose filter's extension
//     keys contain its selector (selector.SubsetOf); only listeners having
//     every key of the selector are checked.
//
// A selected listener with a blocked Next receives the event directly
// (Report.Delivered); otherwise the event is queued (Report.Buffered). A full
// queue applies the hub's Overflow policy: DropOldest (the default) drops
// the oldest queued event, DropNewest the new one; either way the drop is
// counted in Report.Dropped and Stats.Dropped and reported to
// Hooks.OnOverflow. A queue's memory is allocated when events are first
// queued and grows with the backlog up to MaxBuffer, so an idle listener
// holds no buffer.
//
// # Folder listeners
//
// A listener whose request names a sub-resource rule
// ([listen.Request.SubResources], which [listen.Open] sets from
// [listen.Options.SubResources]) is a folder listener: its URIs also cover
// their sub-resources, by that rule (the listen package documentation,
// Sub-resources), so one on file:///project/ receives
// file:///project/src/main.go. Nothing is set on the hub, and the listeners
// opened without a rule match exactly, on the same hub.
//
// Folder listeners sit in a prefix index: a map from the normal form of each
// of their URIs (scheme and host lower-cased, percent-encodings
// normalised) to listeners. A resource update looks up its own normal form
// and each URI that covers it: its path's prefixes at '/' boundaries
// (file:///a/b/c.txt looks up file:///a/b/, file:///a/b, file:///a/,
// file:///a, file:/// and file://), so at most 2 x (path depth) + 2 entries,
// whatever the number of listeners. A URI with a "." or ".." segment looks
// up only itself. These URIs form a chain (each covers the longer ones), and
// a listener is indexed only under those of its URIs that none of its
// others covers, so it receives an update once; finding those takes time
// linear in the bytes of its URIs, however many '/' they hold (a folder
// listener's URIs have at most [listen.Options.MaxURISegments] segments,
// 128 by default, which listen.Open checks). The exact-match path costs
// nothing more while no folder listener is open (one atomic load).
//
// A rule with a Folders function ([listen.SubResources].Folders) has an
// index of its own (one per rule value): for the URIs it claims, the hub
// looks up what it returns instead of the path's prefixes, and removes
// duplicate targets.
//
// The event delivered is the one published: its URI is not normalised. The
// subscription shapes it and applies its CanRead to it (a folder listener
// never receives a sub-resource its principal may not read), so
// Report.Matched counts the listeners selected, some of which may still
// drop it.
//
// Measured on 2026-12-01 (2-core machine shared with other builds, load
// average 8 to 18: read the ratios more than the absolute figures; medians
// [min–max], 5 runs, go test ./hub/ -run '^$' -bench Folders -benchmem
// -count 5), one resource update published to n listeners spread over n/10
// folder subscriptions at depths 1 to 8 (BenchmarkPublishResourceUpdatedFolders):
//
//	listeners  folders  update                   ns/op                  listeners selected
//	100,000    10,000   a file in a folder       19,537 [9,990–30,195]  79.0
//	100,000    10,000   depth 8, nobody's           547 [450–1,188]      0
//	100,000    10,000   an exact listener's URI     403 [297–505]        1
//	 10,000     1,000   a file in a folder        3,384 [3,346–6,735]   55.8
//	 10,000     1,000   depth 8, nobody's           395 [356–651]        0
//	 10,000     1,000   an exact listener's URI     295 [281–334]        1
//
// The walk of the index (the "nobody's" rows: 17 lookups) stays under a
// microsecond at both sizes; a delivered update costs what its deliveries
// cost (about 250 ns per selected listener at 100,000, cache misses and
// queue growth included). The exact-match benchmark
// (BenchmarkPublishResourceUpdated, no folder listener open) did not get
// slower: interleaved runs of the code before and after this index, 10
// each, gave per-run ratios after/before with medians 0.99, 0.72 and 0.91
// at 1k, 10k and 100k listeners (rotating URIs), all within the machine's
// noise. Raw outputs: bench/results/hub-folders-bench.md.
//
// # Ending
//
// A stream's Close (called by the subscription's guard, exactly once)
// releases a blocked Next with [listen.ErrClosed], frees the queue and
// removes the listener from every index. Shutdown ends every listener
// gracefully: each hands out what it has queued, then answers
// [listen.ErrClosed], so its subscription writes the completion result and
// closes.
//
// # Concurrency contract
//
// All methods of Hub are safe for concurrent use by any number of
// goroutines, and so are a stream's Next and Close. The hub starts no
// goroutine.
//
//   - Publish runs in the caller's goroutine and never waits for a
//     listener: it copies its targets under a read lock of the index, then
//     takes each target's own lock for a few instructions to hand over,
//     queue or drop. A listener that never pulls costs Publish the same as
//     one that does; its queue stays at most MaxBuffer events.
//   - Open, Close and Shutdown take the index's write lock briefly. No lock
//     is held while a hook runs, so hooks may call back into the hub.
//   - Order: publications ordered by happens-before (for example, made one
//     after another by one goroutine) reach every listener in that order.
//     Concurrent publications have no defined relative order and two
//     listeners may see them in different orders.
//   - A stream has one puller: a second Next while one is blocked returns
//     ErrPullPending. Close may run concurrently with a blocked Next and
//     releases it. Close is idempotent; Next after Close returns
//     [listen.ErrClosed].
//   - A stream is a [listen.NotifyStream] (Serve pulls it without a worker
//     goroutine; streamhttp's fast path serves idle streams without any):
//     the function of SetNotify is called, in the goroutine of the Publish,
//     Shutdown or Close that made an event ready or ended the stream, with
//     no lock of the listener or the hub held.
//   - Events are shared, not copied, between listeners: the maps in a
//     published Event must not be modified afterwards.
//
// # Many instances
//
// A bridge over a broker (the nested modules natsbridge and redisbridge)
// joins the hub as its [Relay] ([Hub.Join]): every Publish then reaches the
// listeners of the other instances too, whoever calls it, and the bridge
// delivers what they publish with [Hub.PublishLocal].
//
// # Instrumentation
//
// [Options.Hooks] receives opens, publications, overflows, shutdowns and
// closes, each with its measurements, and each
// publication with the duration of its fan-out (PublishInfo.Duration).
// [SlogHooks] adapts them to log/slog; [NopHooks] is the embeddable no-op.
// The nested module github.com/mcplisten/listen/otel turns them into
// OpenTelemetry metrics.
package hub
