// Command quickstart serves subscriptions/listen over Streamable HTTP from a
// hub, and tells every listening client that the tool list changed every
// ten seconds. It is the README's quick start, verbatim.
package main

import (
	"log"
	"net/http"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/streamhttp"
)

func main() {
	changes, err := hub.New(hub.Options{}) // 100 events queued per listener, drop-oldest
	if err != nil {
		log.Fatal(err)
	}
	listens := streamhttp.New(changes, &streamhttp.Options{
		Listen: listen.Options{
			// Exactly what your server advertises in server/discover.
			Capabilities: listen.Capabilities{
				ToolsListChanged:   true,
				ResourcesSubscribe: true,
			},
			ServerInfo: listen.Implementation{Name: "quickstart", Version: "1.0.0"},
		},
	})

	go func() {
		for range time.Tick(10 * time.Second) {
			r := changes.ToolsListChanged() // every stream that asked for toolsListChanged
			log.Printf("tools changed: %d listeners", r.Matched)
		}
	}()

	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: listens}
	srv.RegisterOnShutdown(listens.Drain) // open streams end with their completion result
	log.Fatal(srv.ListenAndServe())
}
