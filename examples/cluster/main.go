// Command cluster runs three instances of one MCP server in one process,
// joined over NATS by natsbridge: an embedded NATS server on a loopback
// port, and three instances A, B and C, each with its own hub, bridge and
// streamhttp listen handler on its own loopback HTTP server. A small HTTP
// client opens a listen stream on each instance; a change published on one
// instance then shows up on the streams held by every instance. The
// bridges sign their messages with a shared key (cluster.Options.AuthKeys)
// and accept only signed ones. Every change is published on the instance's
// hub, as on a lone server: the bridge joined to the hub carries it to the
// others. It exits by itself, draining each instance: its streams'
// completions are spread over -drain (listen.Options.DrainWindow; 0, the
// default: all at once), as a rolling deploy of one instance would.
//
//	go run ./examples/cluster [-drain 2s]
package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/cluster"
	"github.com/mcplisten/listen/hub"
	"github.com/mcplisten/listen/natsbridge"
	"github.com/mcplisten/listen/spec"
	"github.com/mcplisten/listen/streamhttp"
)

// out is where the program prints; every line is written with one call.
var out io.Writer = os.Stdout

// deadline bounds the whole run.
const deadline = 15 * time.Second

const configURI = "file:///project/config.json"

// instance is one server instance.
type instance struct {
	name   string
	hub    *hub.Hub
	bridge *natsbridge.Bridge
	h      *streamhttp.Handler
	srv    *http.Server
	url    string
}

// arrival is one notification read by a client.
type arrival struct {
	client string
	method string
	uri    string
}

// drainWindow is -drain.
var drainWindow time.Duration

func main() {
	flag.DurationVar(&drainWindow, "drain", 0, "spread each instance's streams' completions over this long when it drains (listen.Options.DrainWindow)")
	flag.Parse()
	log.SetFlags(0)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := run(ctx); err != nil {
		log.Printf("cluster: %v", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
	// The broker: an embedded NATS server on a free loopback port.
	ns, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		return err
	}
	ns.Start()
	defer func() {
		ns.Shutdown()
		ns.WaitForShutdown()
		fmt.Fprintln(out, "nats: server stopped")
	}()
	if !ns.ReadyForConnections(5 * time.Second) {
		return errors.New("NATS server not ready")
	}
	fmt.Fprintf(out, "nats: embedded server on %s\n", ns.ClientURL())

	// The instances' shared key: they sign their messages with it and
	// accept only messages signed with it, so that a NATS client without
	// the key cannot speak for the server. A real deployment reads it
	// from its secret store (the same key on every instance); NATS
	// permissions should restrict who may publish on the subject anyway.
	key := make([]byte, cluster.MinAuthKeyBytes)
	if _, err := rand.Read(key); err != nil {
		return err
	}

	// Three instances of the same MCP server.
	var ins []*instance
	clients := make(chan struct{}, 3)
	running := 0
	defer func() {
		// Drain every instance (each stream gets its completion result and
		// its client ends), then close the bridges.
		for _, in := range ins {
			in.drain()
		}
		for range running {
			<-clients
		}
		for _, in := range ins {
			in.stop()
		}
	}()
	for _, name := range []string{"A", "B", "C"} {
		in, err := start(name, ns.ClientURL(), key)
		if err != nil {
			return err
		}
		ins = append(ins, in)
		fmt.Fprintf(out, "instance %s: listen handler on %s, bridge %s on subject mcp.listen.events\n",
			name, in.url, in.bridge.ID()[:8]) // the default Prefix, "mcp.listen", + ".events"
	}

	// A listen stream on each instance, each with its own filter.
	filters := map[string]string{
		"A": `{"toolsListChanged":true,"resourceSubscriptions":["` + configURI + `"]}`,
		"B": `{"toolsListChanged":true}`,
		"C": `{"toolsListChanged":true,"resourceSubscriptions":["` + configURI + `"]}`,
	}
	arrivals := make(chan arrival, 64)
	for _, in := range ins {
		body, rd, err := openListen(ctx, in.url, "client-"+in.name, filters[in.name])
		if err != nil {
			return fmt.Errorf("listen on %s: %w", in.name, err)
		}
		fmt.Fprintf(out, "client %s: listening on instance %s with %s\n", in.name, in.name, filters[in.name])
		running++
		// Ends when the stream does (drain, in run's deferred function,
		// which then receives from clients).
		go func() {
			defer func() { clients <- struct{}{} }()
			defer body.Close()
			read(rd, "client "+in.name, arrivals)
		}()
	}

	// A change on A reaches the tools listeners of A, B and C.
	r := ins[0].hub.ToolsListChanged()
	fmt.Fprintf(out, "instance A: publish notifications/tools/list_changed (local listeners: %d)\n", r.Matched)
	if err := expect(ctx, arrivals, 3); err != nil {
		return err
	}

	// A resource update on B reaches the clients watching the resource, on
	// A and C; B's own client did not ask for it.
	r, err = ins[1].hub.ResourceUpdated(configURI)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "instance B: publish notifications/resources/updated %s (local listeners: %d)\n", configURI, r.Matched)
	if err := expect(ctx, arrivals, 2); err != nil {
		return err
	}

	for _, in := range ins {
		st := in.bridge.Stats()
		fmt.Fprintf(out, "instance %s: published %d, received %d, dropped %d\n",
			in.name, st.Published, st.Received, st.Dropped.Total())
	}
	return nil
}

