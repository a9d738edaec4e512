// Package listentest provides test doubles for code built on package
// listen, in the manner of net/http/httptest: a channel-backed Source whose
// streams the test drives (Send, End, Fail) and inspects (Nexts, Closed,
// Reason; the Source's Opened and Closed tell which streams opened and
// ended, in order), SourceFunc, which adapts a function to listen.Source,
// and an SSEReader for the messages of a listen served over Streamable
// HTTP (ReadMessages reads a whole answer).
//
// The Source keeps every contract of listen.Source and listen.Stream: Open
// accepts the supported filter (or what Accept picks), unless the test makes
// it block or fail (BeforeOpen, Gate, OpenErr), Next blocks until the
// test sends something or the stream is closed, Close releases a blocked
// Next with listen.ErrClosed, and only the first Close counts (later ones
// are recorded but change nothing).
//
// The package starts no goroutine: Open, Next and Close run on their
// callers' goroutines, and the test's calls (Send, End, Fail) never block.
package listentest
