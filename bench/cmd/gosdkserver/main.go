// Command gosdkserver is the benchmark's go-sdk baseline: a plain server
// built only on the official Go MCP SDK (github.com/modelcontextprotocol/go-sdk
// v1.8.0), with the same tools and capabilities as examples/server
// (examples/fixture, the one go-sdk fixture of the repository). It serves MCP 2026-07-28 over Streamable HTTP
// in stateless mode and answers subscriptions/listen (SEP-2575) with the
// SDK's own built-in implementation.
//
//	gosdkserver [-addr 127.0.0.1:8090] [-lifetime 0] [-quiet] [-pprof]
//
// Once the listener is bound it prints exactly one line
//
//	listening on http://ADDR/mcp
//
// to stdout.
package main

import (
	"flag"
	"log/slog"
	"net/http"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/bench/internal/baseline"
	"github.com/mcplisten/listen/examples/fixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	lifetime := flag.Duration("lifetime", 0, "exit by itself after this long (0: run until signalled)")
	quiet := flag.Bool("quiet", true, "suppress the SDK's info logging")
	profile := flag.Bool("pprof", false, "serve net/http/pprof at /debug/pprof/")
	flag.Parse()

	logLevel := slog.LevelInfo
	if *quiet {
		logLevel = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))

	server := newServer(logger)
	handler := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true},
	)
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	if *profile {
		baseline.Debug(mux)
	}
	baseline.Main(*addr, *lifetime, mux, nil)
}

// newServer builds the plain go-sdk server: the shared fixture, with the
// SDK's own list-change and resource-update notifications.
func newServer(logger *slog.Logger) *mcp.Server {
	return fixture.New(fixture.Options{Name: "gosdkserver", Version: "1.8.0", Logger: logger})
}
