// Package baseline is the serving part of the main of the benchmark's
// plain servers (floorserver, gosdkserver, mcpgoserver), which is the same
// in all three: the optional net/http/pprof endpoints, the bound
// listener and its one "listening on" line, and the run until a signal or
// the -lifetime, ended by a shutdown with a grace for the requests in
// flight.
package baseline

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// Grace is how long the requests in flight get to finish once a server
// stops (listen streams never finish by themselves, so what is still open
// after it is dropped).
const Grace = 2 * time.Second

// Debug serves net/http/pprof at /debug/pprof/ on mux, where the
// side-by-side benchmark reads goroutines and heap (after a forced GC).
func Debug(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
}

// Main serves h on addr: it binds the listener, prints exactly one line
// "listening on http://ADDR/mcp" to stdout, and serves until SIGINT or
// SIGTERM, or until lifetime has passed if it is positive; then it calls
// stop (if not nil: what the server has to close before net/http's
// shutdown) and shuts the server down (see Serve). It ends the process with
// log.Fatal if binding or serving fails.
func Main(addr string, lifetime time.Duration, h http.Handler, stop func()) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	if lifetime > 0 {
		var cancelLife context.CancelFunc
		ctx, cancelLife = context.WithTimeout(ctx, lifetime)
		defer cancelLife()
	}
	fmt.Printf("listening on http://%s/mcp\n", ln.Addr())
	if err := Serve(ctx, hs, ln, Grace, stop); err != nil {
		log.Fatal(err)
	}
}

// Serve serves hs on ln until ctx ends, then calls stop (if not nil) and
// shuts hs down: ordinary requests get grace to finish, then whatever is
// still open is dropped. It returns once that shutdown has (hs.Serve
// returns as soon as it begins), or, after shutting hs down all the same,
// with the error that ended Serve.
func Serve(ctx context.Context, hs *http.Server, ln net.Listener, grace time.Duration, stop func()) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	shut := make(chan struct{})
	go func() { // ends once hs is shut down; Serve waits for it
		defer close(shut)
		<-ctx.Done()
		if stop != nil {
			stop()
		}
		sctx, cancel := context.WithTimeout(context.Background(), grace)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
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
