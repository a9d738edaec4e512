//go:build linux

package main

import (
	"flag"
	"log"
	"net/http"
	"runtime"
	"time"

	"github.com/mcplisten/listen/bench/internal/baseline"
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
		baseline.Debug(mux, func() any {
			return map[string]any{
				"goroutines": runtime.NumGoroutine(),
				"http":       map[string]any{"Active": e.open.Load(), "Slow": e.slowN.Load()},
			}
		})
	}
	// Streams are the engine's, not net/http's: close them, then the rest.
	baseline.Main(*addr, *lifetime, mux, e.Close)
}