// start runs one instance: a hub, a bridge on its own NATS connection
// (signing with key), and the listen handler on a loopback HTTP server.
func start(name, natsURL string, key []byte) (*instance, error) {
	h, err := hub.New(hub.Options{})
	if err != nil {
		return nil, err
	}
	br, err := natsbridge.Connect(natsURL, h, natsbridge.Options{Options: cluster.Options{AuthKeys: [][]byte{key}}},
		nats.Name("cluster-example-"+name), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		return nil, err
	}
	lh, err := streamhttp.New(listen.NewServer(h, listen.Options{
		Capabilities: listen.Capabilities{
			ToolsListChanged:   true,
			ResourcesSubscribe: true,
		},
		ServerInfo:  listen.Implementation{Name: "cluster-example-" + name, Version: "1.0.0"},
		DrainWindow: drainWindow,
	}), streamhttp.Options{})
	if err != nil {
		br.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		br.Close()
		return nil, err
	}
	srv := &http.Server{Handler: lh, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }() // ends on drain's srv.Shutdown, which waits for it
	return &instance{name: name, hub: h, bridge: br, h: lh, srv: srv, url: "http://" + ln.Addr().String() + "/mcp"}, nil
}

// drain ends the listen streams (each gets its completion result, spread
// over -drain) and stops the HTTP server.
func (in *instance) drain() {
	// The window plus a margin: the library keeps 10% of the time it is
	// given for the last writes, and would shorten the window otherwise.
	ctx, cancel := context.WithTimeout(context.Background(), drainWindow+max(5*time.Second, drainWindow/8))
	defer cancel()
	_ = in.h.Shutdown(ctx)
	_ = in.srv.Shutdown(ctx)
}

// stop closes the bridge and its NATS connection.
func (in *instance) stop() {
	_ = in.bridge.Close()
	fmt.Fprintf(out, "instance %s: bridge closed\n", in.name)
}

// openListen posts a subscriptions/listen request and returns the SSE body
// once the acknowledgement was read.
func openListen(ctx context.Context, url, id, filter string) (io.Closer, *bufio.Reader, error) {
	body := `{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{` +
		`"notifications":` + filter + `,"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{},` +
		`"io.modelcontextprotocol/clientInfo":{"name":"cluster-example-client","version":"1.0.0"}}}}`
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", spec.ProtocolVersion)
	req.Header.Set("Mcp-Method", spec.MethodListen)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("status %s", resp.Status)
	}
	rd := bufio.NewReader(resp.Body)
	ack, err := next(rd)
	if err != nil || ack.Method != spec.MethodAcknowledged {
		resp.Body.Close()
		return nil, nil, fmt.Errorf("no acknowledgement (%v)", err)
	}
	return resp.Body, rd, nil
}

// message is the part of a JSON-RPC message the client prints.
type message struct {
	Method string `json:"method"`
	Params struct {
		URI string `json:"uri"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
}

// next reads the next SSE event's JSON-RPC message.
func next(rd *bufio.Reader) (message, error) {
	var m message
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return m, err
		}
		if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
			return m, json.Unmarshal([]byte(data), &m)
		}
	}
}

// read prints every notification of a stream as it arrives, until the
// stream ends (its completion result, at shutdown) or the client stops.
func read(rd *bufio.Reader, client string, arrivals chan<- arrival) {
	for {
		m, err := next(rd)
		if err != nil {
			return
		}
		if m.Result != nil {
			fmt.Fprintf(out, "%s: stream completed\n", client)
			return
		}
		line := fmt.Sprintf("%s <- %s", client, m.Method)
		if m.Params.URI != "" {
			line += " " + m.Params.URI
		}
		fmt.Fprintln(out, line)
		arrivals <- arrival{client: client, method: m.Method, uri: m.Params.URI}
	}
}

// expect waits for n notifications.
func expect(ctx context.Context, arrivals <-chan arrival, n int) error {
	for range n {
		select {
		case <-arrivals:
		case <-ctx.Done():
			return fmt.Errorf("waiting for notifications: %w", ctx.Err())
		}
	}
	return nil
}
