// Package testkit holds the repository's own test helpers, for the tests
// of the root module's packages: Recv, which fails a test if a channel's
// next value does not come in time; LogBuffer, which collects a logger's
// output; PipeListener, which carries HTTP over net.Pipe so that a server
// and its clients run inside a testing/synctest bubble; Proxy, a loopback
// TCP proxy a test cuts, restores or stalls; and ProcessCPU, the process's
// CPU time, for benchmarks on a shared machine.
//
// The nested modules do not import it (a module imports no other module's
// internal packages): each keeps the little it needs in its own test files.
//
// Only the Proxy starts goroutines (see there); PipeListener's Accept and
// Dial block until they meet (or Close, or the Dial's context).
package testkit
