// Command mcpgoserver is the benchmark's mcp-go baseline: a plain server
// built only on mark3labs/mcp-go v1.2.1, with the same tools and
// capabilities as examples/mcpgo (its fixture package). It serves MCP over
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
	"context"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/server"

	"github.com/mcplisten/listen/examples/mcpgo/fixture"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "address to listen on")
	lifetime := flag.Duration("lifetime", 0, "exit by itself after this long (0: run until signalled)")
	_ = flag.Bool("quiet", true, "accepted for the benchmark harness (mcp-go logs warnings only here)")
	profile := flag.Bool("pprof", false, "serve expvar at /debug/vars and net/http/pprof at /debug/pprof/")
	flag.Parse()

	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(fixture.New("mcpgoserver", "1.2.1")))
	if *profile {
		// The same observability as examples/mcpgo: goroutine count in
		// expvar, net/http/pprof.
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
	served := make(chan error, 1)
	// Ends when hs.Shutdown (or Close) below closes the listener.
	go func() { served <- hs.Serve(ln) }()
	select {
	case <-ctx.Done():
	case err := <-served:
		log.Fatal(err)
	}
	// mcp-go's listens never end by themselves: ordinary requests get a
	// grace to finish, then whatever is still open is dropped.
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = hs.Close()
	}
	<-served
}
