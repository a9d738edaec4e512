// Command hub shows one hub.Hub feeding several subscriptions/listen
// streams: each subscription is opened with listen.Open on the hub and
// served with Serve into a Sink that records the messages. The output shows
// the acknowledgements, which notifications each subscription receives (and
// which it does not), an overflow on a client that stopped reading, and the
// graceful end of every stream by Shutdown.
//
// Run it with: go run ./examples/hub
//
// The same program is the Example of package hub (hub/example_test.go), so
// its output is checked by go test.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Overflows log at Warn and completions at Info (without timestamps,
	// so that the output is deterministic).
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	completed := make(chan struct{})
	h, err := hub.New(hub.Options{MaxBuffer: 2, Logger: logger,
		OnShutdown: func(hub.ShutdownInfo) { close(completed) }}) // after the logger's line
	if err != nil {
		panic(err)
	}

	reg, err := listen.NewExtensionRegistry(tasks{})
	if err != nil {
		panic(err)
	}
	opts := &listen.Options{
		Capabilities: listen.Capabilities{
			ToolsListChanged:   true,
			PromptsListChanged: true,
			ResourcesSubscribe: true,
			Extensions:         map[string]any{tasksID: map[string]any{}},
		},
		Extensions: reg,
		ServerInfo: listen.Implementation{Name: "example-hub", Version: "1.0.0"},
	}

	alpha := serve(ctx, h, opts, "alpha", `{"toolsListChanged":true,"promptsListChanged":true}`, false)
	beta := serve(ctx, h, opts, "beta", `{"resourceSubscriptions":["file:///notes/todo.md"],"taskIds":["t-42"]}`, false)
	slow := serve(ctx, h, opts, "slow", `{"toolsListChanged":true,"resourceSubscriptions":["file:///logs/build.log"]}`, true)
	for _, c := range []*client{alpha, beta, slow} {
		c.await(1) // the acknowledgement
	}

	show := func(what string, r hub.Report, err error) {
		if err != nil {
			panic(err)
		}
		fmt.Printf("publish %-32s matched=%d dropped=%d\n", what, r.Matched, r.Dropped)
	}
	show("tools/list_changed", h.ToolsListChanged(), nil)
	alpha.await(1)
	slow.await(1) // slow's client takes this one, then stops reading

	r, err := h.ResourceUpdated("file:///notes/todo.md")
	show("resources/updated todo.md", r, err)
	beta.await(1)

	show("prompts/list_changed", h.PromptsListChanged(), nil)
	alpha.await(1)

	r, err = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t-42"}}, taskStatus{"t-42", "completed"}))
	show("tasks/status t-42", r, err)
	beta.await(1)

	r, err = h.Publish(listen.ExtensionEvent(tasksID, listen.Filter{"taskIds": []any{"t-7"}}, taskStatus{"t-7", "working"}))
	show("tasks/status t-7", r, err)

	// slow's listener holds at most 2 events (MaxBuffer) while its client
	// does not read: build 1 handed over to its stream, build 2 queued. The
	// third build.log update drops the oldest (build 1).
	for build := 1; build <= 3; build++ {
		ev := listen.ResourceUpdated("file:///logs/build.log").WithMetadata(map[string]any{"build": build})
		r, err = h.Publish(ev)
		show(fmt.Sprintf("resources/updated build.log #%d", build), r, err)
	}

	// End every stream gracefully: each client gets what is queued for it,
	// then its completion. Shutdown returns once every stream is closed;
	// slow's client reads again once the hub has completed its listeners
	// (so the completion's log line shows slow's queued event; the other
	// one it holds is handed over, not queued).
	shut := make(chan error, 1)
	go func() { shut <- h.Shutdown(context.Background()) }()
	<-completed
	slow.resume()
	if err := <-shut; err != nil {
		panic(err)
	}
	for _, c := range []*client{alpha, beta, slow} {
		reason := c.wait()
		fmt.Printf("\n%s (ended: %s)\n", c.name, listen.Classify(reason))
		for _, m := range c.messages() {
			fmt.Println("  " + m)
		}
	}
	st := h.Stats()
	fmt.Printf("\nstats: subscriptions=%d queued=%d dropped=%d\n", st.Subscriptions, st.Queued, st.Dropped)
}

// client is one served subscription and the messages its Sink received.
type client struct {
	name    string
	written chan struct{} // one token per message written
	gate    chan struct{} // closed to let a stalled client read again
	stall   bool
	done    chan error

	mu   sync.Mutex
	msgs []string
}

func serve(ctx context.Context, h *hub.Hub, opts *listen.Options, id, filter string, stall bool) *client {
	req, err := listen.ParseRequest([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + tasksID + `":{}}}},` +
		`"notifications":` + filter + `}}`))
	if err != nil {
		panic(err)
	}
	sub, err := listen.Open(ctx, h, req, opts)
	if err != nil {
		panic(err)
	}
	c := &client{name: id, written: make(chan struct{}, 64), gate: make(chan struct{}), stall: stall, done: make(chan error, 1)}
	// Ends when the subscription does (here, at the hub's Shutdown); wait
	// receives what it returned.
	go func() { c.done <- sub.Serve(ctx, listen.Sink{Write: c.write}) }()
	return c
}

func (c *client) write(msg []byte) error {
	c.mu.Lock()
	c.msgs = append(c.msgs, string(msg)) // Serve reuses msg: keep a copy
	n := len(c.msgs)
	c.mu.Unlock()
	c.written <- struct{}{}
	if c.stall && n == 2 {
		<-c.gate // the client stops reading after its first notification
	}
	return nil
}

func (c *client) await(n int) {
	for range n {
		<-c.written
	}
}

func (c *client) resume() { close(c.gate) }

// wait returns the reason Serve ended with.
func (c *client) wait() error { return <-c.done }

func (c *client) messages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.msgs
}

const tasksID = "io.modelcontextprotocol/tasks"

type taskStatus struct{ ID, Status string }

// tasks is a minimal tasks extension: it owns the taskIds filter key and
// shapes its events as notifications/tasks/status.
type tasks struct{}

func (tasks) ID() string                   { return tasksID }
func (tasks) SupportsProtocol(string) bool { return true }

func (tasks) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	if ids, ok := requested["taskIds"]; ok {
		return listen.Filter{"taskIds": ids}, nil
	}
	return nil, nil
}

func (tasks) ShapeSubscriptionEvent(ev listen.Event, _ listen.Filter, _ listen.Settings) (string, map[string]any, error) {
	st := ev.Payload.(taskStatus)
	return "notifications/tasks/status", map[string]any{"taskId": st.ID, "status": st.Status}, nil
}
