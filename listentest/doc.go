// Package listentest provides test doubles for code built on package
// listen, in the manner of net/http/httptest: a channel-backed Source whose
// streams the test drives (Send, End, Fail) and inspects (Nexts, Closed,
// Reason; the Source's Opened and Closed tell which streams opened and
// ended, in order), an SSE reader for the messages of a listen served over
// Streamable HTTP (and ReadMessages for a whole answer), a PipeListener
// that carries HTTP over net.Pipe, so that a server and its clients run
// inside a testing/synctest bubble, a loopback TCP Proxy that a test cuts
// to partition the clients of a broker (or stalls, for a silent drop), ProcessCPU, the process's CPU time,
// for benchmarks on a shared machine, SourceFunc, which adapts a function
// to listen.Source, a LogBuffer that collects a logger's output, AckFor,
// the acknowledgement narrowing gives a listen asking for everything, and
// Recv, which fails the test if a channel's next value does not come in time.
//
// The Source keeps every contract of listen.Source and listen.Stream: Open
// accepts the supported filter (or what Accept picks), unless the test makes
// it block or fail (BeforeOpen, Gate, OpenErr), Next blocks until the
// test sends something or the stream is closed, Close releases a blocked
// Next with listen.ErrClosed, and only the first Close counts (later ones
// are recorded but change nothing).
//
// The package starts no goroutine but the Proxy's (see there): Open, Next
// and Close run on their callers' goroutines, and the test's calls (Send,
// End, Fail) never block; PipeListener's Accept and Dial block until they
// meet (or Close, or the Dial's context).
package listentest
