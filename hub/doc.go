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
// # Concurrency contract
//
// All methods of Hub are safe for concurrent use by any number of
// goroutines, and so are a stream's methods. The hub starts no goroutine
// (with DetachDelay, its one timer's function runs in a goroutine of the
// runtime's when it fires, and ends with it).
//
//   - Publish runs in the caller's goroutine and never waits for a
//     listener: it copies its targets under a read lock of the index, then
//     takes each target's own lock for a few instructions. A listener that
//     never pulls costs Publish the same as one that does.
//   - Open, Close and Shutdown take the index's write lock briefly. No lock
//     is held while a hook runs, so hooks may call back into the hub.
//   - Publications ordered by happens-before reach every listener in that
//     order; concurrent ones have no defined relative order.
//   - A stream has one puller: a second Next while one is blocked returns
//     an error. Close may run concurrently with a blocked Next and
//     releases it; Next after Close returns [listen.ErrClosed].
//   - A stream is a [listen.NotifyStream] (Serve pulls it without a worker
//     goroutine; streamhttp's fast path serves idle streams without any):
//     the function of SetNotify is called in the goroutine of the Publish,
//     Shutdown or Close that made an event ready or ended the stream, with
//     no lock of the listener or the hub held.
//   - Events are shared, not copied, between listeners: the maps in a
//     published Event must not be modified afterwards. Publish validates
//     each event once; the subscriptions do not again.
//
// # Listeners and selection
//
// Each stream the hub opens is a listener: a bounded FIFO queue, room for
// one blocked Next, and its place in an index. Publish selects listeners
// through the index, never by scanning them all: a list change goes to the
// listeners whose filter has its key true; a resource update to those
// whose resourceSubscriptions name its URI, and to the folder listeners
// one of whose URIs covers it; an extension event to those whose
// extension keys contain its selector.
//
// A selected listener waiting for an event receives it directly
// (Report.Delivered); otherwise it is queued (Report.Buffered). A full
// queue applies the hub's Overflow policy: DropOldest (the default) drops
// the oldest queued event, DropNewest the new one; either way the drop is
// counted (Report.Dropped, Stats.Dropped, Options.OnOverflow). A queue's
// memory is allocated when events are first queued and grows up to
// MaxBuffer, so an idle listener holds no buffer.
//
// A listener whose request names a sub-resource rule
// ([listen.Request.SubResources], which [listen.Open] sets from
// [listen.Options.SubResources]) is a folder listener: its URIs also cover
// their sub-resources by that rule ([listen.SubResources]), so one on
// file:///project/ receives file:///project/src/main.go. Nothing is set on
// the hub; listeners without a rule match exactly, on the same hub. The
// index of folder listeners costs an update O(path depth) lookups (see
// Hub.Publish). The event delivered is the one published; each
// subscription applies its own CanRead to it, so Report.Matched counts the
// listeners selected, some of which may still drop it.
//
// # Ending
//
// A stream's Close (called by the subscription's guard, exactly once)
// releases a blocked Next with [listen.ErrClosed], frees the queue and
// removes the listener from every index. Shutdown ends every listener
// gracefully: each hands out what it has queued, then answers
// [listen.ErrClosed], so its subscription writes the completion result.
// With the [EndListener] overflow policy, a listener whose queue is full
// ends instead: its pulls answer [listen.ErrFellBehind], which its
// subscription sends as an early ending.
//
// # Scopes, attach and detach
//
// A listener of scopes ([listen.Request.Scopes]) is indexed once more under
// each: a scoped event looks up its scope's listeners only. [Options.OnAttach]
// and [Options.OnDetach] report the first listener watching a URI (a
// [Watch]) and the last leaving it, once each, in order, outside the hub's
// locks.
//
// # Many instances and instrumentation
//
// A bridge over a broker (natsbridge, redisbridge: a cluster.Node) joins
// the hub as its one relay ([ErrRelayJoined]): every Publish then reaches
// the other instances' listeners too, and the bridge delivers what they
// publish to the local listeners only. [Options.Logger] logs opens,
// publications, overflows, shutdowns and closes, and the On* fields of
// [Options] are told of them (a publication with the duration of its
// fan-out); the nested module otel turns them into
// OpenTelemetry metrics.
package hub
