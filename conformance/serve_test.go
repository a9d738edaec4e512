package conformance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/mcplisten/listen"
	"github.com/mcplisten/listen/spec"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// collector is a Sink that keeps a copy of every message written.
type collector struct {
	mu   sync.Mutex
	msgs [][]byte
	// after, if set, runs after each write with the number of messages
	// written so far (on Serve's goroutine).
	after func(n int)
}

func (c *collector) sink() listen.Sink {
	return listen.Sink{Write: func(msg []byte) error {
		c.mu.Lock()
		c.msgs = append(c.msgs, slices.Clone(msg)) // Serve reuses msg
		n := len(c.msgs)
		c.mu.Unlock()
		if c.after != nil {
			c.after(n)
		}
		return nil
	}}
}

func (c *collector) messages() [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.msgs)
}

// TestServeStreamConforms is the end-to-end conformance test: it drives
// whole streams through (*listen.Subscription).Serve, validates every
// message collected by the Sink against the schema, and checks the stream
// rules (ack first, then only acknowledged notifications tagged with the
// subscription id, then the terminal message).
func TestServeStreamConforms(t *testing.T) {
	const (
		ack     = spec.MethodAcknowledged
		tools   = spec.MethodToolsListChanged
		prompts = spec.MethodPromptsListChanged
		res     = spec.MethodResourcesListChanged
		updated = spec.MethodResourceUpdated
	)
	forged := map[string]any{spec.MetaSubscriptionID: "forged", "com.example/trace": "t-1"}
	tests := []struct {
		name   string
		id     string
		caps   string
		client string
		filter string
		info   listen.Implementation
		events []listen.Event
		end    error // what Next returns after the events (nil: ErrClosed)
		// shutdownAfter, when positive, cancels Serve's context with
		// ErrShutdown once that many messages were written; the source
		// then blocks instead of ending.
		shutdownAfter int
		wantEnd       int
		wantMethods   []string // notifications between the ack and the end
		wantReason    string   // listen.Classify of Serve's result
	}{
		{
			name: "string id, every core type and an extension, graceful end",
			id:   `"listen-1"`, caps: serverCaps, client: clientTasks, info: serverInfo,
			filter: `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true,` +
				`"resourceSubscriptions":["` + watchedURI + `"],"taskIds":["task-1"]}`,
			events: []listen.Event{
				listen.ToolsListChanged(),
				listen.PromptsListChanged().WithMetadata(forged),
				listen.ResourcesListChanged().WithParams(map[string]any{"_meta": forged, "com.example/n": 1}),
				listen.ResourceUpdated("file:///not/subscribed"), // dropped
				listen.ResourceUpdated(watchedURI).WithMetadata(forged),
				taskEvent("task-9", "working"), // dropped: not listed
				taskEvent("task-1", "working"),
				taskEvent("task-1", "completed").WithMetadata(forged),
			},
			wantEnd:     endCompletion,
			wantMethods: []string{tools, prompts, res, updated, methodTasks, methodTasks},
			wantReason:  "complete",
		},
		{
			name: "integer id, narrowed by capabilities, no server info",
			id:   `42`, caps: serverCapsNoPrompts, client: clientPlain,
			filter: allCore,
			events: []listen.Event{
				listen.PromptsListChanged(),        // dropped: not acknowledged
				listen.ResourceUpdated(watchedURI), // dropped: no resources.subscribe
				listen.ToolsListChanged(),
				listen.ResourcesListChanged(),
			},
			wantEnd:     endCompletion,
			wantMethods: []string{tools, res},
			wantReason:  "complete",
		},
		{
			name: "empty filter",
			id:   `"listen-empty"`, caps: serverCaps, client: clientPlain, info: serverInfo,
			filter:     `{}`,
			events:     []listen.Event{listen.ToolsListChanged(), taskEvent("task-1", "working")},
			wantEnd:    endCompletion,
			wantReason: "complete",
		},
		{
			name: "source failure",
			id:   `"listen-2"`, caps: serverCaps, client: clientPlain, info: serverInfo,
			filter:      allCore,
			events:      []listen.Event{listen.ToolsListChanged()},
			end:         errors.New("change feed lost"),
			wantEnd:     endFailure,
			wantMethods: []string{tools},
			wantReason:  "error",
		},
		{
			name: "invalid event, integer id",
			id:   `3`, caps: serverCaps, client: clientPlain, info: serverInfo,
			filter:      allCore,
			events:      []listen.Event{listen.ResourcesListChanged(), listen.ResourceUpdated("relative/path")},
			wantEnd:     endFailure,
			wantMethods: []string{res},
			wantReason:  "error",
		},
		{
			name: "server shutdown",
			id:   `"listen-3"`, caps: serverCaps, client: clientTasks, info: serverInfo,
			filter:        `{"toolsListChanged":true,"taskIds":["task-1"]}`,
			events:        []listen.Event{listen.ToolsListChanged(), taskEvent("task-1", "working")},
			shutdownAfter: 3, // ack and two notifications
			wantEnd:       endCompletion,
			wantMethods:   []string{tools, methodTasks},
			wantReason:    "shutdown",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			events := make(chan listen.Event, len(tt.events))
			for _, ev := range tt.events {
				events <- ev
			}
			if tt.shutdownAfter == 0 {
				close(events)
			}
			src := &testSource{events: events, end: tt.end}
			req := listenRequest(tt.id, tt.filter, tt.client)
			sub := open(t, req, serverOptions(t, tt.caps, tt.info), src.source())

			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			c := &collector{}
			if tt.shutdownAfter > 0 {
				c.after = func(n int) {
					if n == tt.shutdownAfter {
						cancel(listen.ErrShutdown)
					}
				}
			}
			reason := sub.Serve(ctx, c.sink())

			assert.Equal(t, tt.wantReason, listen.Classify(reason), "Serve returned %v", reason)
			if tt.shutdownAfter > 0 {
				assert.ErrorIs(t, reason, listen.ErrShutdown)
			}
			assert.Equal(t, reason, src.opened().closeReason(), "the stream is closed with Serve's reason")

			msgs := c.messages()
			require.NotEmpty(t, msgs)
			for _, msg := range msgs {
				conformsMessage(t, msg)
			}
			require.NoError(t, checkStream(msgs, []byte(tt.id), requestedFilter(t, req), tt.wantEnd))

			require.GreaterOrEqual(t, len(msgs), 2)
			var got []string
			for _, msg := range msgs[1 : len(msgs)-1] {
				m, _ := member(msg, "method")
				got = append(got, string(m[1:len(m)-1]))
			}
			assert.Equal(t, tt.wantMethods, got, "notifications written")
			first, _ := member(msgs[0], "method")
			assert.Equal(t, `"`+ack+`"`, string(first))
			if tt.wantEnd == endCompletion {
				_, err := member(msgs[len(msgs)-1], "result", "_meta", spec.MetaServerInfo)
				assert.Equal(t, tt.info.Name != "", err == nil, "server info on the completion")
			}
		})
	}
}
