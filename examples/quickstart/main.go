// Command quickstart serves subscriptions/listen over Streamable HTTP from a
// hub, and tells every listening client that the tool list changed every
// ten seconds. On SIGINT or SIGTERM every open stream gets its completion
// result, spread over -drain. It is the README's quick start, verbatim.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	drain := flag.Duration("drain", 0, "on SIGTERM, spread the streams' completions over this long (0: all at once)")
	flag.Parse()
	changes, err := hub.New(hub.Options{}) // 100 events queued per listener, drop-oldest
	if err != nil {
		log.Fatal(err)
	}
	listens, err := streamhttp.New(listen.NewServer(changes, listen.Options{
		// Exactly what your server advertises in server/discover.
		Capabilities: listen.Capabilities{
			ToolsListChanged:   true,
			ResourcesSubscribe: true,
		},
		ServerInfo:  listen.Implementation{Name: "quickstart", Version: "1.0.0"},
		DrainWindow: *drain, // so that the clients re-listen on the other replicas at a steady rate
	}), streamhttp.Options{})
	if err != nil {
		log.Fatal(err)
	}

	go func() { // for the life of the process
		for range time.Tick(10 * time.Second) {
			r := changes.ToolsListChanged() // every stream that asked for toolsListChanged
			log.Printf("tools changed: %d listeners", r.Matched)
		}
	}()

	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: listens}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.ListenAndServe() }() // ends on srv.Shutdown, which waits for it

	signalled, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	select {
	case err := <-stopped:
		log.Fatal(err)
	case <-signalled.Done():
	}
	ctx, cancel := context.WithTimeout(context.Background(), *drain+15*time.Second)
	defer cancel()
	if err := shutdown(ctx, srv, listens); err != nil {
		log.Print(err)
	}
}

// shutdown completes every open stream, then stops srv: http.Server.Shutdown
// does not wait for them (nor track the connections the handler took over).
func shutdown(ctx context.Context, srv *http.Server, listens *streamhttp.Handler) error {
	err := listens.Shutdown(ctx) // new listens get 503 from now on
	return errors.Join(err, srv.Shutdown(ctx))
}
