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
//     name its URI, found in a map from URI to listeners;
//   - an extension event goes to the listeners whose filter contains its
//     selector (selector.SubsetOf(filter)); only listeners having every key
//     of the selector are checked.
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
// # Ending
//
// A stream's Close (called by the subscription's guard, exactly once)
// releases a blocked Next with [listen.ErrClosed], frees the queue and
// removes the listener from every index. Complete ends every listener
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
//   - Open, Close and Complete take the index's write lock briefly. No lock
//     is held while a hook runs, so hooks may call back into the hub.
//   - Order: publications ordered by happens-before (for example, made one
//     after another by one goroutine) reach every listener in that order.
//     Concurrent publications have no defined relative order and two
//     listeners may see them in different orders.
//   - A stream has one puller: a second Next while one is blocked returns
//     ErrPullPending. Close may run concurrently with a blocked Next and
//     releases it. Close is idempotent; Next after Close returns
//     [listen.ErrClosed].
//   - Events are shared, not copied, between listeners: the maps in a
//     published Event must not be modified afterwards.
//
// # Instrumentation
//
// [Options.Hooks] receives opens, publications, overflows, completions and
// closes, each with its measurements, and each
// publication with the duration of its fan-out (PublishInfo.Duration).
// [SlogHooks] adapts them to log/slog; [NopHooks] is the embeddable no-op.
// The nested module github.com/mcplisten/listen/otel turns them into
// OpenTelemetry metrics.
package hub
