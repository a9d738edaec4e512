// Command floorserver is the benchmark's floor: the cheapest server we know
// how to write that does exactly the work listenbench measures, serving MCP
// 2026-07-28 subscriptions/listen (SEP-2575) over loopback HTTP/1.1. It is a
// yardstick for examples/server, not a server for users: it understands only
// what the benchmark sends (subscriptions/listen with toolsListChanged and
// resourceSubscriptions, and tools/call of test_trigger_tool_change and
// trigger_resource_update), does no capability negotiation beyond that, and
// sends no keep-alives.
//
//	floorserver [-addr 127.0.0.1:8091] [-lifetime 0] [-pprof]
//
// Once the listener is bound it prints exactly one line
//
//	listening on http://ADDR/mcp
//
// to stdout.
//
// # How a stream costs nothing while idle
//
// net/http parses the listen request; the handler then hijacks the
// connection, duplicates the socket's descriptor, makes it non-blocking and
// lets net/http's connection go (the duplicate keeps the socket open). The
// stream goes to one of a fixed set of writer loops (GOMAXPROCS of
// them), which writes the response header and the acknowledgement
// first, in the order of its other work: a notification published after the
// client could have seen the acknowledgement reaches it. From then on a
// stream is a descriptor, its JSON-RPC id and its filter: no goroutine,
// timer, channel or lock of its own.
//
// A trigger's notification is encoded once, as the bytes before and after
// the subscription id, and handed to every loop; the tool call returns
// without waiting for the fan-out. Each loop copies each matching stream's id
// between the two parts in one reused buffer and does one non-blocking
// write(2) per stream. A stream whose socket is full (EAGAIN, or a partial
// write) goes to a slow path of its own: a goroutine with a bounded queue
// that writes through Go's poller with a per-write deadline. A stream whose
// queue overflows, or whose write misses its deadline, is closed; one whose
// queue empties goes back to its loop. A stalled client therefore never
// blocks a loop. One epoll instance, watched by one goroutine, notices the
// clients that hang up (EPOLLRDHUP) and tells the owning loop to close them.
//
// # Goroutines
//
// The engine owns its writer loops, its epoll watcher and the slow-path
// goroutines; Close ends all of them and waits. net/http owns a listen
// request's goroutine only until the hijack. The process drains nothing: on
// SIGINT, SIGTERM or -lifetime it closes every stream and exits.
//
// The fast path needs epoll and raw non-blocking writes: the command is
// Linux-only (on other systems it says so and exits).
package main
