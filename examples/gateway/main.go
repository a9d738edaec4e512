// Command gateway is one MCP endpoint in front of several upstream MCP
// servers, for subscriptions/listen: however many clients listen to it, it
// keeps per upstream one listen for the list changes and one for the
// resource URIs its clients watch, and it tells its clients of what the
// upstreams send, each upstream's URIs under its own scheme prefix
// (name+file:///README.md is upstream name's file:///README.md). Small
// enough to copy.
//
//	go run ./examples/gateway -http notes=http://127.0.0.1:8081/mcp -stdio demo='/path/to/stdio-server -flag'
//
// Each -http name=URL is a Streamable HTTP upstream, each -stdio
// name=command a stdio upstream started by the gateway (the command line
// is split at spaces, without quoting) and started again if it exits. When
// an upstream's listen is lost and comes back, every client listen that
// could have missed something from it is told: a list_changed of each kind
// it listens to, a resources/updated of each of its URIs.
//
// The gateway serves subscriptions/listen, and server/discover with the
// capabilities its upstreams can send (ttlMs 0: they follow the upstreams),
// so that an SDK client (the go-sdk's, say) discovers, then listens; a
// notification gets 202. Every other request (tools, prompts,
// resources/read) is answered 404 with -32601 "Method not found": a gateway
// that also forwards them does so in serveOther. SIGINT or SIGTERM drains:
// /readyz answers 503, new listens get 503 with Retry-After, and every open
// listen gets its completion result, spread over -drain
// (listen.Options.DrainWindow; 0, the default: all at once) so that the
// clients re-listen on the other instances at a steady rate.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/jsonrpc"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
	"github.com/mcplisten/listen/upstream"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on (a loopback one: see streamhttp.Options.AllowedHosts otherwise)")
	var ups upstreams
	flag.Func("http", "a Streamable HTTP upstream, name=URL (repeatable)", ups.http)
	flag.Func("stdio", "a stdio upstream, name=command line (repeatable)", ups.stdio)
	drain := flag.Duration("drain", 0, "on SIGINT or SIGTERM, spread the open listens' completions over this long (listen.Options.DrainWindow; 0: all at once)")
	flag.Parse()
	if len(ups.list) == 0 {
		log.Fatal("no upstream: give -http name=URL or -stdio name=command")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	g, err := newGateway(ups.list, *drain)
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", g.Handler())
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if g.listens.Server().Stats().Draining { // route new clients elsewhere
			http.Error(w, "draining", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ready\n"))
	})
	srv := &http.Server{
		Addr:              *addr,
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second, // the body is bounded by the handler
		MaxHeaderBytes:    16 << 10,
		// No ReadTimeout or WriteTimeout: they would cut long-lived streams.
	}
	ln, err := net.Listen("tcp", *addr) // bound before it says it serves
	if err != nil {
		log.Fatal(err)
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Serve(ln) }() // ends on srv.Shutdown, which waits for it
	log.Printf("serving MCP on http://%s/mcp in front of %d upstreams", ln.Addr(), len(ups.list))
	select {
	case <-ctx.Done():
	case err := <-stopped:
		log.Fatal(err)
	}

	// The window plus a margin: the library keeps 10% of the time it is
	// given for the last writes, and would shorten the window otherwise.
	sctx, cancel := context.WithTimeout(context.Background(), *drain+max(5*time.Second, *drain/8))
	defer cancel()
	err = g.Shutdown(sctx)
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		_ = srv.Close()
	}
	if err != nil {
		log.Printf("not every listen ended in time: %v", err)
	}
}

// gateway is the hub the clients listen to, fed by the upstreams.
type gateway struct {
	feed    *upstream.Feed
	hub     *hub.Hub
	listens *streamhttp.Handler
	stdios  []*upstream.Stdio
}

