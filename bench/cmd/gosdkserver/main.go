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
	"errors"
	"expvar"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
		expvar.Publish("listen", expvar.Func(func() any { return map[string]any{"goroutines": runtime.NumGoroutine()} }))
		mux.Handle("/debug/vars", expvar.Handler())
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *lifetime > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *lifetime)
		defer cancel()
	}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	if err := serve(ctx, hs, ln, 2*time.Second); err != nil {
		log.Fatal(err)
	}
}

// serve serves hs on ln until ctx ends, then shuts hs down: listen streams
// never finish by themselves, so ordinary requests get grace to finish,
// then whatever is still open is dropped. It returns once that shutdown
// has (hs.Serve returns as soon as it begins), or, after shutting hs down
// all the same, with the error that ended Serve.
func serve(ctx context.Context, hs *http.Server, ln net.Listener, grace time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	shut := make(chan struct{})
	go func() { // ends once hs is shut down; serve waits for it
		defer close(shut)
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			hs.Close()
		}
	}()

	err := hs.Serve(ln)
	cancel() // if Serve failed by itself
	<-shut
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
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
