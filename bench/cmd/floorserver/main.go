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
	profile := flag.Bool("pprof", false, "serve net/http/pprof at /debug/pprof/")
	flag.Parse()

	e, err := newEngine(engineOptions{Loops: runtime.GOMAXPROCS(0), WriteTimeout: 10 * time.Second, SlowQueue: 64})
	if err != nil {
		log.Fatal(err)
	}
	defer e.Close()
	mux := http.NewServeMux()
	mux.Handle("/mcp", &handler{e: e})
	if *profile {
		baseline.Debug(mux)
	}
	// Streams are the engine's, not net/http's: close them, then the rest.
	baseline.Main(*addr, *lifetime, mux, e.Close)
}
