// This file is generated from examples/hub/main.go (the same program,
// with package-level names prefixed by "example"); TestExampleMatchesCommand
// fails when the two drift apart.

package hub_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/hub"
)

// Example serves three subscriptions from one hub: the acknowledgements,
// which notifications each receives (and which it does not), an overflow on
// a client that stopped reading, and the graceful end of every stream by
// Complete.
func Example() {
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
	h, err := hub.New(hub.Options{MaxBuffer: 2, Hooks: hub.SlogHooks(logger)})
	if err != nil {
		panic(err)
	}

	reg, err := listen.NewExtensionRegistry(exampleTasks{})
	if err != nil {
		panic(err)
	}
	opts := &listen.Options{
		Capabilities: listen.Capabilities{
			"tools":      map[string]any{"listChanged": true},
			"prompts":    map[string]any{"listChanged": true},
			"resources":  map[string]any{"subscribe": true},
			"extensions": map[string]any{tasksID: map[string]any{}},
		},
		Extensions: reg,
		ServerInfo: listen.Implementation{Name: "example-hub", Version: "1.0.0"},
	}

	alpha := exampleServe(ctx, h, opts, "alpha", `{"toolsListChanged":true,"promptsListChanged":true}`, false)
	beta := exampleServe(ctx, h, opts, "beta", `{"resourceSubscriptions":["file:///notes/todo.md"],"taskIds":["t-42"]}`, false)
	slow := exampleServe(ctx, h, opts, "slow", `{"toolsListChanged":true,"resourceSubscriptions":["file:///logs/build.log"]}`, true)
	for _, c := range []*exampleClient{alpha, beta, slow} {
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

	r, err = h.Publish(listen.ExtensionEvent(exampleTasksID, listen.Filter{"taskIds": []any{"t-42"}}, exampleTaskStatus{"t-42", "completed"}))
	show("tasks/status t-42", r, err)
	beta.await(1)

	r, err = h.Publish(listen.ExtensionEvent(exampleTasksID, listen.Filter{"taskIds": []any{"t-7"}}, exampleTaskStatus{"t-7", "working"}))
	show("tasks/status t-7", r, err)

	// slow's queue holds at most 2 events: the third build.log update
	// drops the oldest queued one (build 1).
	for build := 1; build <= 3; build++ {
		ev := listen.ResourceUpdated("file:///logs/build.log").WithMetadata(map[string]any{"build": build})
		r, err = h.Publish(ev)
		show(fmt.Sprintf("resources/updated build.log #%d", build), r, err)
	}

	h.Complete()
	slow.resume()
	for _, c := range []*exampleClient{alpha, beta, slow} {
		reason := c.wait()
		fmt.Printf("\n%s (ended: %s)\n", c.name, listen.Classify(reason))
		for _, m := range c.messages() {
			fmt.Println("  " + m)
		}
	}
	st := h.Stats()
	fmt.Printf("\nstats: subscriptions=%d queued=%d dropped=%d\n", st.Subscriptions, st.Queued, st.Dropped)

	// Output:
	// publish tools/list_changed               matched=2 dropped=0
	// publish resources/updated todo.md        matched=1 dropped=0
	// publish prompts/list_changed             matched=1 dropped=0
	// publish tasks/status t-42                matched=1 dropped=0
	// publish tasks/status t-7                 matched=0 dropped=0
	// publish resources/updated build.log #1   matched=1 dropped=0
	// publish resources/updated build.log #2   matched=1 dropped=0
	// level=WARN msg="subscription hub overflow" dropped=1 queued=2 event_kind=resource_updated policy=drop_oldest
	// publish resources/updated build.log #3   matched=1 dropped=1
	// level=INFO msg="subscription hub complete" subscriptions=3 queued=2
	//
	// alpha (ended: complete)
	//   {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"alpha"},"notifications":{"promptsListChanged":true,"toolsListChanged":true}}}
	//   {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"alpha"}}}
	//   {"jsonrpc":"2.0","method":"notifications/prompts/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"alpha"}}}
	//   {"jsonrpc":"2.0","id":"alpha","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example-hub","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"alpha"},"resultType":"complete"}}
	//
	// beta (ended: complete)
	//   {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"beta"},"notifications":{"resourceSubscriptions":["file:///notes/todo.md"],"taskIds":["t-42"]}}}
	//   {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"beta"},"uri":"file:///notes/todo.md"}}
	//   {"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"beta"},"status":"completed","taskId":"t-42"}}
	//   {"jsonrpc":"2.0","id":"beta","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example-hub","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"beta"},"resultType":"complete"}}
	//
	// slow (ended: complete)
	//   {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"slow"},"notifications":{"resourceSubscriptions":["file:///logs/build.log"],"toolsListChanged":true}}}
	//   {"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"slow"}}}
	//   {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"build":2,"io.modelcontextprotocol/subscriptionId":"slow"},"uri":"file:///logs/build.log"}}
	//   {"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"_meta":{"build":3,"io.modelcontextprotocol/subscriptionId":"slow"},"uri":"file:///logs/build.log"}}
	//   {"jsonrpc":"2.0","id":"slow","result":{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"example-hub","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":"slow"},"resultType":"complete"}}
	//
	// stats: subscriptions=0 queued=0 dropped=1
}

// client is one served subscription and the messages its Sink received.
type exampleClient struct {
	name    string
	written chan struct{} // one token per message written
	gate    chan struct{} // closed to let a stalled client read again
	stall   bool
	done    chan error

	mu   sync.Mutex
	msgs []string
}

func exampleServe(ctx context.Context, h *hub.Hub, opts *listen.Options, id, filter string, stall bool) *exampleClient {
	req, err := listen.ParseListenRequest([]byte(`{"jsonrpc":"2.0","id":"` + id + `","method":"subscriptions/listen","params":{` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + exampleTasksID + `":{}}}},` +
		`"notifications":` + filter + `}}`))
	if err != nil {
		panic(err)
	}
	sub, err := listen.Open(ctx, h, req, opts)
	if err != nil {
		panic(err)
	}
	c := &exampleClient{name: id, written: make(chan struct{}, 64), gate: make(chan struct{}), stall: stall, done: make(chan error, 1)}
	go func() { c.done <- sub.Serve(ctx, listen.Sink{Write: c.write}) }()
	return c
}

func (c *exampleClient) write(msg []byte) error {
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

func (c *exampleClient) await(n int) {
	for range n {
		<-c.written
	}
}

func (c *exampleClient) resume() { close(c.gate) }

// wait returns the reason Serve ended with.
func (c *exampleClient) wait() error { return <-c.done }

func (c *exampleClient) messages() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.msgs
}

const exampleTasksID = "io.modelcontextprotocol/tasks"

type exampleTaskStatus struct{ ID, Status string }

// tasks is a minimal tasks extension: it owns the taskIds filter key and
// shapes its events as notifications/tasks/status.
type exampleTasks struct{}

func (exampleTasks) ID() string                   { return exampleTasksID }
func (exampleTasks) SupportsProtocol(string) bool { return true }

func (exampleTasks) SubscriptionFilter(_ context.Context, _ *listen.Request, requested listen.Filter) (listen.Filter, error) {
	if ids, ok := requested["taskIds"]; ok {
		return listen.Filter{"taskIds": ids}, nil
	}
	return nil, nil
}

func (exampleTasks) ShapeSubscriptionEvent(ev listen.Event, _ listen.Filter) (string, map[string]any, error) {
	st := ev.Payload.(exampleTaskStatus)
	return "notifications/tasks/status", map[string]any{"taskId": st.ID, "status": st.Status}, nil
}
