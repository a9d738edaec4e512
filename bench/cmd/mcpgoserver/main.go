// Command mcpgoserver is the benchmark's mcp-go baseline: a plain server
// built only on mark3labs/mcp-go (the release the bench module requires),
// with the same tools and capabilities as examples/mcpgo
// (bench/internal/mcpgofixture). It serves MCP over
// Streamable HTTP with mcp-go's StreamableHTTPServer (both protocol eras)
// and answers subscriptions/listen with mcp-go's own implementation.
//
//	mcpgoserver [-addr 127.0.0.1:8091] [-lifetime 0] [-quiet] [-pprof]
//
// Once the listener is bound it prints exactly one line
//
//	listening on http://ADDR/mcp
//
// to stdout.
package main

import (
	"flag"
	"net/http"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/bench/internal/baseline"
	fixture "github.com/mcplisten/listen/bench/internal/mcpgofixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "address to listen on")
	lifetime := flag.Duration("lifetime", 0, "exit by itself after this long (0: run until signalled)")
	_ = flag.Bool("quiet", true, "accepted for the benchmark harness (mcp-go logs warnings only here)")
	profile := flag.Bool("pprof", false, "serve net/http/pprof at /debug/pprof/")
	flag.Parse()

	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(fixture.New("mcpgoserver", "1.2.1")))
	if *profile {
		baseline.Debug(mux)
	}
	// mcp-go's listens never end by themselves: ordinary requests get a
	// grace to finish, then whatever is still open is dropped.
	baseline.Main(*addr, *lifetime, mux, nil)
}