// newGateway wires the upstreams' feed into a hub and serves it; its
// Shutdown spreads the listens' completions over drain.
func newGateway(ups []upstream.Upstream, drain time.Duration) (*gateway, error) {
	feed, err := upstream.NewFeed(upstream.FeedOptions{
		Upstreams: ups,
		OnLoss: func(name string, resources bool, err error) {
			log.Printf("upstream %s: listen lost (resources=%v): %v", name, resources, err)
		},
		OnAck: func(name string, resources bool, a upstream.Ack) {
			if a.Gap != nil {
				log.Printf("upstream %s: listening again (resources=%v) after %d attempts; clients hinted", name, resources, a.Gap.Attempts)
			}
		},
	})
	if err != nil {
		return nil, err
	}
	// The hub tells the feed which URIs its listens watch, counted: the
	// first listen of a URI watches it upstream, the last one leaving
	// releases it.
	h, err := hub.New(hub.Options{OnAttach: feed.Attach, OnDetach: feed.Detach})
	if err != nil {
		return nil, err
	}
	if err := feed.Start(h); err != nil {
		return nil, err
	}
	listens, err := streamhttp.New(listen.NewServer(h, listen.Options{
		CapabilitiesFor: feed.Capabilities, // what the upstreams can send, no more
		ServerInfo:      serverInfo,
		DrainWindow:     drain,
	}), streamhttp.Options{})
	if err != nil {
		feed.Close()
		return nil, err
	}
	g := &gateway{feed: feed, hub: h, listens: listens}
	for _, u := range ups {
		if s, ok := u.Transport.(*upstream.Stdio); ok {
			g.stdios = append(g.stdios, s)
		}
	}
	return g, nil
}

// Handler serves the gateway's endpoint: listens to the hub, every other
// request to serveOther (Front checks their Origin and bounds their body).
func (g *gateway) Handler() http.Handler {
	return streamhttp.Front(g.listens, http.HandlerFunc(g.serveOther))
}

// serveOther answers server/discover, takes notifications, and refuses
// every other request.
func (g *gateway) serveOther(w http.ResponseWriter, r *http.Request) {
	m, ok := streamhttp.FrontMessage(r)
	if ok && !m.HasID { // a notification (notifications/cancelled, ...)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if !ok || m.Method != "server/discover" {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write(jsonrpc.ErrorResponse(m.ID, jsonrpc.NewError(jsonrpc.CodeMethodNotFound, "Method not found")))
		return
	}
	c, _ := g.feed.Capabilities(r.Context(), nil)
	caps := map[string]any{}
	if c.ToolsListChanged {
		caps["tools"] = map[string]any{"listChanged": true}
	}
	if c.PromptsListChanged {
		caps["prompts"] = map[string]any{"listChanged": true}
	}
	if c.ResourcesListChanged || c.ResourcesSubscribe {
		caps["resources"] = map[string]any{"listChanged": c.ResourcesListChanged, "subscribe": c.ResourcesSubscribe}
	}
	_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
		"resultType":        "complete",
		"supportedVersions": []string{spec.ProtocolVersion},
		"capabilities":      caps,
		"cacheScope":        "public",
		"ttlMs":             0,
		"_meta":             map[string]any{spec.MetaServerInfo: serverInfo},
	}})
}

// serverInfo names the gateway.
var serverInfo = listen.Implementation{Name: "gateway", Version: "1.0.0"}

// Shutdown ends every client listen with its completion result, then the
// upstream listens, then the stdio upstreams.
func (g *gateway) Shutdown(ctx context.Context) error {
	err := g.listens.Shutdown(ctx)
	g.feed.Close()
	for _, s := range g.stdios {
		s.Close()
	}
	return err
}

// upstreams collects the -http and -stdio flags.
type upstreams struct{ list []upstream.Upstream }

func (u *upstreams) add(v string, transport func(string) (upstream.Transport, error)) error {
	name, target, ok := strings.Cut(v, "=")
	if !ok || name == "" || target == "" {
		return fmt.Errorf("want name=target, got %q", v)
	}
	t, err := transport(target)
	if err != nil {
		return err
	}
	u.list = append(u.list, upstream.Upstream{Name: name, Transport: t, Map: upstream.SchemePrefix(name)})
	return nil
}

func (u *upstreams) http(v string) error {
	return u.add(v, func(url string) (upstream.Transport, error) { return &upstream.HTTP{URL: url}, nil })
}

func (u *upstreams) stdio(v string) error {
	return u.add(v, func(line string) (upstream.Transport, error) {
		args := strings.Fields(line)
		if len(args) == 0 {
			return nil, errors.New("an empty command")
		}
		return &upstream.Stdio{Dial: upstream.Command(func() *exec.Cmd {
			cmd := exec.Command(args[0], args[1:]...)
			cmd.Stderr = os.Stderr // the upstream's logs
			return cmd
		})}, nil
	})
}
