// Command gosdkserver is the benchmark's go-sdk baseline: a plain server
// built only on the official Go MCP SDK (github.com/modelcontextprotocol/go-sdk
// v1.8.0), with the same tools and capabilities as examples/server
// (examples/fixture, the one go-sdk fixture of the repository). It serves MCP 2026-07-28 over Streamable HTTP
// in stateless mode and answers subscriptions/listen (SEP-2575) with the
// SDK's own built-in implementation.
//
//	gosdkserver [-addr 127.0.0.1:8090] [-lifetime 0] [-print-caps] [-quiet]
//
// Once the listener is bound it prints exactly one line
//
//	listening on http://ADDR/mcp
//
// to stdout. With -print-caps it instead prints the capabilities object that
// server/discover advertises (as JSON) and exits.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"runtime"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcplisten/listen/bench/internal/baseline"
	"github.com/mcplisten/listen/examples/fixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "address to listen on")
	lifetime := flag.Duration("lifetime", 0, "exit by itself after this long (0: run until signalled)")
	printCaps := flag.Bool("print-caps", false, "print the server/discover capabilities as JSON and exit")
	quiet := flag.Bool("quiet", true, "suppress the SDK's info logging")
	profile := flag.Bool("pprof", false, "serve expvar at /debug/vars and net/http/pprof at /debug/pprof/")
	flag.Parse()

	logLevel := slog.LevelInfo
	if *quiet {
		logLevel = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))

	server := newServer(logger)

	if *printCaps {
		caps, err := discoverCapabilities(context.Background(), server)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(string(caps))
		return
	}

	handler := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true},
	)
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	if *profile {
		// For the side-by-side benchmark: the same observability as
		// examples/server (goroutine count in expvar, net/http/pprof).
		baseline.Debug(mux, func() any { return map[string]any{"goroutines": runtime.NumGoroutine()} })
	}
	baseline.Main(*addr, *lifetime, mux, nil)
}

// newServer builds the plain go-sdk server: the shared fixture, with the
// SDK's own list-change and resource-update notifications.
func newServer(logger *slog.Logger) *mcp.Server {
	return fixture.New(fixture.Options{Name: "gosdkserver", Version: "1.8.0", Logger: logger})
}

// discoverCapabilities returns, as JSON, exactly the capabilities object
// that server advertises in server/discover, by running server/discover over
// an in-memory transport (go-sdk v1.8.0 has no exported
// Server.Capabilities).
func discoverCapabilities(ctx context.Context, server *mcp.Server) ([]byte, error) {
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "caps-probe", Version: "0"}, nil)
	cs, err := client.Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res := cs.InitializeResult()
	if res.ProtocolVersion != "2026-07-28" {
		return nil, fmt.Errorf("negotiated %s, not 2026-07-28", res.ProtocolVersion)
	}
	return json.Marshal(res.Capabilities)
}
