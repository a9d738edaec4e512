//go:build linux

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
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "address to listen on (host:port)")
	lifetime := flag.Duration("lifetime", 0, "exit by itself after this long (0: run until signalled)")
	_ = flag.Bool("quiet", true, "accepted for the benchmark's sake; the server logs only errors anyway")
	profile := flag.Bool("pprof", false, "serve expvar at /debug/vars and net/http/pprof at /debug/pprof/")
	writeTimeout := flag.Duration("write-timeout", 10*time.Second, "deadline of each slow-path write")
	slowQueue := flag.Int("slow-queue", 64, "notifications queued for one slow stream before it is closed")
	loops := flag.Int("loops", runtime.GOMAXPROCS(0), "writer loops")
	sndbuf := flag.Int("sndbuf", 0, "SO_SNDBUF of each stream socket (0: the kernel's default)")
	flag.Parse()

	e, err := newEngine(engineOptions{Loops: *loops, WriteTimeout: *writeTimeout, SlowQueue: *slowQueue, SendBuffer: *sndbuf})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()

	mux := http.NewServeMux()
	mux.Handle("/mcp", &handler{e: e})
	if *profile {
		expvar.Publish("listen", expvar.Func(func() any {
			return map[string]any{
				"goroutines": runtime.NumGoroutine(),
				"http":       map[string]any{"Active": e.open.Load(), "Slow": e.slowN.Load()},
			}
		}))
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
	served := make(chan error, 1)
	// Ends when hs.Shutdown (or Close) below closes the listener; both wait
	// for Serve to return.
	go func() { served <- hs.Serve(ln) }()
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())

	select {
	case <-ctx.Done():
	case err := <-served:
		log.Fatal(err)
	}
	// Streams are the engine's, not net/http's: close them, then the rest.
	e.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = hs.Close()
	}
}
