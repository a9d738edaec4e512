package upstream_test

import (
	"context"
	"fmt"
	"log"
	"net/http/httptest"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
	"github.com/mcplisten/listen/upstream"
)

// A gateway in front of one upstream: a change in the upstream reaches
// the gateway's client, its URI in the upstream's namespace.
func ExampleFeed() {
	// The upstream: any MCP 2026-07-28 server; here this library's.
	up, _ := hub.New(hub.Options{})
	upHandler, _ := streamhttp.New(listen.NewServer(up, listen.Options{
		Capabilities: listen.Capabilities{ToolsListChanged: true, ResourcesSubscribe: true},
	}), streamhttp.Options{})
	upServer := httptest.NewServer(upHandler)
	defer upServer.Close()

	// The gateway.
	acked := make(chan bool, 10)
	feed, err := upstream.NewFeed(upstream.FeedOptions{
		Upstreams: []upstream.Upstream{{Name: "files", Transport: &upstream.HTTP{URL: upServer.URL}, Map: upstream.SchemePrefix("files")}},
		OnAck:     func(_ string, resources bool, _ upstream.Ack) { acked <- resources },
	})
	if err != nil {
		log.Fatal(err)
	}
	h, _ := hub.New(hub.Options{OnAttach: feed.Attach, OnDetach: feed.Detach})
	if err := feed.Start(h); err != nil {
		log.Fatal(err)
	}
	defer feed.Close()
	listens, _ := streamhttp.New(listen.NewServer(h, listen.Options{CapabilitiesFor: feed.Capabilities}), streamhttp.Options{})
	gw := httptest.NewServer(listens)
	defer gw.Close()
	<-acked // the upstream's list listen: its capabilities are known

	// A client of the gateway.
	client, err := upstream.Open(context.Background(), &upstream.HTTP{URL: gw.URL},
		listen.Filter{spec.KeyResourceSubscriptions: []any{"files+file:///a.txt"}}, upstream.OpenOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer client.Close()
	for !<-acked { // the upstream's resource listen, for file:///a.txt
	}

	_, _ = up.ResourceUpdated("file:///a.txt")
	n, _ := client.Next()
	fmt.Println(n.Method, n.URI)

	ctx := context.Background()
	_ = listens.Shutdown(ctx)
	_ = upHandler.Shutdown(ctx)
	// Output: notifications/resources/updated files+file:///a.txt
}
